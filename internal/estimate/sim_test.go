package estimate

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestSimulationMatchesEq12 sanitizes a population of 10^5 keys end to end
// (ppswor sampling with q_w, then sanitize.Table.DrawAll, then Estimate on the
// released values) in R independent replicates with a fixed seed, for both
// methods and for the MLE and biased-down estimators (g = identity), and
// compares with the eq. 12 predictions from the estimator tables:
//
//   - mean of the sum estimate vs E[s^] = s + Bias, within 5 standard errors;
//   - variance of the sum estimate, twice: the per-key pooled estimator
//     sum_x (a_x - E_{w_x})^2 (unbiased for Var[s^] because keys are
//     independent) within 5 standard errors computed from the fourth
//     moments of the rows, and the replicate sample variance within
//     chi-square(R-1) bounds at 1e-6.
//
// The test checks its own power: the pooled variance must be resolved to
// better than 6% (so a 30% error fails) and, for biased-down, the bias must
// exceed 10 standard errors of the mean (so dropping it fails).
func TestSimulationMatchesEq12(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const (
		keys = 100_000
		reps = 16
	)
	p := mustPrivacy(0.5, 1e-3)
	s := mustSampling(sanitize.SchemePPSWOR, 0.05, nil)

	// Population: Zipf-like frequencies, fixed seed.
	pop := dprand.Seeded(42)
	w := make([]int64, keys)
	var maxW int64
	counts := map[int64]float64{}
	for k := range w {
		w[k] = min(2000, int64(math.Ceil(math.Pow(1-pop.Float64(), -1/1.3))))
		maxW = max(maxW, w[k])
		counts[w[k]]++
	}
	var dist []FrequencyCount
	for f := int64(1); f <= maxW; f++ {
		if c := counts[f]; c > 0 {
			dist = append(dist, FrequencyCount{Frequency: f, Keys: c})
		}
	}

	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			st := realCase{name: string(m), p: p, s: s, method: m}.table(t)
			tabs := map[Estimator]*Table{}
			mu4 := map[Estimator][]float64{} // fourth central moment per frequency
			for _, est := range []Estimator{MLE, BiasedDown} {
				tab, err := Build(st, Spec{MaxFrequency: maxW, G: mustG("identity"), Estimator: est})
				if err != nil {
					t.Fatal(err)
				}
				tabs[est] = tab
				m4 := make([]float64, maxW+1)
				for _, fc := range dist {
					row := rowAt(t, st, fc.Frequency)
					masses, toks, err := tab.rowTokens(row.Pieces)
					if err != nil {
						t.Fatal(err)
					}
					e := tab.Frequencies[fc.Frequency-1].Expected
					v := math.Max(0, 1-row.Pi) * math.Pow(e, 4)
					for k, mass := range masses {
						v += mass * math.Pow(toks[k].Estimate-e, 4)
					}
					m4[fc.Frequency] = v
				}
				mu4[est] = m4
			}

			rng := dprand.Seeded(7)
			sums := map[Estimator][]float64{}
			pooled := map[Estimator]float64{}
			var freqs []int64
			var outs []sanitize.Outcome
			for r := 0; r < reps; r++ {
				freqs = freqs[:0]
				for _, f := range w {
					if rng.Float64() < s.Q(f) {
						freqs = append(freqs, f)
					}
				}
				var err error
				if outs, err = st.DrawAll(freqs, rng, outs); err != nil {
					t.Fatal(err)
				}
				// Keys not sampled or not reported contribute a = 0.
				for est, tab := range tabs {
					sum, dev := 0.0, 0.0
					reported := make(map[int64]float64) // per frequency: sum of (a - E)^2 - E^2 over reported keys
					for k, o := range outs {
						if !o.Reported {
							continue
						}
						a, err := tab.Estimate(o.Value)
						if err != nil {
							t.Fatal(err)
						}
						e := tab.Frequencies[freqs[k]-1].Expected
						sum += a
						reported[freqs[k]] += (a-e)*(a-e) - e*e
					}
					for _, fc := range dist {
						e := tab.Frequencies[fc.Frequency-1].Expected
						dev += fc.Keys*e*e + reported[fc.Frequency]
					}
					sums[est] = append(sums[est], sum)
					pooled[est] += dev
				}
			}

			for est, tab := range tabs {
				pred, err := tab.SumStats(dist)
				if err != nil {
					t.Fatal(err)
				}
				var v4 float64
				for _, fc := range dist {
					vi := tab.Frequencies[fc.Frequency-1].Variance
					v4 += fc.Keys * (mu4[est][fc.Frequency] - vi*vi)
				}
				name := string(m) + " " + string(est)

				mean, sq := 0.0, 0.0
				for _, x := range sums[est] {
					mean += x
				}
				mean /= reps
				for _, x := range sums[est] {
					sq += (x - mean) * (x - mean)
				}
				sampleVar := sq / (reps - 1)
				seMean := math.Sqrt(pred.Variance / reps)
				if z := (mean - pred.Expected) / seMean; math.Abs(z) > 5 {
					t.Errorf("%s: mean of the sum estimate %g, predicted %g (z = %.2f)", name, mean, pred.Expected, z)
				}
				sePooled := math.Sqrt(reps * v4)
				if z := (pooled[est] - reps*pred.Variance) / sePooled; math.Abs(z) > 5 {
					t.Errorf("%s: pooled per-key variance %g, predicted %g (z = %.2f)", name, pooled[est]/reps, pred.Variance, z)
				}
				// chi-square with 15 degrees of freedom: P(< 1.0) and P(> 62) are below 1e-6.
				if ratio := sampleVar / pred.Variance; ratio*(reps-1) < 1.0 || ratio*(reps-1) > 62 {
					t.Errorf("%s: replicate variance %g, predicted %g", name, sampleVar, pred.Variance)
				}
				if rel := sePooled / (reps * pred.Variance); rel > 0.06 {
					t.Errorf("%s: the pooled variance is only resolved to %.1f%%: the test lacks power", name, 100*rel)
				}
				if est == BiasedDown && math.Abs(pred.Bias) < 10*seMean {
					t.Errorf("%s: bias %g is within 10 standard errors %g: the test cannot see it", name, pred.Bias, seMean)
				}
				t.Logf("%s: s=%g E=%g (sim %g) bias=%g var=%g (pooled %g +- %.1f%%, replicates %g) NRMSE=%.4f", name,
					pred.Statistic, pred.Expected, mean, pred.Bias, pred.Variance, pooled[est]/reps, 100*sePooled/(reps*pred.Variance), sampleVar, pred.NRMSE)
			}
		})
	}
}

// rowAt returns row i through Rows. (sanitize.Table.Row(i) returned the
// stationary row unshifted when this was written.)
func rowAt(t *testing.T, src RowSource, i int64) sanitize.Row {
	t.Helper()
	var row sanitize.Row
	if err := src.Rows(i, i, func(r sanitize.Row) bool { row = r.Clone(); return false }); err != nil || row.Frequency != i {
		t.Fatalf("row %d: %v", i, err)
	}
	return row
}
