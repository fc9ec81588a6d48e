package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/store"
)

// TestPLDDatasetAPI: a dataset created without accounting composes by PLD
// and admits 128 external charges of (0.1, 1e-9) in a budget (5, 1e-5)
// (basic composition: 50); the 129th is a 409 that says how it was
// composed and charges nothing; GET shows the spend both ways and counts
// the further releases asked for; bad accounting and bad counts are 422s
// naming the field or parameter as written.
func TestPLDDatasetAPI(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"q","epsilon_budget":5,"delta_budget":1e-5}`); r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		for i := range 128 {
			if r := ts.postJSON(t, "/v1/datasets/q/charges", `{"epsilon":0.1,"delta":1e-9}`); r.status != http.StatusCreated {
				t.Fatalf("charge %d: %d %s", i+1, r.status, r.body)
			}
		}
		r := ts.postJSON(t, "/v1/datasets/q/charges", `{"epsilon":0.1,"delta":1e-9}`)
		if r.status != http.StatusConflict || !strings.Contains(r.problem(t).Detail, "composed by privacy loss distributions") {
			t.Fatalf("charge 129: %d %s, want a 409 naming the composition", r.status, r.body)
		}
		var v api.DatasetView
		r = ts.get(t, "/v1/datasets/q?epsilon=0.1&delta=1e-9")
		r.json(t, &v)
		if v.Accounting != "pld" || len(v.Releases) != 128 || v.Releases[0].Mechanism != "generic" ||
			!(v.Spent.Epsilon > 4.5 && v.Spent.Epsilon <= 5) || fmt.Sprintf("%.6g", v.SpentBasic.Epsilon) != "12.8" ||
			v.Admits == nil || v.Admits.Releases != 0 {
			t.Fatalf("dataset view %d %s", r.status, r.body)
		}
		if got := v.Spent.Epsilon + v.Remaining.Epsilon; fmt.Sprintf("%.9g", got) != "5" {
			t.Errorf("spent %g + remaining %g != budget 5", v.Spent.Epsilon, v.Remaining.Epsilon)
		}

		if r := ts.postJSON(t, "/v1/datasets", `{"name":"one","epsilon_budget":1,"delta_budget":1}`); r.status != http.StatusCreated {
			t.Fatalf("create with delta budget 1: %d %s", r.status, r.body)
		}
		if d := ts.get(t, "/v1/datasets/one"); !strings.Contains(string(d.body), `"accounting":"basic"`) {
			t.Errorf("a delta budget of 1 defaults to basic: %s", d.body)
		}
		for _, c := range []struct {
			name, method, path, body string
			fields                   []string
		}{
			{"unknown accounting", http.MethodPost, "/v1/datasets", `{"name":"x","epsilon_budget":1,"delta_budget":1e-5,"accounting":"fancy"}`, []string{"accounting"}},
			{"pld with delta 1", http.MethodPost, "/v1/datasets", `{"name":"x","epsilon_budget":1,"delta_budget":1,"accounting":"pld"}`, []string{"accounting"}},
			{"epsilon not a number", http.MethodGet, "/v1/datasets/q?epsilon=abc&delta=0", "", []string{"epsilon"}},
			{"delta missing", http.MethodGet, "/v1/datasets/q?epsilon=0.1", "", []string{"delta"}},
			{"epsilon too large", http.MethodGet, "/v1/datasets/q?epsilon=51&delta=0", "", []string{"epsilon"}},
			{"delta one", http.MethodGet, "/v1/datasets/q?epsilon=0.1&delta=1", "", []string{"delta"}},
		} {
			var r response
			if c.method == http.MethodPost {
				r = ts.postJSON(t, c.path, c.body)
			} else {
				r = ts.get(t, c.path)
			}
			if r.status != http.StatusUnprocessableEntity || !slices.Equal(r.problem(t).fields(), c.fields) {
				t.Errorf("%s: %d %s, want 422 naming %v", c.name, r.status, r.body, c.fields)
			}
		}
		if r := ts.get(t, "/v1/datasets/nope?epsilon=0.1&delta=0"); r.status != http.StatusNotFound {
			t.Errorf("admits of an unknown dataset: %d %s", r.status, r.body)
		}
	})
}
