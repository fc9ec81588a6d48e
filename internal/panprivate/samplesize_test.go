package panprivate

import (
	"fmt"
	"math"
	"testing"
)

// TestOptimalSampleSizeIsMinimal checks m* of Section 3.2: the returned
// deltas attain it (max{m1, m2, m3} = m*), so at m* every error probability
// is within its share of beta and p1 + p2 + p3 <= beta; and a grid search
// over the deltas finds nothing smaller by more than 0.5%.
func TestOptimalSampleSizeIsMinimal(t *testing.T) {
	t.Parallel()
	for _, alg := range []Algorithm{AlgorithmDwork, AlgorithmOptBern} {
		for _, tc := range []struct{ eps, alpha, beta float64 }{
			{0.5, 0.05, 0.05}, {0.1, 0.1, 0.01}, {0.25, 0.02, 0.1},
		} {
			t.Run(fmt.Sprintf("%s,eps=%g,alpha=%g,beta=%g", alg, tc.eps, tc.alpha, tc.beta), func(t *testing.T) {
				m, d, err := optimalSampleSize(alg, tc.eps, tc.alpha, tc.beta)
				if err != nil {
					t.Fatal(err)
				}
				if got := sampleSizeBound(alg, tc.eps, tc.alpha, tc.beta, d[0], d[1], d[2], d[3]); math.Abs(got-m) > 1e-6*m {
					t.Errorf("%s %+v: deltas give %v, m* = %v", alg, tc, got, m)
				}
				// The error probabilities of Theorem 3.3 / 4.3 at m = ceil(m*).
				mc := math.Ceil(m)
				a := tc.alpha
				p1 := 2 * math.Exp(-2*mc*a*a*(1-d[0])*(1-d[0]))
				var p2 float64
				if alg == AlgorithmDwork {
					p2 = 2 * math.Exp(-mc*tc.eps*tc.eps*a*a*d[0]*d[0]*(1-d[1])*(1-d[1])/8)
				} else {
					th := math.Tanh(tc.eps / 2)
					p2 = 2 * math.Exp(-2*mc*th*th*a*a*d[0]*d[0]*(1-d[1])*(1-d[1]))
				}
				p3 := math.Exp(-tc.eps * a * mc * d[0] * d[1])
				if p1+p2+p3 > tc.beta*(1+1e-9) {
					t.Errorf("%s %+v: p1+p2+p3 = %v > beta", alg, tc, p1+p2+p3)
				}
				best := math.Inf(1)
				const steps = 24
				for i := 1; i < steps; i++ {
					for j := 1; j < steps; j++ {
						for k := 1; k < steps; k++ {
							for l := 1; k+l < steps; l++ {
								v := sampleSizeBound(alg, tc.eps, tc.alpha, tc.beta,
									float64(i)/steps, float64(j)/steps, float64(k)/steps, float64(l)/steps)
								best = math.Min(best, v)
							}
						}
					}
				}
				if best < m*(1-0.005) {
					t.Errorf("%s %+v: grid found %v below m* = %v", alg, tc, best, m)
				}
			})
		}
	}
}

// TestOptimalSampleSizeShape checks the comparisons of Figure 1: OptBern
// needs several times fewer samples than Dwork, and m* grows as epsilon,
// alpha or beta shrink.
func TestOptimalSampleSizeShape(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	for _, eps := range []float64{0.05, 0.2, 0.5} {
		dw, _ := OptimalSampleSize(AlgorithmDwork, eps, 0.05, 0.05)
		ob, _ := OptimalSampleSize(AlgorithmOptBern, eps, 0.05, 0.05)
		if ob*2.5 > dw {
			t.Errorf("eps=%g: optbern m* %v not well below dwork %v", eps, ob, dw)
		}
		smallerEps, _ := OptimalSampleSize(AlgorithmOptBern, eps/2, 0.05, 0.05)
		smallerAlpha, _ := OptimalSampleSize(AlgorithmOptBern, eps, 0.025, 0.05)
		smallerBeta, _ := OptimalSampleSize(AlgorithmOptBern, eps, 0.05, 0.005)
		if !(smallerEps > ob && smallerAlpha > ob && smallerBeta > ob) {
			t.Errorf("eps=%g: m* not monotone: %v %v %v vs %v", eps, smallerEps, smallerAlpha, smallerBeta, ob)
		}
	}
	if _, err := OptimalSampleSize(AlgorithmDwork, 0.5, 0, 0.1); err == nil {
		t.Error("alpha 0 accepted")
	}
}
