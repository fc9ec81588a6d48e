package accounting

import (
	"math"
)

// The oracles below compute exact answers independently of the PLD code:
// closed forms, quadrature and brute force over outcome sequences.

// kovDelta is the exact hockey-stick divergence at e of k-fold composition
// of the generic (eps, delta) pair (Kairouz, Oh and Viswanath 2015): with
// probability (1-delta)^k no release hit its delta outcome, and then the
// loss is (k-2j) eps with binomial probability of j "-eps" outcomes.
func kovDelta(k int, eps, delta, e float64) float64 {
	pPlus := 1 / (1 + math.Exp(-eps))
	s := 0.0
	for j := 0; j <= k; j++ {
		l := float64(k-2*j) * eps
		if l <= e {
			continue
		}
		lg1, _ := math.Lgamma(float64(k + 1))
		lg2, _ := math.Lgamma(float64(j + 1))
		lg3, _ := math.Lgamma(float64(k - j + 1))
		logp := lg1 - lg2 - lg3 + float64(k-j)*math.Log(pPlus) + float64(j)*math.Log1p(-pPlus)
		s += math.Exp(logp) * -math.Expm1(e-l)
	}
	keep := math.Pow(1-delta, float64(k))
	return 1 - keep + keep*s
}

// bisectEpsilon returns the smallest e in [0, hi] with d(e) <= target for a
// nonincreasing d (hi when even d(hi) exceeds it), by bisection.
func bisectEpsilon(d func(float64) float64, target, hi float64) float64 {
	if d(0) <= target {
		return 0
	}
	lo := 0.0
	for range 200 {
		mid := (lo + hi) / 2
		if d(mid) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// kovCount is the exact number of generic (eps, delta) releases a budget
// (budgetEps, budgetDelta) admits under optimal composition.
func kovCount(budgetEps, budgetDelta, eps, delta float64) int {
	k := 0
	for kovDelta(k+1, eps, delta, budgetEps) <= budgetDelta {
		k++
	}
	return k
}

// laplaceDelta1 is the exact hockey-stick divergence at e of one
// eps-DP Laplace mechanism: 0 for e >= eps, 1 - e^((e-eps)/2) on
// [-eps, eps], 1 - e^e below.
func laplaceDelta1(eps, e float64) float64 {
	switch {
	case e >= eps:
		return 0
	case e >= -eps:
		return -math.Expm1((e - eps) / 2)
	default:
		return -math.Expm1(e)
	}
}

// laplaceComposeOnce returns e -> E[d(e - L)] for L the privacy loss of one
// eps-DP Laplace mechanism (atoms 1/2 at eps and e^-eps/2 at -eps, density
// e^(-(eps-t)/2)/4 on (-eps, eps)): the divergence of one more Laplace
// composed with a mechanism of divergence d. The integral is by composite
// Simpson's rule on n intervals.
func laplaceComposeOnce(eps float64, d func(float64) float64, n int) func(float64) float64 {
	return func(e float64) float64 {
		s := 0.5*d(e-eps) + math.Exp(-eps)/2*d(e+eps)
		h := 2 * eps / float64(n)
		f := func(t float64) float64 { return math.Exp(-(eps-t)/2) / 4 * d(e-t) }
		acc := f(-eps) + f(eps)
		for i := 1; i < n; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			acc += w * f(-eps+float64(i)*h)
		}
		return s + acc*h/3
	}
}

// bruteDelta is the exact hockey-stick divergence at e of the composition
// of the pairs (ps[m], qs[m]), by enumerating every sequence of outcomes.
func bruteDelta(ps, qs [][]float64, e float64) float64 {
	var rec func(m int, pp, qq float64) float64
	rec = func(m int, pp, qq float64) float64 {
		if m == len(ps) {
			return math.Max(0, pp-math.Exp(e)*qq)
		}
		s := 0.0
		for i := range ps[m] {
			s += rec(m+1, pp*ps[m][i], qq*qs[m][i])
		}
		return s
	}
	return rec(0, 1, 1)
}
