package api_test

import (
	"fmt"
	"math"
	"testing"
)

// TestAuditCertificate: GET /v1/tables/audit runs the exact hockey-stick
// audit. Oracles: for the pair (0, 1), where frequency 0 is never reported,
// the losses have closed forms in pi_1 (from the reporting table):
// up = pi_1 and down = max(0, 1 - e^eps (1 - pi_1)). Over a range of rows of
// a correct sanitizer the audit holds: both excesses are <= tolerance*delta,
// and each direction's row lies in the range.
func TestAuditCertificate(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, tc := range []struct{ eps, delta, tau float64 }{{0.5, 1e-3, 0}, {1, 1e-6, 0.05}, {0.1, 1e-2, 0}} {
		for _, m := range []string{"max_separation", "discrete"} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,tau=%g,%s", tc.eps, tc.delta, tc.tau, m), func(t *testing.T) {
				params := fmt.Sprintf("epsilon=%g&delta=%g", tc.eps, tc.delta)
				if tc.tau > 0 {
					params += fmt.Sprintf("&scheme=ppswor&threshold=%g", tc.tau)
				}
				base := params + "&method=" + m
				var rep struct{ Pi []float64 }
				ts.get(t, "/v1/tables/reporting?"+params+"&max_frequency=1").json(t, &rep)
				type dir struct {
					Loss      float64 `json:"loss"`
					Excess    float64 `json:"excess_over_delta"`
					Frequency int64   `json:"frequency"`
				}
				var a struct {
					Up, Down  dir
					Holds     bool
					Tolerance float64
				}
				r := ts.get(t, "/v1/tables/audit?"+base+"&frequency=1")
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				r.json(t, &a)
				pi1 := rep.Pi[0]
				wantDown := math.Max(0, 1-math.Exp(tc.eps)*(1-pi1))
				if math.Abs(a.Up.Loss-pi1) > 1e-12 || math.Abs(a.Down.Loss-wantDown) > 1e-12 {
					t.Errorf("pair (0,1): up %g down %g, want %g and %g", a.Up.Loss, a.Down.Loss, pi1, wantDown)
				}
				r = ts.get(t, "/v1/tables/audit?"+base+"&frequency=1-300")
				r.json(t, &a)
				if !a.Holds || a.Up.Excess > a.Tolerance*tc.delta || a.Down.Excess > a.Tolerance*tc.delta {
					t.Errorf("a correct sanitizer fails its audit: %s", r.body)
				}
				for _, d := range []dir{a.Up, a.Down} {
					if d.Frequency < 1 || d.Frequency > 300 || math.Abs(d.Excess-(d.Loss-tc.delta)) > 1e-15 {
						t.Errorf("inconsistent direction %+v", d)
					}
				}
			})
		}
	}
}
