package api_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
)

// TestLogsNeverContainRequestData: keys (reported or not), frequencies and
// user ids never reach a log line, whatever the request does — succeed, fail
// validation, select keys in a query, or hit an unknown route.
func TestLogsNeverContainRequestData(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	const marker = "MARKERKEY7731"
	var els []string
	for i := 0; i < 200; i++ {
		els = append(els, fmt.Sprintf(`{"key":"%s-%d","frequency":%d}`, marker, i, 1+i%40))
	}
	body := `{"privacy":{"epsilon":0.5,"delta":1e-4},"sampling":{"scheme":"none"},"elements":[` + strings.Join(els, ",") + `]}`
	r := ts.postJSON(t, "/v1/samples", body)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var smp struct {
		ID string `json:"id"`
	}
	r.json(t, &smp)
	ts.get(t, "/v1/samples/"+smp.ID+"/estimate?key="+marker+"-3&key_prefix="+marker)
	ts.get(t, "/v1/samples/"+smp.ID+"/rank?key="+marker+"-9")
	ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":0.5,"delta":1e-4},"sampling":{"scheme":"none"},"elements":[{"key":"`+marker+`","frequency":1},{"key":"`+marker+`","frequency":1}]}`)
	ts.postJSON(t, "/v1/samples", `{"privacy": `+marker)
	ts.get(t, "/v1/nowhere/"+marker)
	st := ts.postJSON(t, "/v1/streams", `{"estimator":"density","algorithm":"optbern","epsilon":0.25,"universe_size":1000,"sample_size":100}`)
	var stream struct {
		ID string `json:"id"`
	}
	st.json(t, &stream)
	ts.postJSON(t, "/v1/streams/"+stream.ID+"/events", `{"events":[{"user":"`+marker+`-user"},{"user":"`+marker+`-user","op":"delete"}]}`)
	ts.postJSON(t, "/v1/streams/"+stream.ID+"/events", `{"events":[{"user":"`+marker+`-bad","op":"explode"}]}`)

	logs := ts.logs.String()
	if !strings.Contains(logs, `"route":"/v1/samples"`) {
		t.Fatalf("expected request log lines, got:\n%s", logs)
	}
	if strings.Contains(logs, marker) {
		t.Fatalf("request data reached the logs:\n%s", logs)
	}
}

// TestBearerTokens: with a tokens file every /v1 call needs a token, a
// reader may only read, operations endpoints stay open.
func TestBearerTokens(t *testing.T) {
	t.Parallel()
	tokens := writerReaderTokens(t)
	ts := newServer(t, nil, func(d *api.Deps) { d.Tokens = tokens })
	ds := `{"name":"d1","epsilon_budget":1,"delta_budget":0.001}`
	for _, tc := range []struct {
		name, method, path, body, token string
		status                          int
	}{
		{"no token", "POST", "/v1/datasets", ds, "", 401},
		{"wrong token", "POST", "/v1/datasets", ds, "Bearer nope-nope-nope-nope", 401},
		{"reader writes", "POST", "/v1/datasets", ds, "Bearer reader-token-0123456789", 403},
		{"writer writes", "POST", "/v1/datasets", ds, "Bearer writer-token-0123456789", 201},
		{"reader reads", "GET", "/v1/datasets/d1", "", "Bearer reader-token-0123456789", 200},
		{"reader without token", "GET", "/v1/datasets/d1", "", "", 401},
		{"healthz open", "GET", "/healthz", "", "", 200},
		{"readyz open", "GET", "/readyz", "", "", 200},
		{"metrics not served without its own token", "GET", "/metrics", "", "", 404},
		{"openapi open", "GET", "/openapi.json", "", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.token != "" {
				h = []string{"Authorization", tc.token}
			}
			ct := ""
			if tc.body != "" {
				ct = "application/json"
			}
			r := ts.do(t, tc.method, tc.path, ct, tc.body, h...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if r.status >= 400 {
				r.problem(t)
			}
		})
	}
	if strings.Contains(ts.logs.String(), "token-0123456789") {
		t.Fatal("a token reached the logs")
	}
}

func TestLoadTokensRejectsBadFiles(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"empty":    `{"tokens":[]}`,
		"short":    `{"tokens":[{"token":"short","role":"writer"}]}`,
		"bad role": `{"tokens":[{"token":"long-enough-token-123","role":"admin"}]}`,
		"not json": `tokens`,
	} {
		f := filepath.Join(t.TempDir(), "t.json")
		_ = os.WriteFile(f, []byte(body), 0o600)
		if _, err := api.LoadTokens(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
