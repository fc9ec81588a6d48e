package planner

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// SbH is the baseline of Section 8.1 and Appendix G: Stability-based
// Histograms, optionally followed by weighted sampling of the noisy values
// ("sampled-SbH"). A key of frequency i gets the noisy value x = i + Lap(1/eps)
// and is reported when x > T = 1 + ln(1/delta)/eps; with sampling it is then
// kept with probability q(x), the client's sampling probability evaluated at
// the noisy value, and a reported key is estimated by g(x)/q(x).
//
// Every quantity is computed from the exact expressions of Appendix G: in
// closed form where the integrand is piecewise (quadratic x exponential) —
// no sampling, ppswor and priority with power 1, custom schemes, and g =
// identity, count, cap or a power with 2P in {0, 1, 2} — and otherwise by
// adaptive Gauss-Legendre quadrature to about 1e-13 relative error.
//
// For a custom scheme the sampling probability of a noisy value x is
// q_{ceil(x)} (token j stands for (j-1, j]), with q_i = q_n beyond the list.
//
// An SbH is immutable and safe for concurrent use.
type SbH struct {
	privacy  sanitize.Privacy
	sampling sanitize.Sampling
	k        kernel
	runs     []qRun // custom only: maximal runs of equal q
	// none is the same baseline without sampling, used for frequencies
	// whose whole integration window has q = 1 in float64 (nil when the
	// scheme is none).
	none *SbH
}

// qRun is a maximal interval (lo, hi] on which a custom q is constant.
type qRun struct{ lo, hi, q float64 }

// newSbH validates the parameters and returns the baseline for them.
func newSbH(p sanitize.Privacy, s sanitize.Sampling) (*SbH, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("planner: sbh privacy: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("planner: sbh sampling: %w", err)
	}
	b := &SbH{privacy: p, sampling: s, k: kernel{eps: p.Epsilon, t: sbhThreshold(p)}}
	if s.Scheme != sanitize.SchemeNone {
		b.none = &SbH{privacy: p, sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, k: b.k}
	}
	if s.Scheme == sanitize.SchemeCustom {
		for j, q := range s.Probabilities {
			lo := float64(j)
			if n := len(b.runs); n > 0 && b.runs[n-1].q == q {
				b.runs[n-1].hi = lo + 1
				continue
			}
			b.runs = append(b.runs, qRun{lo: lo, hi: lo + 1, q: q})
		}
		b.runs[len(b.runs)-1].hi = math.Inf(1)
	}
	return b, nil
}

// sbhThreshold returns T = 1 + ln(1/delta)/eps, the reporting threshold of
// the stability-based histogram; with it, phi_i = (delta/2) e^{eps (i-1)}
// below T (eq. 49).
func sbhThreshold(p sanitize.Privacy) float64 {
	return 1 + math.Log(1/p.Delta)/p.Epsilon
}

// threshold returns T.
func (b *SbH) threshold() float64 { return b.k.t }

// q returns the sampling probability applied to a noisy value x > 0.
func (b *SbH) q(x float64) float64 {
	s := b.sampling
	switch s.Scheme {
	case sanitize.SchemePPSWOR:
		return -math.Expm1(-s.Threshold * math.Pow(x, s.Power))
	case sanitize.SchemePriority:
		return math.Min(1, s.Threshold*math.Pow(x, s.Power))
	case sanitize.SchemeCustom:
		j := sort.Search(len(b.runs), func(j int) bool { return b.runs[j].hi >= x })
		return b.runs[j].q
	default:
		return 1
	}
}

// kink returns where a ppswor/priority q stops being smooth (priority reaches
// 1 at tau^{-1/p}), or NaN.
func (b *SbH) kink() float64 {
	s := b.sampling
	if s.Scheme == sanitize.SchemePriority {
		return math.Pow(1/s.Threshold, 1/s.Power)
	}
	return math.NaN()
}

// windowRuns returns the custom runs that meet the region carrying K_i.
func (b *SbH) windowRuns(i float64) []qRun {
	lo := math.Max(b.k.t, i-window/b.k.eps)
	hi := math.Max(b.k.t, i) + window/b.k.eps
	first := sort.Search(len(b.runs), func(j int) bool { return b.runs[j].hi > lo })
	last := first
	for last < len(b.runs) && b.runs[last].lo < hi {
		last++
	}
	return b.runs[first:last]
}

// breaks returns the points near i where q or g is not smooth.
func (b *SbH) breaks(g estimate.G, i float64) []float64 {
	var out []float64
	if x := b.kink(); !math.IsNaN(x) {
		out = append(out, x)
	}
	if g.Kind == estimate.GCap {
		out = append(out, g.Param)
	}
	for _, r := range b.windowRuns(i) {
		out = append(out, r.lo, r.hi)
	}
	return out
}

// power1 reports whether a ppswor/priority scheme has power 1.
func (b *SbH) power1() bool { return b.sampling.Power == 1 }

// qTerms returns q on [T, inf) as exact terms near i, or false.
func (b *SbH) qTerms(i float64) ([]expPoly, bool) {
	inf := math.Inf(1)
	s := b.sampling
	switch {
	case s.Scheme == sanitize.SchemeNone:
		return []expPoly{{lo: b.k.t, hi: inf, c: [3]float64{1}}}, true
	case s.Scheme == sanitize.SchemePPSWOR && b.power1():
		return []expPoly{{lo: b.k.t, hi: inf, c: [3]float64{1}}, {lo: b.k.t, hi: inf, c: [3]float64{-1}, gamma: s.Threshold}}, true
	case s.Scheme == sanitize.SchemePriority && b.power1():
		kx := 1 / s.Threshold
		return []expPoly{{lo: b.k.t, hi: kx, c: [3]float64{0, s.Threshold}}, {lo: kx, hi: inf, c: [3]float64{1}}}, true
	case s.Scheme == sanitize.SchemeCustom:
		var out []expPoly
		for _, r := range b.windowRuns(i) {
			out = append(out, expPoly{lo: r.lo, hi: r.hi, c: [3]float64{r.q}})
		}
		return out, true
	}
	return nil, false
}

// missTerms returns 1 - q on [T, inf) as exact terms near i, or false.
func (b *SbH) missTerms(i float64) ([]expPoly, bool) {
	s := b.sampling
	switch {
	case s.Scheme == sanitize.SchemeNone:
		return nil, true
	case s.Scheme == sanitize.SchemePPSWOR && b.power1():
		return []expPoly{{lo: b.k.t, hi: math.Inf(1), c: [3]float64{1}, gamma: s.Threshold}}, true
	case s.Scheme == sanitize.SchemePriority && b.power1():
		return []expPoly{{lo: b.k.t, hi: 1 / s.Threshold, c: [3]float64{1, -s.Threshold}}}, true
	case s.Scheme == sanitize.SchemeCustom:
		var out []expPoly
		for _, r := range b.windowRuns(i) {
			if r.q < 1 {
				out = append(out, expPoly{lo: r.lo, hi: r.hi, c: [3]float64{1 - r.q}})
			}
		}
		return out, true
	}
	return nil, false
}

// mono is coef * x^deg on [lo, hi).
type mono struct {
	lo, hi, coef float64
	deg          int
}

// gMonos returns g on [T, inf) as monomials of degree <= 2 (power 2 when
// squared is false), or false when g is not of that form.
func gMonos(g estimate.G, t float64, squared bool) ([]mono, bool) {
	inf := math.Inf(1)
	mul := 1
	if squared {
		mul = 2
	}
	switch g.Kind {
	case estimate.GIdentity:
		return []mono{{lo: t, hi: inf, coef: 1, deg: mul}}, true
	case estimate.GCount:
		return []mono{{lo: t, hi: inf, coef: 1, deg: 0}}, true
	case estimate.GCap:
		c := g.Param
		if c <= t {
			return []mono{{lo: t, hi: inf, coef: math.Pow(c, float64(mul)), deg: 0}}, true
		}
		return []mono{{lo: t, hi: c, coef: 1, deg: mul}, {lo: c, hi: inf, coef: math.Pow(c, float64(mul)), deg: 0}}, true
	case estimate.GPower:
		d := g.Param * float64(mul)
		if d == 0 || d == 1 || d == 2 {
			return []mono{{lo: t, hi: inf, coef: 1, deg: int(d)}}, true
		}
	}
	return nil, false
}

// toTerms turns monomials into exact terms.
func toTerms(ms []mono) []expPoly {
	out := make([]expPoly, 0, len(ms))
	for _, m := range ms {
		var c [3]float64
		c[m.deg] = m.coef
		out = append(out, expPoly{lo: m.lo, hi: m.hi, c: c})
	}
	return out
}

// clip returns m restricted to [lo, hi) with its coefficient scaled by s.
func clip(ms []mono, lo, hi, s float64) []mono {
	var out []mono
	for _, m := range ms {
		a, z := math.Max(m.lo, lo), math.Min(m.hi, hi)
		if z > a {
			out = append(out, mono{lo: a, hi: z, coef: m.coef * s, deg: m.deg})
		}
	}
	return out
}

// g2qTerms returns g(x)^2/q(x) on [T, inf) as exact terms near i, or false.
func (b *SbH) g2qTerms(g estimate.G, i float64) ([]expPoly, bool) {
	ms, ok := gMonos(g, b.k.t, true)
	if !ok {
		return nil, false
	}
	s := b.sampling
	switch {
	case s.Scheme == sanitize.SchemeNone:
		return toTerms(ms), true
	case s.Scheme == sanitize.SchemeCustom:
		var out []mono
		for _, r := range b.windowRuns(i) {
			out = append(out, clip(ms, r.lo, r.hi, 1/r.q)...)
		}
		return toTerms(out), true
	case s.Scheme == sanitize.SchemePriority && b.power1():
		kx := 1 / s.Threshold
		below := clip(ms, b.k.t, kx, 1/s.Threshold) // g^2/(tau x)
		for j := range below {
			if below[j].deg == 0 {
				return nil, false // 1/x is not of the closed form
			}
			below[j].deg--
		}
		return toTerms(append(below, clip(ms, kx, math.Inf(1), 1)...)), true
	}
	return nil, false
}

// at returns the baseline to use for frequency x: b itself, or b.none when
// q = 1 on the whole window that carries the integrals (q is
// non-decreasing), which makes every quantity closed-form.
func (b *SbH) at(x float64) *SbH {
	if b.none != nil && b.q(math.Max(b.k.t, x-window/b.k.eps)) == 1 {
		return b.none
	}
	return b
}

// Reporting returns phi_i, the probability that a key of frequency i >= 1 is
// reported by sampled-SbH (eq. 49 without sampling, eq. 51 for ppswor).
func (b *SbH) Reporting(i int64) float64 {
	phi, _ := b.reporting(float64(i))
	return phi
}

// reporting returns phi_i and 1 - phi_i, each computed directly so that
// neither loses precision when the other is close to 1.
func (b *SbH) reporting(x float64) (phi, miss float64) {
	b = b.at(x)
	below := b.k.cdfBelow(b.k.t, x)
	qt, ok1 := b.qTerms(x)
	mt, ok2 := b.missTerms(x)
	if ok1 && ok2 {
		return b.k.exact(qt, x), below + b.k.exact(mt, x)
	}
	br := b.breaks(estimate.G{Kind: estimate.GCount}, x)
	phi = b.k.numericX(b.q, br, x)
	miss = below + b.k.numericX(b.miss, br, x)
	return phi, miss
}

// stats returns the Appendix G quantities of the sampled-SbH estimate of
// g(i) for a key of frequency i >= 1: Reported = phi_i, Expected = E_i
// (eq. 46, which does not depend on q), Bias = E_i - g(i), the variance of
// the estimate and MSE_i = Var_i + Bias_i^2 (eq. 48).
func (b *SbH) stats(g estimate.G, i int64) (estimate.FrequencyStats, error) {
	if err := g.Validate(); err != nil {
		return estimate.FrequencyStats{}, fmt.Errorf("planner: sbh g: %w", err)
	}
	if i < 1 {
		return estimate.FrequencyStats{}, errors.New("planner: sbh frequency must be at least 1")
	}
	x := float64(i)
	b = b.at(x)
	gi := g.Eval(x)
	phi, miss := b.reporting(x)

	var e float64
	gm, gExact := gMonos(g, b.k.t, false)
	if gExact {
		e = b.k.exact(toTerms(gm), x)
	} else {
		e = b.k.numericX(g.Eval, b.breaks(g, x), x)
	}

	// Var = E[X^2] - E[X]^2 with X = g(x)/q(x) when reported, 0 otherwise.
	// Without sampling some cases are closed-form without cancellation;
	// otherwise the closed form of E[X^2] is used unless the subtraction
	// cancels more than six digits, and then the variance is integrated
	// around its mean.
	variance := b.flatVariance(g, x, phi, miss)
	if t2, ok := b.g2qTerms(g, x); ok && math.IsNaN(variance) {
		m2 := b.k.exact(t2, x)
		if v := m2 - e*e; v > 1e-6*m2 {
			variance = v
		}
	}
	if math.IsNaN(variance) {
		variance = b.centredVariance(g, x, e, miss)
	}
	bias := e - gi
	return estimate.FrequencyStats{
		Frequency: i, G: gi, Reported: phi, Expected: e, Bias: bias,
		Variance: variance, MSE: variance + bias*bias,
	}, nil
}

// flatVariance returns the variance of the estimate without sampling when
// it has a form free of cancellation, or NaN: X = g(x) when reported. For g
// constant on the window it is Bernoulli, g^2 phi (1 - phi); for g = identity
// far above T (x - window/eps >= T) it is the Laplace variance 2/eps^2
// (exact up to e^-52 relative).
func (b *SbH) flatVariance(g estimate.G, x, phi, miss float64) float64 {
	if b.sampling.Scheme != sanitize.SchemeNone {
		return math.NaN()
	}
	lo := x - window/b.k.eps
	var c float64
	switch {
	case g.Kind == estimate.GCount || (g.Kind == estimate.GPower && g.Param == 0):
		c = 1
	case g.Kind == estimate.GCap && g.Param <= math.Max(lo, b.k.t):
		c = g.Param
	case (g.Kind == estimate.GIdentity || (g.Kind == estimate.GPower && g.Param == 1)) && lo >= b.k.t:
		return 2 / (b.k.eps * b.k.eps)
	default:
		return math.NaN()
	}
	return c * c * phi * miss
}

// centredVariance integrates the variance of the estimate around its mean e
// (no cancellation): miss e^2 + int_T^inf (g(y) - e q(y))^2 / q(y) dLap, with
// g(y) - e q(y) = (g(y) - g(x)) + (g(x) - e) + e (1 - q(y)) evaluated term by
// term as functions of y - x.
func (b *SbH) centredVariance(g estimate.G, x, e, miss float64) float64 {
	off := g.Eval(x) - e
	centred := func(t float64) float64 {
		y := x + t
		d := gDelta(g, x, t) + off + e*b.miss(y)
		return d * d / b.q(y)
	}
	return math.Max(0, miss*e*e+b.k.numeric(centred, b.breaks(g, x), x))
}

// miss returns 1 - q(y) without cancellation.
func (b *SbH) miss(y float64) float64 {
	s := b.sampling
	switch s.Scheme {
	case sanitize.SchemePPSWOR:
		return math.Exp(-s.Threshold * math.Pow(y, s.Power))
	case sanitize.SchemePriority:
		return math.Max(0, 1-s.Threshold*math.Pow(y, s.Power))
	case sanitize.SchemeCustom:
		return 1 - b.q(y)
	default:
		return 0
	}
}

// gDelta returns g(x+t) - g(x) for x >= 1 and x+t >= 1 without cancellation.
func gDelta(g estimate.G, x, t float64) float64 {
	switch g.Kind {
	case estimate.GIdentity:
		return t
	case estimate.GCount:
		return 0
	case estimate.GCap:
		c := g.Param
		switch {
		case x >= c && x+t >= c:
			return 0
		case x <= c && x+t <= c:
			return t
		}
		return math.Min(x+t, c) - math.Min(x, c)
	case estimate.GPower:
		return math.Pow(x, g.Param) * math.Expm1(g.Param*math.Log1p(t/x))
	}
	return math.NaN()
}

// reportingProbabilities returns phi_1..phi_n.
func (b *SbH) reportingProbabilities(n int64) []float64 {
	out := make([]float64, max(n, 0))
	for j := range out {
		out[j] = b.Reporting(int64(j) + 1)
	}
	return out
}

// estimatorRows returns Stats for frequencies 1..n.
func (b *SbH) estimatorRows(g estimate.G, n int64) ([]estimate.FrequencyStats, error) {
	out := make([]estimate.FrequencyStats, 0, max(n, 0))
	for i := int64(1); i <= n; i++ {
		st, err := b.stats(g, i)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// reportedKeys returns the expected number of keys of dist that sampled-SbH
// reports.
func (b *SbH) reportedKeys(dist []estimate.FrequencyCount) float64 {
	var s float64
	for _, fc := range dist {
		if fc.Keys > 0 {
			s += fc.Keys * b.Reporting(fc.Frequency)
		}
	}
	return s
}

// sumStats returns the eq. 12 bias, variance, MSE and NRMSE of the
// sampled-SbH estimate of sum_x g(w_x) over a selection with frequency
// distribution dist.
func (b *SbH) sumStats(g estimate.G, dist []estimate.FrequencyCount) (estimate.SumStats, error) {
	var out estimate.SumStats
	for _, fc := range dist {
		if !(fc.Keys >= 0) || math.IsInf(fc.Keys, 0) {
			return estimate.SumStats{}, errors.New("planner: key counts must be finite and nonnegative")
		}
		if fc.Keys == 0 {
			continue
		}
		st, err := b.stats(g, fc.Frequency)
		if err != nil {
			return estimate.SumStats{}, err
		}
		out.Keys += fc.Keys
		out.Statistic += fc.Keys * st.G
		out.Bias += fc.Keys * st.Bias
		out.Variance += fc.Keys * st.Variance
	}
	if !(out.Statistic > 0) {
		return estimate.SumStats{}, errors.New("planner: the selection is empty")
	}
	out.Expected = out.Statistic + out.Bias
	out.MSE = out.Variance + out.Bias*out.Bias
	out.NRMSE = math.Sqrt(out.MSE) / out.Statistic
	return out, nil
}

// SbHReporting returns the sampled-SbH reporting probabilities phi_1..phi_n
// (with s = none: plain SbH, eq. 49).
func SbHReporting(p sanitize.Privacy, s sanitize.Sampling, n int64) ([]float64, error) {
	b, err := newSbH(p, s)
	if err != nil {
		return nil, err
	}
	return b.reportingProbabilities(n), nil
}

// SbHEstimatorRows returns the per-frequency expected value, bias, variance
// and MSE of the sampled-SbH estimate of g for frequencies 1..n.
func SbHEstimatorRows(p sanitize.Privacy, s sanitize.Sampling, g estimate.G, n int64) ([]estimate.FrequencyStats, error) {
	b, err := newSbH(p, s)
	if err != nil {
		return nil, err
	}
	return b.estimatorRows(g, n)
}
