package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"math/rand/v2"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	*httptest.Server
	logs *syncBuffer
}

type option func(*api.Deps)

func withLimits(f func(*api.Limits)) option { return func(d *api.Deps) { f(&d.Limits) } }

// withServiceConfig replaces the test server's service by one over st
// (the store the server is started with) whose configuration f adjusts.
func withServiceConfig(t testing.TB, st store.Store, f func(*service.Config)) option {
	return func(d *api.Deps) { d.Service = newTestService(t, st, d.Logger, f) }
}

// newTestService is the service of a test server: over st, logging to
// log, with seeded generators; f, when not nil, adjusts its configuration.
func newTestService(t testing.TB, st store.Store, log *slog.Logger, f func(*service.Config)) *service.Service {
	t.Helper()
	var seed uint64
	var mu sync.Mutex
	cfg := service.Config{Store: st, Logger: log,
		Noise: dprandtest.NewLaplace(dprand.Seeded(99)),
		NewRand: func() *rand.Rand {
			mu.Lock()
			defer mu.Unlock()
			seed++
			return dprand.Seeded(seed)
		}}
	if f != nil {
		f(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// newServer runs the real router over st (in-memory when nil) with a seeded
// generator and a debug-level logger capturing every line.
func newServer(t testing.TB, st store.Store, opts ...option) *testServer {
	t.Helper()
	_, isTest := t.(*testing.T) // benchmarks measure the router alone
	return startServer(t, st, isTest, opts...)
}

// newRawServer is newServer without the contract check, for tests that
// must reach the router while a request body is still arriving (the
// contract check reads every body whole before the router sees it).
func newRawServer(t testing.TB, st store.Store, opts ...option) *testServer {
	t.Helper()
	return startServer(t, st, false, opts...)
}

func startServer(t testing.TB, st store.Store, checkContract bool, opts ...option) *testServer {
	t.Helper()
	if st == nil {
		st = store.NewMemory()
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc := newTestService(t, st, log, nil)
	d := api.Deps{Service: svc, Logger: log, Registry: prometheus.NewRegistry(), Limits: api.DefaultLimits()}
	for _, o := range opts {
		o(&d)
	}
	var h http.Handler = api.NewRouter(d)
	if checkContract {
		h = contract(t, h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, logs: logs}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

func (ts *testServer) do(t *testing.T, method, path, contentType, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (ts *testServer) postJSON(t *testing.T, path, body string, headers ...string) response {
	return ts.do(t, http.MethodPost, path, "application/json", body, headers...)
}

func (ts *testServer) get(t *testing.T, path string, headers ...string) response {
	return ts.do(t, http.MethodGet, path, "", "", headers...)
}

type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
	RequestID string `json:"request_id"`
}

func (r response) problem(t *testing.T) problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d, body %s)", ct, r.status, r.body)
	}
	var p problem
	r.json(t, &p)
	if p.Status != r.status || p.Type == "" || p.Title == "" || p.RequestID == "" {
		t.Fatalf("incomplete problem %+v for status %d (type, title and request_id are never empty)", p, r.status)
	}
	return p
}

func (p problem) fields() []string {
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Field)
	}
	return out
}

func TestHealthAndDocs(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, tc := range []struct {
		path, want string
	}{
		{"/healthz", `"ok"`},
		{"/readyz", `"ready"`},
		{"/openapi.json", `"/v1/samples"`},
		{"/docs/index.html", "swagger"},
		{"/metrics", "go_goroutines"},
	} {
		r := ts.get(t, tc.path)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("GET %s: %d %.200s, want 200 containing %s", tc.path, r.status, r.body, tc.want)
		}
	}
	if r := ts.get(t, "/docs"); r.status != http.StatusOK { // follows the redirect
		t.Errorf("GET /docs: %d", r.status)
	}
	// The metrics count requests by route pattern, never by raw path.
	ts.get(t, "/v1/samples/secret-id-123")
	m := ts.get(t, "/metrics")
	if !strings.Contains(string(m.body), `route="/v1/samples/{id}"`) || strings.Contains(string(m.body), "secret-id-123") {
		t.Errorf("metrics must label by route pattern only")
	}
}

func TestOpenAPIIsCommittedOutput(t *testing.T) {
	t.Parallel()
	// /openapi.json serves exactly the committed swag output.
	// /openapi.json serves exactly the generated OpenAPI 3 document and
	// /swagger.json swag's Swagger 2.0 output.
	ts := newServer(t, nil)
	for path, file := range map[string]string{"/openapi.json": "openapi.json", "/swagger.json": "swagger.json"} {
		want, err := os.ReadFile(filepath.Join("..", "openapi", file))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		r := ts.get(t, path)
		r.json(t, &a)
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("%s differs from openapi/%s", path, file)
		}
	}
}
