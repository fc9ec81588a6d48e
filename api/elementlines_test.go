package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// TestReleaseWorkNamesEveryElement: a release past PWSD_MAX_RELEASE_WORK is
// a 422 naming every element past the limit — in NDJSON with its line, in
// CSV with its line in the message, in JSON by index — and an element error
// found after reading (a repeated key) names its line too.
func TestReleaseWorkNamesEveryElement(t *testing.T) {
	t.Parallel()
	st := store.NewMemory()
	ts := newServer(t, st, withServiceConfig(t, st, func(c *service.Config) { c.MaxReleaseWork = 200_000 }))
	// eps 1 (L = 13.8): an isolated stretch of a keys release costs about
	// 15 x (552 + 30 + 128) = 10,650 cells, so the limit admits about 18 of
	// the 40 keys far apart; the rest are named (at most 20).
	var nd, csv, js strings.Builder
	nd.WriteString(`{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"},"release":"keys"}` + "\n")
	csv.WriteString("key,frequency\n")
	js.WriteString(`{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"},"release":"keys","elements":[`)
	for i := range 40 {
		f := (i + 1) * 100_000
		nd.WriteString(`{"key":"k` + strconv.Itoa(i) + `","frequency":` + strconv.Itoa(f) + "}\n")
		csv.WriteString("k" + strconv.Itoa(i) + "," + strconv.Itoa(f) + "\n")
		if i > 0 {
			js.WriteString(",")
		}
		js.WriteString(`{"key":"k` + strconv.Itoa(i) + `","frequency":` + strconv.Itoa(f) + `}`)
	}
	js.WriteString("]}")
	r := ts.do(t, http.MethodPost, "/v1/samples", "application/x-ndjson", nd.String())
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("NDJSON: status %d %s", r.status, r.body)
	}
	p := lineProblem(t, r)
	if len(p.Errors) < 10 {
		t.Fatalf("NDJSON: %d elements named, want every one past the limit: %s", len(p.Errors), r.body)
	}
	for _, fe := range p.Errors {
		var i int
		if _, err := fmt.Sscanf(fe.Field, "elements[%d].frequency", &i); err != nil || fe.Line != i+2 || !strings.Contains(fe.Message, "PWSD_MAX_RELEASE_WORK") {
			t.Errorf("NDJSON: %+v: want element i on line i+2, naming the setting", fe)
		}
	}
	r = ts.do(t, http.MethodPost, "/v1/samples?epsilon=1&delta=1e-6&scheme=none&release=keys", "text/csv", csv.String())
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("CSV: status %d %s", r.status, r.body)
	}
	for _, fe := range lineProblem(t, r).Errors {
		var i int
		if _, err := fmt.Sscanf(fe.Field, "elements[%d].frequency", &i); err != nil || !strings.HasSuffix(fe.Message, fmt.Sprintf("(CSV line %d)", i+2)) {
			t.Errorf("CSV: %+v: want element i named with CSV line i+2", fe)
		}
	}
	r = ts.postJSON(t, "/v1/samples", js.String())
	if p := lineProblem(t, r); r.status != http.StatusUnprocessableEntity || len(p.Errors) < 10 || p.Errors[0].Line != 0 {
		t.Errorf("JSON: status %d %s, want the elements named by index", r.status, r.body)
	}
	dup := `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"}}` + "\n" + `{"key":"a","frequency":3}` + "\n\n" + `{"key":"a","frequency":4}` + "\n"
	r = ts.do(t, http.MethodPost, "/v1/samples", "application/x-ndjson", dup)
	if p := lineProblem(t, r); r.status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Line != 4 {
		t.Errorf("repeated key: status %d %s, want line 4", r.status, r.body)
	}
}

// lineProblem decodes a problem's field errors with their lines.
func lineProblem(t *testing.T, r response) (p struct {
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
		Line    int    `json:"line"`
	} `json:"errors"`
}) {
	t.Helper()
	r.problem(t) // the common checks
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
