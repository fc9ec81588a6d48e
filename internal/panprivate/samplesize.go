package panprivate

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/optimize"

	"github.com/pwsd/pwsd/internal/checks"
)

// sampleSizeBound returns m(delta1..delta4) = max{m1, m2, m3} of Section 3.2
// of Digalakis et al. (Theorems 3.3 and 4.3): the sample size for which the
// estimate is within alpha of the density with probability at least 1 - beta,
// splitting alpha by delta1, delta2 and beta by delta3, delta4:
//
//	m1 = ln(2/(beta d3)) / (2 alpha^2 (1-d1)^2)            sampling
//	m2 = 8 ln(2/(beta d4)) / (eps^2 alpha^2 d1^2 (1-d2)^2) bits, dwork
//	m2 = ln(2/(beta d4)) / (2 tanh^2(eps/2) alpha^2 d1^2 (1-d2)^2)  bits, optbern
//	m3 = ln(1/(beta (1-d3-d4))) / (eps alpha d1 d2)         Laplace noise
//
// Arguments outside 0 < d_i < 1, d3 + d4 < 1 give +Inf.
func sampleSizeBound(alg Algorithm, eps, alpha, beta, d1, d2, d3, d4 float64) float64 {
	for _, d := range []float64{d1, d2, d3, d4} {
		if !(d > 0 && d < 1) {
			return math.Inf(1)
		}
	}
	if !(d3+d4 < 1) {
		return math.Inf(1)
	}
	a2 := alpha * alpha
	m1 := math.Log(2/(beta*d3)) / (2 * a2 * (1 - d1) * (1 - d1))
	var m2 float64
	switch alg {
	case AlgorithmDwork:
		m2 = 8 * math.Log(2/(beta*d4)) / (eps * eps * a2 * d1 * d1 * (1 - d2) * (1 - d2))
	default:
		th := math.Tanh(eps / 2)
		m2 = math.Log(2/(beta*d4)) / (2 * th * th * a2 * d1 * d1 * (1 - d2) * (1 - d2))
	}
	m3 := math.Log(1/(beta*(1-d3-d4))) / (eps * alpha * d1 * d2)
	return max(m1, m2, m3)
}

// OptimalSampleSize returns m* of Section 3.2: the minimum of sampleSizeBound
// over 0 < d1, d2, d3, d4 < 1 with d3 + d4 < 1, for the dwork or optbern
// form of m2 (ppds uses optbern's). The minimum is found numerically with
// Nelder-Mead (gonum/optimize) on an unconstrained parametrization (logistic
// d1, d2; softmax d3, d4, 1-d3-d4), restarted from several points; the
// result is the real-valued minimum (round up for a sample size).
func OptimalSampleSize(alg Algorithm, eps, alpha, beta float64) (float64, error) {
	m, _, err := optimalSampleSize(alg, eps, alpha, beta)
	return m, err
}

// optimalSampleSize implements OptimalSampleSize and also returns the
// minimizing deltas.
func optimalSampleSize(alg Algorithm, eps, alpha, beta float64) (float64, [4]float64, error) {
	var deltas [4]float64
	if alg != AlgorithmDwork && alg != AlgorithmOptBern && alg != AlgorithmPPDS {
		return 0, deltas, checks.Errorf("algorithm", "must be dwork, optbern or ppds")
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, deltas, checks.Errorf("epsilon", "must be a finite number greater than 0")
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, deltas, checks.Errorf("accuracy.alpha", "must be greater than 0 and less than 1")
	}
	if !(beta > 0 && beta < 1) {
		return 0, deltas, checks.Errorf("accuracy.beta", "must be greater than 0 and less than 1")
	}
	obj := func(z []float64) float64 {
		d1, d2, d3, d4 := sampleSizeDeltas(z)
		return math.Log(sampleSizeBound(alg, eps, alpha, beta, d1, d2, d3, d4))
	}
	best := math.Inf(1)
	starts := [][]float64{
		{0, 0, 0, 0},
		{2, -1, 0, 1},
		{1, 1, -1, 1},
		{3, 0, -1, 2},
		{-1, 1, 1, 0},
	}
	for _, z0 := range starts {
		res, err := optimize.Minimize(optimize.Problem{Func: obj}, z0, &optimize.Settings{
			Converger:       &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 200},
			FuncEvaluations: 20000,
		}, &optimize.NelderMead{})
		if err != nil && res == nil {
			continue
		}
		if res != nil && res.F < best {
			best = res.F
			d1, d2, d3, d4 := sampleSizeDeltas(res.X)
			deltas = [4]float64{d1, d2, d3, d4}
		}
	}
	if math.IsInf(best, 1) || math.IsNaN(best) {
		return 0, deltas, fmt.Errorf("panprivate: optimal sample size did not converge")
	}
	return math.Exp(best), deltas, nil
}

// sampleSizeDeltas maps unconstrained z to deltas in the feasible region.
func sampleSizeDeltas(z []float64) (d1, d2, d3, d4 float64) {
	logistic := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	d1, d2 = logistic(z[0]), logistic(z[1])
	mx := max(z[2], z[3], 0)
	e3, e4, e0 := math.Exp(z[2]-mx), math.Exp(z[3]-mx), math.Exp(-mx)
	s := e3 + e4 + e0
	return d1, d2, e3 / s, e4 / s
}
