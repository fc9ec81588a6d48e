package planner

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

func mustPrivacy(t testing.TB, eps, delta float64) sanitize.Privacy {
	t.Helper()
	p, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSampling(t testing.TB, scheme sanitize.Scheme, tau, power float64, probs []float64) sanitize.Sampling {
	t.Helper()
	s, err := sanitize.NewSampling(scheme, tau, power, probs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustSbH(t testing.TB, p sanitize.Privacy, s sanitize.Sampling) *SbH {
	t.Helper()
	b, err := newSbH(p, s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
}

var identity = estimate.G{Kind: estimate.GIdentity}

// TestSbHReportingEq49 checks that plain SbH reports a key of frequency i with
// probability (delta/2) e^{eps (i-1)} below T (eq. 49) and with the Laplace
// tail 1 - e^{-eps (i-T)}/2 above it, to 1e-12.
func TestSbHReportingEq49(t *testing.T) {
	t.Parallel()
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	for _, pd := range [][2]float64{{0.1, 0.01}, {0.01, 1e-6}, {1, math.Pow(2, -20)}, {0.5, 1e-3}, {2, 1}} {
		t.Run(fmt.Sprintf("eps=%g,delta=%g", pd[0], pd[1]), func(t *testing.T) {
			eps, delta := pd[0], pd[1]
			t.Run(fmt.Sprintf("eps=%g,delta=%g", eps, delta), func(t *testing.T) {
				b := mustSbH(t, mustPrivacy(t, eps, delta), none)
				T := 1 + math.Log(1/delta)/eps
				if got := b.threshold(); relErr(got, T) > 1e-15 {
					t.Fatalf("T = %v, want %v", got, T)
				}
				for i := int64(1); float64(i) <= 3*T+10; i++ {
					x := float64(i)
					var want float64
					if x < T {
						want = delta / 2 * math.Exp(eps*(x-1))
					} else {
						want = 1 - 0.5*math.Exp(-eps*(x-T))
						if alt := 1 - math.Exp(-(x-1)*eps)/(2*delta); math.Abs(alt-want) > 1e-12 {
							t.Fatalf("eq. 49 upper branch disagrees with the Laplace tail at i=%d", i)
						}
					}
					if got := b.Reporting(i); relErr(got, want) > 1e-12 {
						t.Fatalf("phi_%d = %.17g, want %.17g", i, got, want)
					}
				}
			})
		})
	}
}

// eq51 is the paper's closed form for ppswor with power 1.
func eq51(eps, delta, tau float64, i float64) float64 {
	T := 1 + math.Log(1/delta)/eps
	if i <= T {
		return 0.5 * math.Exp(-eps*(T-i)) * (1 - eps/(eps+tau)*math.Exp(-T*tau))
	}
	v := 1 - 0.5*math.Exp(-eps*(i-T)) - eps/(2*(eps+tau))*math.Exp(-i*tau)
	if eps != tau {
		v += eps / (2 * (eps - tau)) * (math.Exp(-eps*(i-T)-tau*T) - math.Exp(-tau*i))
	} else {
		v -= 0.5 * eps * (i - T) * math.Exp(-eps*i)
	}
	return v
}

// priorityClosed is the paper's closed form (Appendix G.3) for priority
// sampling with power 1.
func priorityClosed(eps, delta, tau, i float64) float64 {
	T := 1 + math.Log(1/delta)/eps
	if T >= 1/tau {
		if i >= T {
			return 1 - 0.5/delta*math.Exp(-(i-1)*eps)
		}
		return 0.5 * delta * math.Exp(eps*(i-1))
	}
	switch {
	case i < T:
		return tau / 2 * ((T+1/eps)*math.Exp((i-T)*eps) - 1/eps*math.Exp((i-1/tau)*eps))
	case i < 1/tau:
		return tau * (i - 0.5/eps*math.Exp(eps*(i-1/tau)) - 0.5*(T-1/eps)*math.Exp(eps*(T-i)))
	default:
		return 1 - 0.5*tau/eps*math.Exp(eps*(1/tau-i)) - 0.5*tau*(T-1/eps)*math.Exp(eps*(T-i))
	}
}

// TestSbHReportingSampledClosedForms checks sampled-SbH reporting against
// the paper's closed forms (eq. 51 for ppswor, G.3 for priority), and the
// quadrature path against the closed-form path, for every i up to 4T.
func TestSbHReportingSampledClosedForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scheme          sanitize.Scheme
		eps, delta, tau float64
		closed          func(eps, delta, tau, i float64) float64
	}{
		{sanitize.SchemePPSWOR, 0.1, 1e-3, 0.01, eq51},
		{sanitize.SchemePPSWOR, 0.5, 1e-6, 0.5, eq51}, // eps = tau branch
		{sanitize.SchemePPSWOR, 1, 1e-3, 2, eq51},
		{sanitize.SchemePPSWOR, 0.1, 1e-3, 1e-5, eq51},
		{sanitize.SchemePriority, 0.1, 1e-3, 0.001, priorityClosed},
		{sanitize.SchemePriority, 0.5, 1e-3, 0.02, priorityClosed},
		{sanitize.SchemePriority, 0.5, 1e-3, 0.5, priorityClosed}, // T >= 1/tau
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s,eps=%g,tau=%g", c.scheme, c.eps, c.tau), func(t *testing.T) {
			b := mustSbH(t, mustPrivacy(t, c.eps, c.delta), mustSampling(t, c.scheme, c.tau, 1, nil))
			for i := int64(1); float64(i) <= 4*b.threshold(); i++ {
				x := float64(i)
				got := b.Reporting(i)
				want := c.closed(c.eps, c.delta, c.tau, x)
				if relErr(got, want) > 1e-9 {
					t.Fatalf("phi_%d = %.15g, closed form %.15g", i, got, want)
				}
				num := b.k.numericX(b.q, b.breaks(identity, x), x)
				if relErr(num, got) > 1e-10 {
					t.Fatalf("quadrature phi_%d = %.15g, closed form %.15g", i, num, got)
				}
				if got > c.closed(c.eps, c.delta, c.tau, x+1)+1e-15 {
					t.Fatalf("phi is not monotone at %d", i)
				}
			}
		})
	}
}

// TestSbHExpectationAndMSEEq47Eq50 checks E_i (eq. 47) and MSE_i (eq. 50,
// with the sign of the (i-T)/eps term as derived in Appendix G.1) for SbH
// without sampling and g = identity, and that E_i does not depend on q.
func TestSbHExpectationAndMSEEq47Eq50(t *testing.T) {
	t.Parallel()
	for _, pd := range [][2]float64{{0.1, math.Pow(2, -20)}, {0.5, 1e-3}, {1, 1e-6}} {
		t.Run(fmt.Sprintf("eps=%g,delta=%g", pd[0], pd[1]), func(t *testing.T) {
			eps, delta := pd[0], pd[1]
			p := mustPrivacy(t, eps, delta)
			b := mustSbH(t, p, sanitize.Sampling{Scheme: sanitize.SchemeNone})
			bs := mustSbH(t, p, mustSampling(t, sanitize.SchemePPSWOR, 0.01, 1, nil))
			T := b.threshold()
			for i := int64(1); float64(i) <= 4*T; i++ {
				x := float64(i)
				var e, mse float64
				if x > T {
					d := math.Exp(-eps * (x - T))
					e = x - 0.5*d*(T-1/eps)
					mse = 2/(eps*eps) - d*(T*T/2-x*T+(x-T)/eps+1/(eps*eps))
				} else {
					d := math.Exp(-eps * (T - x))
					e = 0.5 * d * (T + 1/eps)
					mse = x*x + d*(T*T/2-x*T-(x-T)/eps+1/(eps*eps))
				}
				st, err := b.stats(identity, i)
				if err != nil {
					t.Fatal(err)
				}
				if relErr(st.Expected, e) > 1e-12 || relErr(st.MSE, mse) > 1e-9 {
					t.Fatalf("eps=%g i=%d: E=%.15g MSE=%.15g, want %.15g %.15g", eps, i, st.Expected, st.MSE, e, mse)
				}
				if math.Abs(st.Bias-(e-x)) > 1e-9*x {
					t.Fatalf("bias %g, want %g", st.Bias, e-x)
				}
				ss, err := bs.stats(identity, i)
				if err != nil {
					t.Fatal(err)
				}
				if relErr(ss.Expected, e) > 1e-12 {
					t.Fatalf("E_i depends on q: %g vs %g", ss.Expected, e)
				}
			}
		})
	}
}

// TestSbHCentredVarianceMatchesClosedForm checks the quadrature used when the
// closed form would cancel (or does not exist) against the closed form, for
// every scheme with one and several g.
func TestSbHCentredVarianceMatchesClosedForm(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.25, 1e-4)
	schemes := []sanitize.Sampling{
		{Scheme: sanitize.SchemeNone},
		mustSampling(t, sanitize.SchemePriority, 0.004, 1, nil),
		mustSampling(t, sanitize.SchemeCustom, 0, 0, []float64{0.01, 0.01, 0.05, 0.1, 0.1, 0.1, 0.2, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3,
			0.3, 0.35, 0.35, 0.35, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.45, 0.45, 0.45, 0.45, 0.45, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6, 0.6,
			0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.8, 0.8, 0.8, 0.9}),
	}
	gs := []estimate.G{identity, {Kind: estimate.GCap, Param: 50}, {Kind: estimate.GPower, Param: 0.5}}
	for _, s := range schemes {
		b := mustSbH(t, p, s)
		for _, g := range gs {
			for _, i := range []int64{1, 10, 30, 40, 45, 60, 100, 200, 400} {
				x := float64(i)
				t2, ok := b.g2qTerms(g, x)
				// g^2/q = 2500/(tau x) on [50, 1/tau) has no closed form.
				wantClosed := !(s.Scheme == sanitize.SchemePriority && g.Kind == estimate.GCap)
				if ok != wantClosed {
					t.Fatalf("%s %s: closed form available = %v, want %v", s.Scheme, g, ok, wantClosed)
				}
				if !ok {
					continue
				}
				st, err := b.stats(g, i)
				if err != nil {
					t.Fatal(err)
				}
				_, miss := b.reporting(x)
				exactVar := b.k.exact(t2, x) - st.Expected*st.Expected
				numVar := b.centredVariance(g, x, st.Expected, miss)
				gi := g.Eval(x)
				if math.Abs(numVar-exactVar) > 1e-8*math.Abs(exactVar)+1e-12*gi*gi {
					t.Fatalf("%s %s i=%d: quadrature variance %.12g, closed form %.12g", s.Scheme, g, i, numVar, exactVar)
				}
			}
		}
	}
}

// TestSbHHugeFrequencyNoCancellation checks that the variance stays right
// (2/eps^2 for q = 1) at frequencies where E[X^2] - E[X]^2 would cancel
// every digit.
func TestSbHHugeFrequencyNoCancellation(t *testing.T) {
	t.Parallel()
	b := mustSbH(t, mustPrivacy(t, 0.1, 1e-3), sanitize.Sampling{Scheme: sanitize.SchemeNone})
	// float64 spacing near i limits the accuracy to about 1e-16 i.
	for _, c := range []struct {
		i   int64
		tol float64
	}{{1e6, 1e-9}, {1e9, 1e-6}, {1e12, 1e-3}} {
		t.Run(fmt.Sprintf("i=%d", c.i), func(t *testing.T) {
			i := c.i
			st, err := b.stats(identity, i)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(st.Variance, 200) > c.tol || math.Abs(st.Bias) > 1e-3 || st.Reported != 1 {
				t.Fatalf("i=%d: %+v", i, st)
			}
		})
	}
}

// simulateSbH draws the sampled-SbH estimate of g(i) n times: x = i +
// Lap(1/eps), reported when x > T and a uniform draw is below q(x), estimate
// g(x)/q(x), else 0. It returns the reporting rate, the mean estimate, the
// mean squared error and their standard errors.
func simulateSbH(t *testing.T, b *SbH, g estimate.G, i int64, n int, seed uint64) (rate, mean, mse, seRate, seMean, seMSE float64) {
	t.Helper()
	lap := dprandtest.NewLaplace(dprand.Seeded(seed))
	rng := dprand.Seeded(seed + 1)
	gi := g.Eval(float64(i))
	var s1, s2, e1, e2, r float64
	for k := 0; k < n; k++ {
		z, err := lap.Laplace(1 / b.privacy.Epsilon)
		if err != nil {
			t.Fatal(err)
		}
		x := float64(i) + z
		var est float64
		if x > b.threshold() {
			if q := b.q(x); rng.Float64() < q {
				est = g.Eval(x) / q
				r++
			}
		}
		s1 += est
		s2 += est * est
		d := (est - gi) * (est - gi)
		e1 += d
		e2 += d * d
	}
	fn := float64(n)
	rate, mean, mse = r/fn, s1/fn, e1/fn
	seRate = math.Sqrt(rate * (1 - rate) / fn)
	seMean = math.Sqrt((s2/fn - mean*mean) / fn)
	seMSE = math.Sqrt((e2/fn - mse*mse) / fn)
	return
}

// TestSbHMonteCarlo checks the exact reporting probability, expected value
// and MSE of sampled-SbH against a fixed-seed simulation of the mechanism,
// within 5 standard errors, for closed-form and quadrature paths alike.
func TestSbHMonteCarlo(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-3) // T = 14.8
	cases := []struct {
		name string
		s    sanitize.Sampling
		g    estimate.G
	}{
		{"none", sanitize.Sampling{Scheme: sanitize.SchemeNone}, identity},
		{"ppswor", mustSampling(t, sanitize.SchemePPSWOR, 0.05, 1, nil), identity},
		{"priority", mustSampling(t, sanitize.SchemePriority, 0.04, 1, nil), identity},
		{"ppswor-p2-power1.5", mustSampling(t, sanitize.SchemePPSWOR, 0.002, 2, nil), estimate.G{Kind: estimate.GPower, Param: 1.5}},
		{"custom-count", mustSampling(t, sanitize.SchemeCustom, 0, 0, []float64{0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.3, 0.4, 0.5, 0.5, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.8, 0.8, 0.9, 0.95}), estimate.G{Kind: estimate.GCount}},
	}
	const n = 150000
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mustSbH(t, p, c.s)
			for k, i := range []int64{8, 16, 30} {
				st, err := b.stats(c.g, i)
				if err != nil {
					t.Fatal(err)
				}
				rate, mean, mse, seR, seM, seE := simulateSbH(t, b, c.g, i, n, uint64(100*ci+k+1))
				if math.Abs(rate-st.Reported) > 5*seR+1e-12 {
					t.Errorf("i=%d: simulated rate %.5f, exact %.5f (se %.2g)", i, rate, st.Reported, seR)
				}
				if math.Abs(mean-st.Expected) > 5*seM+1e-12 {
					t.Errorf("i=%d: simulated mean %.5f, exact %.5f (se %.2g)", i, mean, st.Expected, seM)
				}
				if math.Abs(mse-st.MSE) > 5*seE+1e-12 {
					t.Errorf("i=%d: simulated MSE %.5f, exact %.5f (se %.2g)", i, mse, st.MSE, seE)
				}
			}
		})
	}
}

// TestSbHValidation checks that invalid parameters cannot be used.
func TestSbHValidation(t *testing.T) {
	t.Parallel()
	if _, err := newSbH(sanitize.Privacy{Epsilon: 0, Delta: 0.1}, sanitize.Sampling{Scheme: sanitize.SchemeNone}); err == nil {
		t.Error("epsilon 0 accepted")
	}
	if _, err := newSbH(mustPrivacy(t, 1, 0.1), sanitize.Sampling{Scheme: "bogus"}); err == nil {
		t.Error("unknown scheme accepted")
	}
	b := mustSbH(t, mustPrivacy(t, 1, 0.1), sanitize.Sampling{Scheme: sanitize.SchemeNone})
	if _, err := b.stats(identity, 0); err == nil {
		t.Error("frequency 0 accepted")
	}
	if _, err := b.stats(estimate.G{}, 1); err == nil {
		t.Error("zero g accepted")
	}
}
