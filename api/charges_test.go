package api_test

import (
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// TestDatasetCharges: POST /v1/datasets/{name}/charges charges an external
// release by basic composition. Guarantee checked: a charge that fits is
// recorded (201, ledger kind "external"), one that would overspend is refused
// with 409 and changes nothing, and bad input is a 4xx naming the field.
func TestDatasetCharges(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"logs","epsilon_budget":1,"delta_budget":1e-5}`); r.status != 201 {
			t.Fatalf("dataset: %d %s", r.status, r.body)
		}
		cases := []struct {
			name, path, body string
			status           int
			field            string
		}{
			{"fits", "/v1/datasets/logs/charges", `{"epsilon":0.6,"delta":5e-6,"description":"beam run 1"}`, 201, ""},
			{"overspends epsilon", "/v1/datasets/logs/charges", `{"epsilon":0.6,"delta":1e-6}`, 409, ""},
			{"overspends delta", "/v1/datasets/logs/charges", `{"epsilon":0.1,"delta":6e-6}`, 409, ""},
			{"unknown dataset", "/v1/datasets/nope/charges", `{"epsilon":0.1,"delta":0}`, 404, ""},
			{"epsilon missing", "/v1/datasets/logs/charges", `{"delta":0}`, 422, "epsilon"},
			{"epsilon zero", "/v1/datasets/logs/charges", `{"epsilon":0,"delta":0}`, 422, "epsilon"},
			{"delta one", "/v1/datasets/logs/charges", `{"epsilon":0.1,"delta":1}`, 422, "delta"},
			{"not json", "/v1/datasets/logs/charges", `{`, 400, ""},
			{"fits exactly the rest", "/v1/datasets/logs/charges", `{"epsilon":0.4,"delta":5e-6}`, 201, ""},
			{"budget spent", "/v1/datasets/logs/charges", `{"epsilon":0.001,"delta":0}`, 409, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := ts.postJSON(t, c.path, c.body)
				if r.status != c.status {
					t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
				}
				if c.status >= 400 {
					p := r.problem(t)
					if c.field != "" && !slices.Contains(p.fields(), c.field) {
						t.Fatalf("problem names %v, want %q", p.fields(), c.field)
					}
				}
			})
		}
		var dv struct {
			Spent    struct{ Epsilon, Delta float64 } `json:"spent"`
			Releases []struct {
				Kind    string  `json:"kind"`
				Ref     string  `json:"ref"`
				Epsilon float64 `json:"epsilon"`
			} `json:"releases"`
		}
		ts.get(t, "/v1/datasets/logs").json(t, &dv)
		if len(dv.Releases) != 2 || math.Abs(dv.Spent.Epsilon-1) > 1e-9 || math.Abs(dv.Spent.Delta-1e-5) > 1e-15 {
			t.Fatalf("ledger after two charges that fit: %+v", dv)
		}
		for _, rel := range dv.Releases {
			if rel.Kind != "external" || rel.Ref == "" {
				t.Fatalf("release %+v, want kind external with a ref", rel)
			}
		}
	})
}
