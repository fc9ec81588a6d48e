package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// wantField asserts r is a problem with status and an error naming field.
func wantField(t *testing.T, r response, status int, field string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	p := r.problem(t)
	for _, f := range p.fields() {
		if f == field {
			return
		}
	}
	t.Fatalf("problem names %v, want %q: %s", p.fields(), field, r.body)
}

// TestSmallEpsilonRefusedUpFront: privacy parameters whose L makes the
// tables too expensive (defect 1: eps=1e-3, delta=1e-6 took 30 s and 6.6 GB;
// eps=1e-6, delta=1e-300 never finished) answer 422 naming epsilon before
// any table is computed. The handler returns at once; an uncapped service
// would not return within the test's lifetime, so the test cannot pass by
// accident.
func TestSmallEpsilonRefusedUpFront(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, tc := range []struct{ name, method, path, body, field string }{
		{"frequencies eps 1e-4", "GET", "/v1/tables/frequencies?epsilon=1e-4&delta=1e-6&scheme=none&method=discrete&frequency=1", "", "epsilon"},
		{"frequencies eps 1e-6 delta 1e-300", "GET", "/v1/tables/frequencies?epsilon=1e-6&delta=1e-300&frequency=1", "", "epsilon"},
		{"estimators", "GET", "/v1/tables/estimators?epsilon=1e-3&delta=1e-6&max_frequency=10", "", "epsilon"},
		{"sample", "POST", "/v1/samples", `{"privacy":{"epsilon":1e-3,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":1000000}]}`, "privacy.epsilon"},
		{"sample keys", "POST", "/v1/samples", `{"privacy":{"epsilon":1e-6,"delta":1e-300},"sampling":{"scheme":"none"},"release":"keys","elements":[{"key":"a","frequency":5}]}`, "privacy.epsilon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			r := ts.do(t, tc.method, tc.path, ct, tc.body)
			wantField(t, r, 422, tc.field)
			if !strings.Contains(string(r.body), "PWSD_MAX_TABLE_WORK") {
				t.Errorf("the problem must name the limit: %s", r.body)
			}
		})
	}
	// Moderate parameters stay served.
	if r := ts.get(t, "/v1/tables/frequencies?epsilon=0.1&delta=1e-6&frequency=1-20"); r.status != 200 {
		t.Fatalf("eps 0.1: %d %s", r.status, r.body)
	}
}

// TestMetricLabelsClosed: 300 random methods add no label value (defect 2:
// each became a label), and routes are labelled by pattern.
func TestMetricLabelsClosed(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		m := fmt.Sprintf("M%dX%d", i, rng.IntN(1e9))
		ts.do(t, m, "/nope-"+m, "", "")
	}
	body := string(ts.get(t, "/metrics").body)
	if strings.Contains(body, "M0X") || strings.Contains(body, "/nope-") {
		t.Fatal("a client-chosen method or path became a label")
	}
	if !strings.Contains(body, `method="OTHER"`) {
		t.Fatal(`unknown methods must be counted as method="OTHER"`)
	}
	if n := strings.Count(body, "pwsd_http_requests_total{"); n > 5 {
		t.Fatalf("%d request series after 300 distinct methods, want a handful", n)
	}
}

// TestMetricsAccess: with API tokens, /metrics is served only behind
// PWSD_METRICS_TOKEN (or on PWSD_METRICS_ADDR), so per-route refusal
// counts are not visible to anyone.
func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(f, []byte(`{"tokens":[{"token":"writer-token-0123456789","role":"writer"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := api.LoadTokens(f)
	if err != nil {
		t.Fatal(err)
	}
	closed := newServer(t, nil, func(d *api.Deps) { d.Tokens = tokens })
	if r := closed.get(t, "/metrics"); r.status != 404 {
		t.Fatalf("tokens without a metrics token: /metrics %d, want 404", r.status)
	}
	withToken := newServer(t, nil, func(d *api.Deps) { d.Tokens = tokens; d.MetricsToken = "metrics-token-0123456789" })
	for _, tc := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer writer-token-0123456789", 401}, {"Bearer metrics-token-0123456789", 200}} {
		if r := withToken.get(t, "/metrics", "Authorization", tc.auth); r.status != tc.status {
			t.Errorf("/metrics with %q: %d, want %d", tc.auth, r.status, tc.status)
		}
	}
	elsewhere := newServer(t, nil, func(d *api.Deps) { d.MetricsElsewhere = true })
	if r := elsewhere.get(t, "/metrics"); r.status != 404 {
		t.Fatalf("PWSD_METRICS_ADDR set: /metrics on the API address %d, want 404", r.status)
	}
}

// TestRequestIDs: a safe client id is kept, anything else replaced, and the
// id is echoed on every response, errors included; client text never
// reaches the log (defect 9).
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"safe", "abc-123_X.y", true},
		{"email and json", `alice@example.com {"x":1}`, false},
		{"long", strings.Repeat("a", 65), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/nope", "/v1/samples/none"} {
				r := ts.get(t, path, "X-Request-Id", tc.id)
				got := r.header.Get("X-Request-Id")
				if got == "" || len(got) > 64 {
					t.Fatalf("%s: X-Request-Id %q", path, got)
				}
				if (got == tc.id) != tc.kept {
					t.Fatalf("%s: X-Request-Id %q for client id %q (kept %v)", path, got, tc.id, tc.kept)
				}
				if !strings.Contains(ts.logs.String(), `"request_id":"`+got+`"`) {
					t.Fatalf("%s: the log does not carry the echoed id", path)
				}
			}
		})
	}
	if strings.Contains(ts.logs.String(), "alice@example.com") {
		t.Fatal("a client request id reached the log")
	}
}

// TestTokensFile: a token listed with two roles is a start-up error, and
// the 16-character minimum counts characters, not bytes.
func TestTokensFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, wantErr string }{
		{"two roles", `{"tokens":[{"token":"same-token-0123456789","role":"writer"},{"token":"same-token-0123456789","role":"reader"}]}`, "different role"},
		{"same role twice", `{"tokens":[{"token":"same-token-0123456789","role":"reader"},{"token":"same-token-0123456789","role":"reader"}]}`, ""},
		{"8 two-byte characters", `{"tokens":[{"token":"éééééééé","role":"reader"}]}`, "shorter than 16"},
		{"16 two-byte characters", `{"tokens":[{"token":"éééééééééééééééé","role":"reader"}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "tokens.json")
			if err := os.WriteFile(f, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := api.LoadTokens(f)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestDefect5Inputs: each input that gave a 500 answers 422 naming its field.
func TestDefect5Inputs(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	if r := ts.postJSON(t, "/v1/datasets", `{"name":"big","epsilon_budget":1e6,"delta_budget":1}`); r.status != 201 {
		t.Fatalf("dataset: %d %s", r.status, r.body)
	}
	for _, tc := range []struct{ name, method, path, body, field string }{
		{"sample threshold 1e-320", "POST", "/v1/samples", `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-320},"elements":[{"key":"a","frequency":3}]}`, "sampling.threshold"},
		{"table threshold 1e-320", "GET", "/v1/tables/frequencies?epsilon=1&delta=1e-6&scheme=priority&threshold=1e-320&frequency=3", "", "threshold"},
		{"custom q 4.9e-324", "POST", "/v1/samples", `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"custom","probabilities":[4.9e-324,1]},"elements":[{"key":"a","frequency":3}]}`, "sampling.probabilities[0]"},
		{"table custom q 4.9e-324", "GET", "/v1/tables/reporting?epsilon=1&delta=1e-6&scheme=custom&probabilities=4.9e-324,1", "", "probabilities[0]"},
		{"incidence moduli 12", "POST", "/v1/streams", `{"estimator":"incidence","epsilon":0.5,"universe_size":1000,"sample_size":100,"t":2,"max_occurrences":8,"moduli":12}`, "moduli"},
		{"budget 1.79e308", "POST", "/v1/datasets", `{"name":"huge","epsilon_budget":1.7976931348623157e308,"delta_budget":1}`, "epsilon_budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			wantField(t, ts.do(t, tc.method, tc.path, ct, tc.body), 422, tc.field)
		})
	}
	// Releases of 1e308 against a capped budget: refused (409), never a 500.
	for i := 0; i < 2; i++ {
		r := ts.postJSON(t, "/v1/samples", `{"dataset":"big","privacy":{"epsilon":1e308,"delta":1e-9},"sampling":{"scheme":"none"},"release":"keys","elements":[{"key":"a","frequency":3}]}`)
		if r.status != 409 && r.status != 422 {
			t.Fatalf("release %d of 1e308: %d %s", i, r.status, r.body)
		}
	}
}

// TestStoreUnavailable: with the database gone every /v1 route answers 503
// with Retry-After (defect 3 answered 500), the outage is logged once, not
// per request, and the recovery once.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pg, err := store.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	ts := newServer(t, pg)
	if r := ts.postJSON(t, "/v1/datasets", `{"name":"d","epsilon_budget":1,"delta_budget":0}`); r.status != 201 {
		t.Fatalf("dataset: %d %s", r.status, r.body)
	}
	admin, err := pgx.Connect(context.Background(), pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := dbURL[strings.LastIndexByte(dbURL, '/')+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	if _, err := admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/datasets/d", ""},
		{"POST", "/v1/datasets", `{"name":"e","epsilon_budget":1,"delta_budget":0}`},
		{"POST", "/v1/samples", `{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":5}]}`},
		{"GET", "/v1/samples/abc", ""},
		{"GET", "/v1/tables/frequencies?epsilon=0.9&delta=1e-5&frequency=3", ""},
		{"GET", "/v1/tables/reporting?epsilon=0.9&delta=1e-5", ""},
		{"POST", "/v1/streams", `{"estimator":"density","epsilon":0.25,"universe_size":1000,"sample_size":100}`},
		{"GET", "/v1/streams/abc", ""},
		{"POST", "/v1/counters", `{"epsilon":1,"horizon":100}`},
		{"GET", "/v1/counters/abc", ""},
		{"GET", "/readyz", ""},
	} {
		ct := ""
		if tc.body != "" {
			ct = "application/json"
		}
		r := ts.do(t, tc.method, tc.path, ct, tc.body)
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: %d (Retry-After %q), want 503 with Retry-After: %s", tc.method, tc.path, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	logs := ts.logs.String()
	if n := strings.Count(logs, "the store is unreachable"); n != 1 {
		t.Errorf("%d outage lines for 11 failed requests, want 1", n)
	}
	if strings.Contains(logs, `"level":"ERROR","msg":"request failed"`) {
		t.Error("an unreachable store was logged as a request failure")
	}
}

// TestClientGoneMidBody: a client that disconnects while sending its body
// is logged at info and counted as 499, not as a 500 (defect 9).
func TestClientGoneMidBody(t *testing.T) {
	// Serial: a 100 ms sleep lets the server read the partial body before the client leaves.
	ts := newRawServer(t, nil)
	addr := strings.TrimPrefix(ts.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /v1/samples HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"privacy\":{\"epsilon\":1,\"delta\":0.5},\"sampling\":{\"scheme\":\"none\"},\"elements\":[")
	time.Sleep(100 * time.Millisecond)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(ts.logs.String(), `"route":"/v1/samples"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	logs := ts.logs.String()
	if !strings.Contains(logs, `"status":499`) || strings.Contains(logs, `"level":"ERROR"`) {
		t.Fatalf("want one info line with status 499 and no ERROR; log:\n%s", logs)
	}
	if m := string(ts.get(t, "/metrics").body); strings.Contains(m, `route="/v1/samples",status="500"`) {
		t.Fatal("a client that went away was counted as a 500")
	}
}

// TestEventBodyGuard: a JSON events body with one oversized user string or
// too many events is refused while streaming (413), not after decoding
// everything (defect 6: a 200 MB user string used 850 MB first).
func TestEventBodyGuard(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil, withLimits(func(l *api.Limits) { l.MaxLineBytes = 1 << 10; l.MaxEvents = 10 }))
	r := ts.postJSON(t, "/v1/streams", `{"estimator":"density","epsilon":0.25,"universe_size":1000,"sample_size":100}`)
	var sv struct{ ID string }
	r.json(t, &sv)
	long := ts.postJSON(t, "/v1/streams/"+sv.ID+"/events", `{"events":[{"user":"`+strings.Repeat("x", 1<<20)+`"}]}`)
	if long.status != 413 || !strings.Contains(string(long.body), "PWSD_MAX_LINE_BYTES") {
		t.Fatalf("1 MB user string: %d %s", long.status, long.body)
	}
	many := ts.postJSON(t, "/v1/streams/"+sv.ID+"/events", `{"events":[`+strings.TrimSuffix(strings.Repeat(`{"user":1},`, 11), ",")+`]}`)
	if many.status != 413 {
		t.Fatalf("11 events with PWSD_MAX_EVENTS 10: %d %s", many.status, many.body)
	}
	ten := ts.postJSON(t, "/v1/streams/"+sv.ID+"/events", `{"events":[`+strings.TrimSuffix(strings.Repeat(`{"user":1},`, 10), ",")+`]}`)
	if ten.status != 200 {
		t.Fatalf("10 events: %d %s", ten.status, ten.body)
	}
}

// TestAdmissionLimit: with every heavy slot taken, a heavy request waits at
// most PWSD_ADMISSION_WAIT and is answered 503 with Retry-After; cheap reads
// pass.
func TestAdmissionLimit(t *testing.T) {
	// Serial: a 200 ms sleep lets the stalled upload take the only slot (50 ms admission wait).
	ts := newRawServer(t, nil, withLimits(func(l *api.Limits) { l.MaxHeavyRequests = 1; l.AdmissionWait = 50 * time.Millisecond }))
	// Hold the only slot with a sample whose body never finishes.
	addr := strings.TrimPrefix(ts.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/samples HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	time.Sleep(200 * time.Millisecond)
	r := ts.get(t, "/v1/tables/reporting?epsilon=1&delta=1e-6")
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("heavy request with no slot: %d (Retry-After %q)", r.status, r.header.Get("Retry-After"))
	}
	if r := ts.get(t, "/v1/datasets/none"); r.status != 404 {
		t.Fatalf("cheap read: %d", r.status)
	}
}

var _ = http.StatusOK
