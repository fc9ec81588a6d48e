package api_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// fuzzRouter is the real router over the in-memory store with small limits,
// so that fuzz inputs exercise the limits too. Its table work bound is a
// twentieth of the default (fuzzTableWork): at the default an admitted
// input could take 5-6 s (one row at frequency 4,400, eps 0.01, delta
// 1e-12), and the fuzzing engine takes a worker that long on a loaded
// machine for hung, failing the run.
// fuzzTableWork is the fuzz router's bound on one request's table work.
const fuzzTableWork = service.DefaultMaxTableWork / 20

func fuzzRouter(f *testing.F) http.Handler {
	svc, err := service.New(service.Config{Store: store.NewMemory(), Noise: dprandtest.NewLaplace(dprand.Seeded(1)), MaxTableWork: fuzzTableWork})
	if err != nil {
		f.Fatal(err)
	}
	l := api.DefaultLimits()
	l.MaxBodyBytes, l.MaxElements, l.MaxFrequency, l.MaxRangeRows, l.MaxTableFrequency = 1<<16, 200, 1<<20, 50, 2000
	return api.NewRouter(api.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Limits: l})
}

// checkAnswer: the decoder never panics or answers 5xx, and every error is a
// problem+json.
func checkAnswer(t *testing.T, h http.Handler, req *http.Request) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("status %d for input: %s", rec.Code, rec.Body)
	}
	if rec.Code >= 400 && req.Method != "HEAD" && rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d without problem+json", rec.Code)
	}
}

func FuzzSampleJSON(f *testing.F) {
	h := fuzzRouter(f)
	for _, s := range []string{
		`{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`,
		`{"privacy":{"epsilon":-1,"delta":2},"sampling":{"scheme":"ppswor"},"elements":[]}`,
		`{"privacy":{"epsilon":1e-300,"delta":1e-300},"sampling":{"scheme":"custom","probabilities":[1e-300,1]},"method":"discrete","elements":[{"key":"x","frequency":1048576}]}`,
		`{"privacy":{"epsilon":5,"delta":1},"sampling":{"scheme":"priority","threshold":1e300,"power":0.001},"release":"keys","elements":[{"key":"\u0000","frequency":1}]}`,
		`[]`, `{`, `null`, `{"elements":[{"frequency":1e400}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/samples", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		checkAnswer(t, h, req)
	})
}

func FuzzSampleNDJSON(f *testing.F) {
	h := fuzzRouter(f)
	f.Add("{\"privacy\":{\"epsilon\":0.5,\"delta\":1e-6},\"sampling\":{\"scheme\":\"none\"}}\n{\"key\":\"a\",\"frequency\":3}\n")
	f.Add("{\"privacy\":{\"epsilon\":0.5,\"delta\":1e-6},\"sampling\":{\"scheme\":\"none\"}}\n\n\n{\"key\":\"a\"}\n")
	f.Add("\n")
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/samples", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Accept", "application/x-ndjson")
		checkAnswer(t, h, req)
	})
}

func FuzzStreamRequests(f *testing.F) {
	h := fuzzRouter(f)
	f.Add(`{"estimator":"density","algorithm":"ppds","epsilon":0.25,"universe_size":1000,"sample_size":10}`, "{\"user\":1}\n{\"user\":\"x\",\"op\":\"delete\"}\n")
	f.Add(`{"estimator":"incidence","epsilon":0.5,"universe_size":1000,"sample_size":10,"t":2,"max_occurrences":8}`, "{\"user\":-1}\n")
	f.Add(`{"estimator":"heavy_hitters","epsilon":0.5,"universe_size":100,"sample_size":10,"k":2,"max_occurrences":8}`, "{}\n")
	f.Add(`{"estimator":"density","epsilon":0.3,"universe_size":100,"sample_size":10,"continual":true}`, "{\"user\":99}\n")
	f.Fuzz(func(t *testing.T, create, events string) {
		req := httptest.NewRequest("POST", "/v1/streams", strings.NewReader(create))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		id := "unknown"
		if rec.Code == 201 {
			if i := strings.Index(rec.Body.String(), `"id":"`); i >= 0 {
				id = rec.Body.String()[i+6 : i+6+32]
			}
		}
		req = httptest.NewRequest("POST", "/v1/streams/"+id+"/events", strings.NewReader(events))
		req.Header.Set("Content-Type", "application/x-ndjson")
		checkAnswer(t, h, req)
	})
}

// FuzzTableQueries fuzzes the parameter validators behind the table queries.
func FuzzTableQueries(f *testing.F) {
	h := fuzzRouter(f)
	f.Add("epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.01&max_frequency=30", "3-7", "max_separation")
	f.Add("epsilon=5&delta=1&scheme=custom&probabilities=0.1,0.5,1", "1", "discrete")
	f.Add("epsilon=0.01&delta=1e-12&scheme=priority&threshold=1e-9&power=2", "40", "discrete")
	f.Fuzz(func(t *testing.T, params, freq, method string) {
		for _, path := range []string{
			"/v1/tables/reporting?" + params,
			"/v1/tables/frequencies?" + params + "&frequency=" + freq + "&method=" + method,
		} {
			req := httptest.NewRequest("GET", "/", nil)
			req.URL.RawQuery = path[strings.IndexByte(path, '?')+1:]
			req.URL.Path = path[:strings.IndexByte(path, '?')]
			checkAnswer(t, h, req)
		}
	})
}

// querySeeds are valid queries of GET routes, as fuzzing seeds.
var querySeeds = map[string]string{
	"/v1/samples/{id}/estimate":  "g=power:2&estimator=biased_down&key=a&key_prefix=a&key_regex=^a",
	"/v1/samples/{id}/top":       "k=2",
	"/v1/samples/{id}/rank":      "key=a",
	"/v1/samples/{id}/quantiles": "q=0.5&q=0.9",
	"/v1/tables/reporting":       "epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.01&max_frequency=30&baseline=sbh",
	"/v1/tables/frequencies":     "epsilon=0.5&delta=1e-6&frequency=3-7&method=discrete",
	"/v1/tables/audit":           "epsilon=0.5&delta=1e-6&frequency=1-7",
	"/v1/tables/estimators":      "epsilon=1&delta=0.01&g=cap:5&estimator=unbiased&max_frequency=40",
	"/v1/plots/reporting":        "epsilon=1&delta=0.01&max_frequency=20",
	"/v1/plots/bias":             "epsilon=1&delta=0.01&max_frequency=20&g=count",
	"/v1/plots/variance":         "epsilon=1&delta=0.01&max_frequency=20&normalized=false",
	"/v1/plots/nrmse":            "epsilon=1&delta=0.01&scheme=priority&distribution=zipf&alpha=1.2&n=100&sweep_points=5",
	"/v1/plan/summary":           "epsilon=1&delta=0.01&scheme=ppswor&threshold=0.1&distribution=uniform&a=1&b=50",
	"/v1/samples":                "limit=2",
}

// FuzzQuerySurface: no query string on any GET route of the router (or its
// HEAD) is answered with a 5xx, and every error is a problem+json. The
// routes are read from the router itself, so new GET routes are fuzzed too;
// {id} is a stored sample's id (a 404 elsewhere) and {name} a dataset's.
func FuzzQuerySurface(f *testing.F) {
	h := fuzzRouter(f)
	var routes []string
	_ = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodGet && !strings.HasPrefix(route, "/docs") {
			routes = append(routes, route)
		}
		return nil
	})
	slices.Sort(routes)
	body := `{"privacy":{"epsilon":1,"delta":0.01},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":40},{"key":"b","frequency":90},{"key":"c","frequency":7}]}`
	req := httptest.NewRequest("POST", "/v1/samples", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 201 {
		f.Fatalf("creating the sample: %d %s", rec.Code, rec.Body)
	}
	id := strings.TrimPrefix(rec.Header().Get("Location"), "/v1/samples/")
	req = httptest.NewRequest("POST", "/v1/datasets", strings.NewReader(`{"name":"d1","epsilon_budget":1,"delta_budget":0.1}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)
	for i, r := range routes {
		f.Add(uint8(i), querySeeds[r], false)
	}
	for _, q := range []string{"q=NaN", "g=power:400", "g=power:1e308", "epsilon=1e400&delta=1", "epsilon=NaN&delta=NaN",
		"frequency=1-99999999999999999999", "k=-1", "key=%ff", "%zz", "a=1;b=2", "max_frequency=2001", "probabilities=0.1,,1",
		"limit=-1&cursor=%00"} {
		for i := range routes {
			f.Add(uint8(i), q, true)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, head bool) {
		path := strings.NewReplacer("{id}", id, "{name}", "d1").Replace(routes[int(route)%len(routes)])
		method := "GET"
		if head {
			method = "HEAD"
		}
		req := httptest.NewRequest(method, "/", nil)
		req.URL.Path, req.URL.RawQuery = path, query
		checkAnswer(t, h, req)
	})
}

// FuzzIdentifiersPostgres sends fuzzed path segments and cursors (raw, and
// base64url-encoded as a listing's own cursor around fuzzed bytes) to the
// real router over the PostgreSQL store: no answer is a 5xx (issue 25: NUL
// and invalid UTF-8 reached PostgreSQL, SQLSTATE 22021, and answered 500).
// It needs PWSD_TEST_DATABASE_URL (make test sets it) and skips without.
func FuzzIdentifiersPostgres(f *testing.F) {
	pg, err := store.OpenPostgres(context.Background(), pgtest.NewDatabase(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(pg.Close)
	svc, err := service.New(service.Config{Store: pg, Noise: dprandtest.NewLaplace(dprand.Seeded(1))})
	if err != nil {
		f.Fatal(err)
	}
	h := api.NewRouter(api.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Limits: api.DefaultLimits()})
	for _, s := range []string{"\xff", "\x00", "a\x00b", "\xc0\x80", "\xed\xa0\x80", "abc", strings.Repeat("a", 129), "s.1.x", "%"} {
		f.Add(s, []byte(s))
	}
	f.Fuzz(func(t *testing.T, seg string, cur []byte) {
		p := url.PathEscape(seg)
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/samples/" + p}, {"GET", "/v1/samples/" + p + "/top"}, {"DELETE", "/v1/samples/" + p},
			{"GET", "/v1/datasets/" + p}, {"POST", "/v1/datasets/" + p + "/charges"},
			{"GET", "/v1/streams/" + p}, {"POST", "/v1/streams/" + p + "/releases"},
			{"GET", "/v1/counters/" + p}, {"DELETE", "/v1/counters/" + p},
		} {
			req := httptest.NewRequest(r.method, r.path, strings.NewReader(`{"epsilon":0.1,"delta":0}`))
			req.Header.Set("Content-Type", "application/json")
			checkAnswer(t, h, req)
		}
		for _, kind := range []struct{ path, prefix string }{{"/v1/samples", "s"}, {"/v1/datasets", "d"}, {"/v1/streams", "t"}, {"/v1/counters", "c"}} {
			own := base64.RawURLEncoding.EncodeToString(append([]byte(kind.prefix+".1."), cur...))
			for _, c := range []string{url.QueryEscape(string(cur)), own} {
				checkAnswer(t, h, httptest.NewRequest("GET", kind.path+"?cursor="+c, nil))
			}
		}
	})
}
