package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pwsd/pwsd/openapi"
)

// The contract: every request the HTTP tests make goes through contract(),
// which validates it and its answer against the served OpenAPI 3 document
// (openapi/openapi.json) with kin-openapi's openapi3filter:
//   - every answer's status is one the operation documents, with a
//     documented media type and a body matching its schema;
//   - a request the document says is invalid is never accepted: its answer
//     is a 4xx (the server is at least as strict as the document).
// Requests to paths or methods the document does not have (404 and 405
// tests, /metrics, /docs) are checked only for being problems when they fail.

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

func contractDoc() (routers.Router, error) {
	contractOnce.Do(func() {
		for _, mt := range []string{"application/x-ndjson", "image/svg+xml", "text/html"} {
			openapi3filter.RegisterBodyDecoder(mt, func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
				b, err := io.ReadAll(body)
				return string(b), err
			})
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(openapi.JSON3)
		if err != nil {
			contractErr = err
			return
		}
		if contractErr = doc.Validate(loader.Context); contractErr != nil {
			return
		}
		contractRouter, contractErr = gorillamux.NewRouter(doc)
	})
	return contractRouter, contractErr
}

// contract wraps the router under test with the contract checks; failures
// are reported on t.
func contract(t testing.TB, next http.Handler) http.Handler {
	router, err := contractDoc()
	if err != nil {
		t.Fatalf("loading openapi/openapi.json: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "test harness: reading body", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		what := r.Method + " " + r.URL.Path
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" && r.Method != http.MethodHead {
			t.Errorf("contract: %s answered %d without application/problem+json", what, rec.Code)
		}
		vr := r.Clone(context.Background())
		vr.Body = io.NopCloser(bytes.NewReader(body))
		vr.URL.Scheme, vr.URL.Host = "", "" // the document has no servers: match by path
		route, params, err := router.FindRoute(vr)
		if err != nil {
			return // not in the document: 404/405 probes and operational pages
		}
		opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
		in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: opts}
		if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && rec.Code < 400 {
			t.Errorf("contract: %s was accepted (%d) though the document forbids it: %s", what, rec.Code, short(reqErr.Error()))
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(), Options: opts}
		out.SetBodyBytes(rec.Body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			t.Errorf("contract: the answer %d to %s does not match the document: %s", rec.Code, what, short(err.Error()))
		}
	})
}

func short(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return strings.TrimSpace(s)
}

// errT records Errorf calls instead of failing.
type errT struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (e *errT) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, format)
}

// TestContractCatchesMismatches: the contract check itself can fail. An
// undocumented status, a body that breaks its schema, an error that is not
// a problem and an accepted request the document forbids are each reported;
// a conforming exchange is not.
func TestContractCatchesMismatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, target string
		status       int
		ct, body     string
		wantErr      bool
	}{
		{"conforming", "/healthz", 200, "application/json", `{"status":"ok"}`, false},
		{"undocumented status", "/healthz", 418, "application/problem+json", `{"type":"x","title":"t","status":418,"request_id":""}`, true},
		{"body breaks schema", "/v1/samples/x/top", 200, "application/json", `{"sample":"x","k":"ten","keys":[]}`, true},
		{"error not a problem", "/v1/samples/x/top", 404, "text/plain", `nope`, true},
		{"forbidden request accepted", "/v1/tables/frequencies?epsilon=1&delta=0.1&scheme=magic&frequency=3", 200, "application/json", `{"rows":[]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &errT{TB: t}
			h := contract(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.target, nil))
			if got := len(rt.errs) > 0; got != tc.wantErr {
				t.Fatalf("contract errors %v, want errors: %v", rt.errs, tc.wantErr)
			}
		})
	}
}
