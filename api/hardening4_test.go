package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
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
