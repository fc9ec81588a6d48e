package planner

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestPWSOverSbHRatio checks Section 8.2's claims without sampling, with PWS
// from the real Algorithm 3: for i <= L, pi*_i/phi_i equals
// 2(1-e^{-eps i})/(1-e^{-eps}), so it lies in [2, 2/(1-e^{-eps})] (the
// paper's [2, 2/eps] to first order in eps) and is about 2i for small i.
func TestPWSOverSbHRatio(t *testing.T) {
	t.Parallel()
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	for _, pd := range [][2]float64{{0.1, 0.01}, {0.01, 1e-6}, {0.5, 1e-3}, {1, math.Pow(2, -20)}} {
		t.Run(fmt.Sprintf("eps=%g,delta=%g", pd[0], pd[1]), func(t *testing.T) {
			eps, delta := pd[0], pd[1]
			t.Run(fmt.Sprintf("eps=%g,delta=%g", eps, delta), func(t *testing.T) {
				p := mustPrivacy(t, eps, delta)
				L := sanitize.L(p)
				n := int64(L)
				pi := sanitize.ReportingProbabilities(p, none, int(n))
				b := mustSbH(t, p, none)
				upper := 2 / (1 - math.Exp(-eps))
				for i := int64(1); i <= n; i++ {
					r := pi[i-1] / b.Reporting(i)
					want := 2 * -math.Expm1(-eps*float64(i)) / -math.Expm1(-eps)
					if relErr(r, want) > 1e-9 {
						t.Fatalf("ratio at i=%d is %.12g, closed form %.12g", i, r, want)
					}
					if r < 2*(1-1e-12) || r > upper*(1+1e-12) {
						t.Fatalf("ratio at i=%d is %g, outside [2, %g]", i, r, upper)
					}
					if x := eps * float64(i); x <= 0.2 {
						if d := math.Abs(r/(2*float64(i)) - 1); d > x/2 {
							t.Fatalf("ratio at i=%d is %g, not about 2i (relative gap %g)", i, r, d)
						}
					}
				}
			})
		})
	}
}

// TestPWSDominatesSbH checks that PWS is optimal against the baseline: for
// concave sampling schemes sampled-SbH never exceeds q and satisfies the DP
// constraints between neighbouring frequencies, and then pi_i >= phi_i at
// every frequency (Lemma 4.1).
func TestPWSDominatesSbH(t *testing.T) {
	t.Parallel()
	cases := []struct {
		eps, delta float64
		s          sanitize.Sampling
	}{
		{0.1, 1e-3, sanitize.Sampling{Scheme: sanitize.SchemeNone}},
		{1, 1e-6, sanitize.Sampling{Scheme: sanitize.SchemeNone}},
		{0.1, 1e-3, mustSampling(t, sanitize.SchemePPSWOR, 0.01, 1, nil)},
		{0.5, 1e-3, mustSampling(t, sanitize.SchemePPSWOR, 1, 1, nil)},
		{0.1, math.Pow(2, -20), mustSampling(t, sanitize.SchemePriority, 1e-4, 1, nil)},
		{0.25, 1e-4, mustSampling(t, sanitize.SchemePriority, 0.02, 1, nil)},
		{0.25, 1e-4, mustSampling(t, sanitize.SchemePPSWOR, 0.001, 0.5, nil)},
		{0.5, 1e-3, mustSampling(t, sanitize.SchemeCustom, 0, 0, []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6,
			0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1})},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s,eps=%g,tau=%g", c.s.Scheme, c.eps, c.s.Threshold), func(t *testing.T) {
			p := mustPrivacy(t, c.eps, c.delta)
			b := mustSbH(t, p, c.s)
			n := int64(4*b.threshold()) + 50
			pi := sanitize.ReportingProbabilities(p, c.s, int(n))
			prev := 0.0
			for i := int64(1); i <= n; i++ {
				phi := b.Reporting(i)
				if phi > c.s.Q(i)*(1+1e-12) {
					t.Fatalf("phi_%d = %g exceeds q = %g", i, phi, c.s.Q(i))
				}
				if phi > math.Exp(c.eps)*prev+c.delta+1e-12 || 1-phi > math.Exp(c.eps)*(1-prev)+c.delta+1e-12 {
					t.Fatalf("phi violates the DP constraints at %d", i)
				}
				if pi[i-1] < phi*(1-1e-12) {
					t.Fatalf("pi_%d = %g < phi_%d = %g", i, pi[i-1], i, phi)
				}
				prev = phi
			}
		})
	}
}
