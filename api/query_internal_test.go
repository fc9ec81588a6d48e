package api

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/planner"
)

// TestPlanRequestFromQuery checks that the planner's flat query parameters
// map onto the typed planner.PlanRequest and that values that are not
// numbers are reported by their parameter names, all at once.
func TestPlanRequestFromQuery(t *testing.T) {
	h := &handler{limits: DefaultLimits()}
	cases := []struct {
		name   string
		query  url.Values
		want   planner.PlanRequest
		fields []string
	}{
		{"every parameter", url.Values{"epsilon": {"0.5"}, "delta": {"1e-6"}, "scheme": {"custom"}, "probabilities": {"0.1, 0.5,1"},
			"method": {"discrete"}, "g": {"cap:10"}, "estimator": {"biased_down"}, "distribution": {"uniform"}, "a": {"2"}, "b": {"9"}, "n": {"70"},
			"sweep_from": {"1e-4"}, "sweep_to": {"0.5"}, "sweep_points": {"6"}, "alpha": {"1.5"}, "threshold": {"0.2"}, "power": {"2"}},
			planner.PlanRequest{Epsilon: 0.5, Delta: 1e-6, Scheme: "custom", Threshold: 0.2, Power: 2, Probabilities: []float64{0.1, 0.5, 1},
				Method: "discrete", G: "cap:10", Estimator: "biased_down", Distribution: "uniform", Alpha: 1.5, N: 70, A: 2, B: 9,
				SweepFrom: 1e-4, SweepTo: 0.5, SweepPoints: 6}, nil},
		{"absent parameters are zero (planner defaults)", url.Values{"distribution": {"zipf"}},
			planner.PlanRequest{Distribution: "zipf"}, nil},
		{"not numbers", url.Values{"epsilon": {"x"}, "n": {"1.5"}, "probabilities": {"0.1,y"}}, planner.PlanRequest{},
			[]string{"epsilon", "n", "probabilities[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/plan/summary?"+tc.query.Encode(), nil)
			got, err := h.planRequest(r)
			if tc.fields == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
				return
			}
			var p *Problem
			if err == nil {
				t.Fatal("accepted")
			}
			if _, isField := checks.Fields(err); isField {
				t.Fatal("want a query problem")
			}
			p = err.(*Problem)
			var names []string
			for _, f := range p.Errors {
				names = append(names, f.Field)
			}
			if !reflect.DeepEqual(names, tc.fields) {
				t.Fatalf("fields %v, want %v", names, tc.fields)
			}
		})
	}
}
