package service

import (
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/workload"
)

// TestZipfMatrixWithinReleaseWork guards the realistic workload against the
// release work bound: every release of the Zipf matrix (docs/performance.md:
// the client's ppswor sample of the default key log at tau 1e-4, 1e-5 and
// 1e-6, eps 1, 0.5 and 0.1, delta 1e-6) costs, as releaseCost counts it, at
// most a quarter of DefaultMaxReleaseWork, so a recalibration of the bound
// that would refuse (or nearly refuse) what users run fails here. Exact
// arithmetic on public parameters and a seeded sample: no timing.
func TestZipfMatrixWithinReleaseWork(t *testing.T) {
	t.Parallel()
	z := workload.DefaultZipf()
	for _, tau := range []float64{1e-4, 1e-5, 1e-6} {
		sample, err := z.SamplePPSWOR(tau, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{1, 0.5, 0.1} {
			p := sanitize.Privacy{Epsilon: eps, Delta: 1e-6}
			r := newReleaseStretches(p)
			for i, e := range sample {
				r.add(i, float64(e.Frequency))
			}
			total := r.runningCost(p, func(int64, float64) {})
			t.Logf("tau %g eps %g: %d keys, %d chunks, %.3g cells (%.2f%% of the default bound)", tau, eps, len(sample), len(r.elems), total, 100*total/DefaultMaxReleaseWork)
			if total > DefaultMaxReleaseWork/2 {
				t.Errorf("tau %g eps %g: the Zipf release costs %.3g cells, above half of DefaultMaxReleaseWork (%d)", tau, eps, total, DefaultMaxReleaseWork)
			}
		}
	}
}
