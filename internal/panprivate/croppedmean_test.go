package panprivate

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestCroppedMeanUnbiasedWithExactMSE checks the t-cropped mean of Fig. 2:
// over fresh samples, bits and noise the release is unbiased for the
// universe's t-cropped mean (5 SE), and its MSE equals the exact value
// t^2/(m g^2) avg pi(1-pi) + 2 t^2/(eps m)^2 + sampling variance
// (pi = P0 + g min(n, t)/t, g = P1 - P0) within 5 SE.
func TestCroppedMeanUnbiasedWithExactMSE(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const (
		n    = 4000
		m    = 1000
		tt   = 4
		runs = 300
		eps  = 0.5
	)
	counts := make([]int, n)
	for u := range counts {
		counts[u] = []int{0, 0, 0, 1, 2, 3, 5, 9}[u%8]
	}
	evs := streamFromCounts(dprand.Seeded(71), counts)
	var truth, truthSq float64
	for _, c := range counts {
		x := float64(min(c, tt))
		truth += x
		truthSq += x * x
	}
	truth /= n
	popVar := truthSq/n - truth*truth
	for _, alg := range []Algorithm{AlgorithmDwork, AlgorithmOptBern} {
		t.Run(string(alg), func(t *testing.T) {
			p0, p1 := paperPair(alg, eps)
			g := p1 - p0
			var avgPi float64
			for _, c := range counts {
				pi := p0 + g*float64(min(c, tt))/tt
				avgPi += pi * (1 - pi) / n
			}
			exact := tt*tt*avgPi/(m*g*g) + 2*tt*tt/(eps*eps*m*m) + popVar/m*float64(n-m)/float64(n-1)
			rng, noise := dprand.Seeded(72), seededNoise(73)
			cfg := Config{Estimator: KindCroppedMean, Algorithm: alg, Epsilon: eps, UniverseSize: n, SampleSize: m, T: tt, ReleaseNoise: NoisePaper}
			var errs, sq sample
			for r := 0; r < runs; r++ {
				_, est := runRelease(t, cfg, rng, noise, evs)
				errs.add(est - truth)
				sq.add((est - truth) * (est - truth))
			}
			t.Logf("%s: truth %.4f, bias %.4f ± %.4f, MSE %.4f ± %.4f (exact %.4f)", alg, truth, errs.mean(), errs.se(), sq.mean(), sq.se(), exact)
			if math.Abs(errs.mean()) > 5*errs.se() {
				t.Errorf("%s: bias %.4f beyond 5 SE (%.4f)", alg, errs.mean(), errs.se())
			}
			if math.Abs(sq.mean()-exact) > 5*sq.se() {
				t.Errorf("%s: MSE %.4f differs from exact %.4f by more than 5 SE (%.4f)", alg, sq.mean(), exact, sq.se())
			}
		})
	}
}
