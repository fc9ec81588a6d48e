package api

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestPlanRequestFromQuery checks that the planner's flat query parameters
// map onto the typed planner.PlanRequest (the privacy, sampling, method, g
// and estimator read as the table routes read them, with their defaults)
// and that invalid values are reported by their parameter names, all at
// once.
func TestPlanRequestFromQuery(t *testing.T) {
	t.Parallel()
	h := &handler{limits: DefaultLimits()}
	must := func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	p := must(sanitize.NewPrivacy(0.5, 1e-6)).(sanitize.Privacy)
	custom := must(sanitize.NewSampling(sanitize.SchemeCustom, 0, 0, []float64{0.1, 0.5, 1})).(sanitize.Sampling)
	ppswor := must(sanitize.NewSampling(sanitize.SchemePPSWOR, 0.2, 2, nil)).(sanitize.Sampling)
	none := must(sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)).(sanitize.Sampling)
	capG := must(estimate.ParseG("cap:10")).(estimate.G)
	identity := must(estimate.ParseG("identity")).(estimate.G)
	cases := []struct {
		name   string
		query  url.Values
		sweep  bool
		want   planner.PlanRequest
		fields []string
	}{
		{"every parameter (custom)", url.Values{"epsilon": {"0.5"}, "delta": {"1e-6"}, "scheme": {"custom"}, "probabilities": {"0.1, 0.5,1"},
			"method": {"discrete"}, "g": {"cap:10"}, "estimator": {"biased_down"}, "distribution": {"uniform"}, "a": {"2"}, "b": {"9"}, "n": {"70"},
			"sweep_from": {"1e-4"}, "sweep_to": {"0.5"}, "sweep_points": {"6"}, "alpha": {"1.5"}}, true,
			planner.PlanRequest{Privacy: p, Sampling: custom, Method: sanitize.MethodDiscrete, G: capG, Estimator: estimate.BiasedDown,
				Distribution: "uniform", Alpha: 1.5, N: 70, A: 2, B: 9, Sweep: true, SweepFrom: 1e-4, SweepTo: 0.5, SweepPoints: 6}, nil},
		{"threshold and power", url.Values{"epsilon": {"0.5"}, "delta": {"1e-6"}, "scheme": {"ppswor"}, "threshold": {"0.2"}, "power": {"2"},
			"distribution": {"zipf"}, "alpha": {"1"}}, false,
			planner.PlanRequest{Privacy: p, Sampling: ppswor, Method: sanitize.DefaultMethod, G: identity, Estimator: estimate.DefaultEstimator,
				Distribution: "zipf", Alpha: 1}, nil},
		{"absent parameters take the defaults (typed) or are zero (planner defaults)", url.Values{"epsilon": {"0.5"}, "delta": {"1e-6"}, "distribution": {"zipf"}}, false,
			planner.PlanRequest{Privacy: p, Sampling: none, Method: sanitize.DefaultMethod, G: identity, Estimator: estimate.DefaultEstimator, Distribution: "zipf"}, nil},
		{"not numbers", url.Values{"epsilon": {"x"}, "delta": {"1e-6"}, "n": {"1.5"}, "scheme": {"custom"}, "probabilities": {"0.1,y"}}, false, planner.PlanRequest{},
			[]string{"epsilon", "probabilities[1]", "n"}},
		{"privacy required", url.Values{"distribution": {"zipf"}, "alpha": {"1"}}, false, planner.PlanRequest{},
			[]string{"epsilon", "delta"}},
		{"typed and planner parameters at once", url.Values{"epsilon": {"0"}, "delta": {"1e-6"}, "method": {"x"}, "sweep_points": {"1"}}, true, planner.PlanRequest{},
			[]string{"epsilon", "method", "distribution", "sweep_points"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/plan/summary?"+tc.query.Encode(), nil)
			got, err := h.planRequest(r, tc.sweep)
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
