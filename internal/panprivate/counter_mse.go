package panprivate

import (
	"math"
	"math/bits"
)

// CounterPredictedMSE returns the mean squared error of the counter's output,
// averaged over steps t = 1..horizon, for the algorithms whose error does not
// depend on the input: simple, randomized_response and tree. It returns NaN
// for cascading (whose error depends on the stream) and for invalid inputs.
func CounterPredictedMSE(alg CounterAlgorithm, epsilon float64, horizon int64) float64 {
	if counterValidateEpsilon("epsilon", epsilon) != nil || counterValidateHorizon("horizon", horizon) != nil {
		return math.NaN()
	}
	T := float64(horizon)
	switch alg {
	case CounterSimple:
		// Var at step t is 2t/eps^2; the mean over t = 1..T is (T+1)/eps^2.
		return (T + 1) / (epsilon * epsilon)
	case CounterRandomizedResponse:
		return (T + 1) / 2 * rrStepVariance(epsilon)
	case CounterTree:
		L := counterTreeLevels(horizon)
		b := float64(L) / epsilon
		return 4 * b * b * counterTreeMeanNodes(horizon, L)
	}
	return math.NaN()
}

// counterTreeLevels returns the number of tree levels L in [1, bits.Len(T)]
// minimising the predicted mean squared error L^2 * mean_t nodes(t, L).
func counterTreeLevels(horizon int64) int {
	best, bestL := math.Inf(1), 1
	for L := 1; L <= bits.Len64(uint64(horizon)); L++ {
		if v := float64(L*L) * counterTreeMeanNodes(horizon, L); v < best {
			best, bestL = v, L
		}
	}
	return bestL
}

// counterTreeMeanNodes returns the mean over t = 1..T of the number of
// released nodes whose sum is the output at step t, for a tree with L levels:
// floor(t/B) whole blocks of B = 2^(L-1) steps plus popcount(t mod B).
func counterTreeMeanNodes(horizon int64, L int) float64 {
	B := uint64(1) << (L - 1)
	n := uint64(horizon) + 1 // t = 0..T; t = 0 contributes nothing
	full, rem := n/B, n%B
	blocks := float64(B)*float64(full)*float64(full-1)/2 + float64(full)*float64(rem)
	pop := float64(full)*float64(counterPopcountSum(B)) + float64(counterPopcountSum(rem))
	return (blocks + pop) / float64(horizon)
}

// counterPopcountSum returns sum_{x=0}^{n-1} popcount(x).
func counterPopcountSum(n uint64) uint64 {
	var s uint64
	for k := 0; k < 64 && uint64(1)<<k < n; k++ {
		period := uint64(1) << (k + 1)
		half := uint64(1) << k
		s += n / period * half
		if r := n % period; r > half {
			s += r - half
		}
	}
	return s
}
