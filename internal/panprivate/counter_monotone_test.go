package panprivate

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// isotonicBrute is the max-min closed form of isotonic regression:
// f_i = max_{k<=i} min_{l>=i} mean(y_k..y_l).
func isotonicBrute(y []float64) []float64 {
	out := make([]float64, len(y))
	for i := range y {
		best := math.Inf(-1)
		for k := 0; k <= i; k++ {
			worst := math.Inf(1)
			for l := i; l < len(y); l++ {
				s := 0.0
				for _, v := range y[k : l+1] {
					s += v
				}
				worst = math.Min(worst, s/float64(l-k+1))
			}
			best = math.Max(best, worst)
		}
		out[i] = best
	}
	return out
}

// TestMonotoneOutputs checks MonotoneOutputs against the max-min closed form
// of isotonic regression clamped to [max(prev,0), t], and the properties it
// promises: non-decreasing, within [0, t], at or above prev; and on real
// counter outputs it is never further from the true counts (Euclidean) than
// the raw outputs.
func TestMonotoneOutputs(t *testing.T) {
	t.Parallel()
	rng := dprand.Seeded(4)
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(12)
		first := int64(1 + rng.IntN(5))
		prev := rng.Float64()*float64(first) - 1 // in [-1, first-1]
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.NormFloat64()*3 + float64(i)/2
		}
		got := MonotoneOutputs(y, first, prev)
		want := isotonicBrute(y)
		for i := range want {
			want[i] = math.Min(math.Max(want[i], math.Max(prev, 0)), float64(first+int64(i)))
			if math.Abs(got[i]-want[i]) > 1e-9 {
				t.Fatalf("trial %d: y %v prev %g first %d: got %v, want %v", trial, y, prev, first, got, want)
			}
			if got[i] < 0 || got[i] > float64(first+int64(i)) || got[i] < prev || (i > 0 && got[i] < got[i-1]) {
				t.Fatalf("trial %d: %v breaks the constraints", trial, got)
			}
		}
	}
	for _, alg := range []CounterAlgorithm{CounterSimple, CounterTree, CounterRandomizedResponse} {
		t.Run(string(alg), func(t *testing.T) {
			c, err := NewCounter(CounterConfig{Algorithm: alg, Epsilon: 0.5, Horizon: 400}, seededNoise(3), dprand.Seeded(5))
			if err != nil {
				t.Fatal(err)
			}
			bits := make([]int, 400)
			for i := range bits {
				bits[i] = int(rng.Uint64() & 1)
			}
			prev, truth := 0.0, 0
			var rawErr, monoErr float64
			for start := 0; start < 400; start += 100 {
				raw, err := CounterSteps(c, bits[start:start+100])
				if err != nil {
					t.Fatal(err)
				}
				mono := MonotoneOutputs(raw, int64(start+1), prev)
				prev = mono[len(mono)-1]
				for i := range raw {
					truth += bits[start+i]
					rawErr += (raw[i] - float64(truth)) * (raw[i] - float64(truth))
					monoErr += (mono[i] - float64(truth)) * (mono[i] - float64(truth))
				}
			}
			// Per batch the projection is onto a convex set holding the truth
			// only when the truth is >= prev; across batches prev is itself an
			// estimate, so check the pooled error, not per batch.
			t.Logf("%s: RMSE raw %.2f, monotone %.2f", alg, math.Sqrt(rawErr/400), math.Sqrt(monoErr/400))
			if monoErr > rawErr*1.05 {
				t.Errorf("monotone outputs are further from the truth (%g) than the raw ones (%g)", monoErr, rawErr)
			}
		})
	}
	if err := CounterPostprocess("smooth").Validate(); err == nil {
		t.Error("unknown postprocess accepted")
	}
}
