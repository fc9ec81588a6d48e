package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/buildinfo"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// forgetfulTables is a store whose table cache holds nothing: a service
// over it after another wrote a sample is that service after a restart with
// an empty cache, whatever the other wrote behind.
type forgetfulTables struct{ store.Store }

func (forgetfulTables) GetTable(context.Context, string) ([]byte, bool, error) {
	return nil, false, nil
}
func (forgetfulTables) PutTable(context.Context, string, []byte) error { return nil }

// TestReaderEstimateAfterRestart is issue 31's probe: a reader's estimate,
// top, rank and quantile GETs of a stored sample after a restart with an
// empty cache computed the sample's chunks for 60 s, then answered 503.
// PWSD_MAX_READER_TABLE_WORK now applies to them: above it the answer is a
// prompt 503 with Retry-After naming the setting, the chunks are built in
// the background, and once they are the same GET is served. A writer's GET
// is served at once (the release it made was admitted).
func TestReaderEstimateAfterRestart(t *testing.T) {
	t.Parallel()
	st := store.NewMemory()
	tokens := writerReaderTokens(t)
	reader := []string{"Authorization", "Bearer reader-token-0123456789"}
	writer := []string{"Authorization", "Bearer writer-token-0123456789"}
	first := newServer(t, st, func(d *api.Deps) { d.Tokens = tokens })
	var els []string
	for i := range 40 {
		els = append(els, fmt.Sprintf(`{"key":"k%d","frequency":%d}`, i, 5000+i*700))
	}
	r := first.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[`+strings.Join(els, ",")+`]}`, writer...)
	if r.status != http.StatusCreated {
		t.Fatalf("release: %d %.300s", r.status, r.body)
	}
	var smp struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &smp); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/estimate", "/top?k=3", "/rank?key=k3", "/quantiles?q=0.5"} {
		t.Run(strings.SplitN(path[1:], "?", 2)[0], func(t *testing.T) {
			t.Parallel()
			var svc *service.Service
			restarted := newServer(t, forgetfulTables{st}, func(d *api.Deps) {
				d.Tokens = tokens
				d.Limits.MaxReaderTableWork = 1000
				svc = d.Service
			})
			r := restarted.get(t, "/v1/samples/"+smp.ID+path, reader...)
			if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "PWSD_MAX_READER_TABLE_WORK") {
				t.Fatalf("reader GET %s after a restart: %d %.300s, want a 503 with Retry-After naming PWSD_MAX_READER_TABLE_WORK", path, r.status, r.body)
			}
			// A client that honours Retry-After: each refusal started the
			// build of what its step reads (the values' chunks, then the
			// chunks of their MLE frequencies), so a few retries are served.
			for retry := 1; ; retry++ {
				svc.Wait() // the background build the refusal started
				r := restarted.get(t, "/v1/samples/"+smp.ID+path, reader...)
				if r.status == http.StatusOK {
					break
				}
				if r.status != http.StatusServiceUnavailable || retry == 4 {
					t.Fatalf("reader GET %s, retry %d: %d %.300s", path, retry, r.status, r.body)
				}
			}
			other := newServer(t, forgetfulTables{st}, func(d *api.Deps) { d.Tokens = tokens; d.Limits.MaxReaderTableWork = 1000 })
			if r := other.get(t, "/v1/samples/"+smp.ID+path, writer...); r.status != http.StatusOK {
				t.Fatalf("writer GET %s after a restart: %d %.300s", path, r.status, r.body)
			}
		})
	}
}

// TestNewUserMistakes is issue 31's list of a new user's mistakes, each
// answered in words that say what was sent and what to send: a quoted
// number is a 422 that says a string was sent; a misspelt member suggests
// the right one; a body without Content-Type is a 415 that says so; a query
// of more parameters than any route takes is a 400 that gives the count and
// the limit.
func TestNewUserMistakes(t *testing.T) {
	t.Parallel()
	ts := newRawServer(t, nil)
	r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":"0.5","delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`)
	wantField(t, r, http.StatusUnprocessableEntity, "privacy.epsilon")
	if !strings.Contains(string(r.body), "not a string") {
		t.Errorf("quoted epsilon: %s", r.body)
	}
	r = ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshhold":0.01},"elements":[{"key":"a","frequency":3}]}`)
	wantField(t, r, http.StatusBadRequest, "sampling.threshhold")
	if !strings.Contains(string(r.body), "did you mean threshold?") {
		t.Errorf("misspelt threshold: %s", r.body)
	}
	res := ts.do(t, http.MethodPost, "/v1/samples", "", `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`)
	if res.status != http.StatusUnsupportedMediaType || !strings.Contains(string(res.body), "no Content-Type") {
		t.Errorf("a body without Content-Type: %d %s", res.status, res.body)
	}
	q := strings.Repeat("a=1&", 10_000) + "a=1"
	r = ts.get(t, "/v1/tables/frequencies?"+q)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "10001 parameters; at most 1000") {
		t.Errorf("10,001 query parameters: %d %.300s", r.status, r.body)
	}
}

// TestWriterDatasetScopes: a writer token limited to datasets (the tokens
// file's "datasets") may create, charge and release into only those (issue
// 31: any writer could spend any dataset's budget); outside them the answer
// is a 403 naming the field, and nothing changes. Reloading the tokens file
// (what SIGHUP does) widens the scope at once; an invalid file changes
// nothing.
func TestWriterDatasetScopes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens.json")
	write := func(teamDatasets string) {
		t.Helper()
		body := `{"tokens":[{"token":"admin-token-0123456789","role":"writer"},{"token":"team-token-0123456789","role":"writer","datasets":[` + teamDatasets + `]}]}`
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`"a"`)
	tokens, err := api.LoadTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	admin := []string{"Authorization", "Bearer admin-token-0123456789"}
	team := []string{"Authorization", "Bearer team-token-0123456789"}
	ts := newServer(t, nil, func(d *api.Deps) { d.Tokens = tokens })
	for _, name := range []string{"a", "b"} {
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"`+name+`","epsilon_budget":10,"delta_budget":1e-3}`, admin...); r.status != http.StatusCreated {
			t.Fatalf("dataset %s: %d %s", name, r.status, r.body)
		}
	}
	sample := func(dataset string) string {
		ds := ""
		if dataset != "" {
			ds = `"dataset":"` + dataset + `",`
		}
		return `{` + ds + `"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"x","frequency":30}]}`
	}
	wantField(t, ts.postJSON(t, "/v1/samples", sample("b"), team...), http.StatusForbidden, "dataset")
	wantField(t, ts.postJSON(t, "/v1/samples", sample(""), team...), http.StatusForbidden, "dataset")
	wantField(t, ts.postJSON(t, "/v1/datasets/b/charges", `{"epsilon":0.1,"delta":1e-7}`, team...), http.StatusForbidden, "name")
	wantField(t, ts.postJSON(t, "/v1/datasets", `{"name":"c","epsilon_budget":1,"delta_budget":1e-3}`, team...), http.StatusForbidden, "name")
	wantField(t, ts.postJSON(t, "/v1/streams", `{"dataset":"b","estimator":"density","epsilon":0.5,"universe_size":1000,"sample_size":100}`, team...), http.StatusForbidden, "dataset")
	var b struct {
		Releases []json.RawMessage `json:"releases"`
	}
	if r := ts.get(t, "/v1/datasets/b", admin...); r.status != http.StatusOK || json.Unmarshal(r.body, &b) != nil || len(b.Releases) != 0 {
		t.Fatalf("dataset b after refused requests: %d %s", r.status, r.body)
	}
	if r := ts.postJSON(t, "/v1/samples", sample("a"), team...); r.status != http.StatusCreated {
		t.Fatalf("the team's own dataset: %d %s", r.status, r.body)
	}
	// A reload widens the scope; an invalid file keeps it.
	write(`"a","b"`)
	if err := tokens.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := ts.postJSON(t, "/v1/datasets/b/charges", `{"epsilon":0.1,"delta":1e-7}`, team...); r.status != http.StatusCreated {
		t.Fatalf("after the reload: %d %s", r.status, r.body)
	}
	if err := os.WriteFile(file, []byte(`{"tokens":[{"token":"short","role":"writer"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tokens.Reload(); err == nil {
		t.Fatal("an invalid tokens file was accepted")
	}
	if r := ts.get(t, "/v1/datasets/b", team...); r.status != http.StatusOK {
		t.Fatalf("the tokens in force changed after an invalid reload: %d", r.status)
	}
}

// TestVersionRoute: GET /version and the pwsd_build_info metric name the
// running build (the commit docs/operations.md promises), without a token.
func TestVersionRoute(t *testing.T) {
	t.Parallel()
	build := buildinfo.Info{Version: "v9.9.9", Commit: "0123abcd", GoVersion: "go1.26.8"}
	ts := newServer(t, nil, func(d *api.Deps) {
		d.Build = build
		d.Tokens = writerReaderTokens(t)
		d.MetricsToken = "metrics-token-0123456789"
	})
	r := ts.get(t, "/version")
	var got buildinfo.Info
	if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got != build {
		t.Fatalf("/version: %d %s", r.status, r.body)
	}
	m := ts.get(t, "/metrics", "Authorization", "Bearer metrics-token-0123456789")
	if want := `pwsd_build_info{commit="0123abcd",go_version="go1.26.8",modified="false",version="v9.9.9"} 1`; !strings.Contains(string(m.body), want) {
		t.Fatalf("/metrics lacks %s", want)
	}
}
