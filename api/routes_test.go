package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// operationalRoutes are the routes mounted outside /v1, by NewRouter
// itself: no token, no admission, no query parameter (none is declared for
// them, so checkQuery refuses any). They are not in v1Routes.
var operationalRoutes = []string{
	"GET /healthz", "GET /readyz", "GET /version", "GET /metrics", "GET /openapi.json", "GET /swagger.json",
	"GET /docs", "GET /docs/*", "GET /planner",
}

func testRouter(t *testing.T, l Limits) http.Handler {
	t.Helper()
	svc, err := service.New(service.Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return NewRouter(Deps{Service: svc, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Limits: l})
}

// name is how the tests name a table route: "GET /v1/samples/{id}".
func (rt route) name() string { return rt.method + " /v1" + rt.pattern }

// TestRouteTableIsTheRouter walks the real router: every route it serves
// under /v1 is declared in v1Routes, with its query parameters and its
// admission class, and every declared route is served; outside /v1 only
// the operational routes are.
func TestRouteTableIsTheRouter(t *testing.T) {
	table := map[string]route{}
	for _, rt := range v1Routes() {
		if _, dup := table[rt.name()]; dup {
			t.Errorf("%s is declared twice", rt.name())
		}
		table[rt.name()] = rt
		if !rt.query.declared {
			t.Errorf("%s declares no query parameters (noQuery when it takes none)", rt.name())
		}
		if rt.cost != light && rt.cost != heavy {
			t.Errorf("%s declares no admission class (light or heavy)", rt.name())
		}
		if rt.key != ignoresKey && rt.method != http.MethodPost {
			t.Errorf("%s: only a POST may honour or refuse an Idempotency-Key", rt.name())
		}
	}
	served := map[string]bool{}
	err := chi.Walk(testRouter(t, DefaultLimits()).(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		k := method + " " + pattern
		served[k] = true
		switch _, declared := table[k]; {
		case strings.HasPrefix(pattern, "/v1/") && !declared:
			t.Errorf("%s is served but not declared in v1Routes", k)
		case !strings.HasPrefix(pattern, "/v1/") && !slices.Contains(operationalRoutes, k):
			t.Errorf("%s is served outside /v1 but is not an operational route", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range table {
		if !served[k] {
			t.Errorf("%s is declared in v1Routes but not served", k)
		}
	}
	for _, k := range operationalRoutes {
		if !served[k] {
			t.Errorf("operational route %s is not served", k)
		}
	}
}

// heavyRoutes are the routes admission bounds, listed by hand: every POST
// but the counters' and the datasets' (bounded work), the tables, plots and
// plans, and the estimates over a stored sample. (They are the routes the
// path-prefix rule of the former isHeavy picked.)
var heavyRoutes = []string{
	"POST /v1/samples",
	"POST /v1/samples:import",
	"GET /v1/samples/{id}/estimate",
	"GET /v1/samples/{id}/top",
	"GET /v1/samples/{id}/rank",
	"GET /v1/samples/{id}/quantiles",
	"GET /v1/tables/reporting",
	"GET /v1/tables/frequencies",
	"GET /v1/tables/estimators",
	"GET /v1/tables/audit",
	"POST /v1/tables/prebuild",
	"GET /v1/plots/reporting",
	"GET /v1/plots/bias",
	"GET /v1/plots/variance",
	"GET /v1/plots/nrmse",
	"GET /v1/plan/summary", "GET /v1/plan/streams", "GET /v1/plots/streams",
	"POST /v1/streams",
	"POST /v1/streams/{id}/events",
	"POST /v1/streams/{id}/releases",
	"POST /v1/streams/{id}/intrusions",
}

// TestHeavyRoutesWaitForAdmission: the routes declared heavy are exactly
// heavyRoutes, and the router bounds exactly them: with the only heavy
// slot held, each heavy route (and HEAD on a heavy GET) is answered 503
// with Retry-After and every light route is answered without waiting.
func TestHeavyRoutesWaitForAdmission(t *testing.T) {
	var declared []string
	for _, rt := range v1Routes() {
		if rt.cost == heavy {
			declared = append(declared, rt.name())
		}
	}
	if !slices.Equal(declared, heavyRoutes) {
		t.Fatalf("declared heavy:\n%s\nwant:\n%s", strings.Join(declared, "\n"), strings.Join(heavyRoutes, "\n"))
	}

	l := DefaultLimits()
	l.MaxHeavyRequests, l.AdmissionWait = 1, 20*time.Millisecond
	ts := httptest.NewServer(testRouter(t, l))
	defer ts.Close()
	// Hold the only slot with a sample whose body never finishes.
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/samples HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	full := func() bool { // the slot is taken once a heavy request is refused
		res := do(t, ts, http.MethodGet, "/v1/tables/reporting?epsilon=1&delta=1e-6")
		return res.StatusCode == http.StatusServiceUnavailable
	}
	for deadline := time.Now().Add(10 * time.Second); !full(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held request never took the slot")
		}
	}
	for _, rt := range v1Routes() {
		path := strings.NewReplacer("{id}", "x1", "{name}", "n1").Replace("/v1" + rt.pattern)
		methods := []string{rt.method}
		if rt.method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		for _, m := range methods {
			res := do(t, ts, m, path)
			refused := res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != ""
			if refused != (rt.cost == heavy) {
				t.Errorf("%s %s (declared %s): %d with every heavy slot taken", m, path, map[cost]string{light: "light", heavy: "heavy"}[rt.cost], res.StatusCode)
			}
		}
	}
}

// TestEveryRouteChecksItsQuery: the router enforces each route's declared
// query parameters: every declared one passes checkQuery (whatever the
// handler then says of its value), and an unknown one is the one 400
// problem every route gives.
func TestEveryRouteChecksItsQuery(t *testing.T) {
	ts := httptest.NewServer(testRouter(t, DefaultLimits()))
	defer ts.Close()
	for _, rt := range v1Routes() {
		path := strings.NewReplacer("{id}", "x1", "{name}", "n1").Replace("/v1" + rt.pattern)
		for _, name := range slices.Concat(rt.query.single, rt.query.repeated) {
			res := do(t, ts, rt.method, path+"?"+name+"=x")
			p := readProblem(t, res)
			if i := slices.IndexFunc(p.Errors, func(f FieldError) bool { return f.Field == name }); i >= 0 && strings.HasPrefix(p.Errors[i].Message, "is not a parameter of this route") {
				t.Errorf("%s?%s=x: refused as unknown, though declared", rt.name(), name)
			}
		}
		res := do(t, ts, rt.method, path+"?zz_unknown=1")
		p := readProblem(t, res)
		want := []FieldError{{Field: "zz_unknown", Message: "is not a parameter of this route"}}
		if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != "application/problem+json" ||
			p.Detail != detailMalformed || !slices.Equal(p.Errors, want) {
			t.Errorf("%s?zz_unknown=1: %d %s %+v", rt.name(), res.StatusCode, res.Header.Get("Content-Type"), p)
		}
	}
}

func do(t *testing.T, ts *httptest.Server, method, path string) *http.Response {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(strings.NewReader(string(b)))
	return res
}

func readProblem(t *testing.T, res *http.Response) Problem {
	t.Helper()
	var p Problem
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
