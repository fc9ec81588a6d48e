package panprivate

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestCalibratedReleaseNoise: by default (release_noise = calibrated) every
// release charges exactly the asked epsilon, because its noise is the papers'
// noise scaled by cost/epsilon (checked draw by draw with identical noise
// streams); with release_noise = paper the noise is the papers' and the
// charge is its exact cost.
func TestCalibratedReleaseNoise(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100},
		{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100},
		{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100},
		{Estimator: KindCroppedMean, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100, T: 3},
		{Estimator: KindHeavyHitters, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 50, K: 4, MaxOccurrences: 64},
	} {
		paperCfg, calCfg := cfg, cfg // calCfg: the default
		paperCfg.ReleaseNoise = NoisePaper
		paper := mustNew(t, paperCfg, dprand.Seeded(5))
		cal := mustNew(t, calCfg, dprand.Seeded(5))
		if cal.Config().ReleaseNoise != NoiseCalibrated {
			t.Fatalf("%s: default release noise %q, want calibrated", cfg.Estimator, cal.Config().ReleaseNoise)
		}
		cost := paper.Privacy().PerRelease
		if got := cal.Privacy().PerRelease; math.Abs(got-cfg.Epsilon) > 1e-12 {
			t.Errorf("%s: calibrated release costs %g, want %g", cfg.Estimator, got, cfg.Epsilon)
		}
		rp, err := paper.Release(seededNoise(9))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := cal.Release(seededNoise(9))
		if err != nil {
			t.Fatal(err)
		}
		if rp.EpsilonSpent != cost || math.Abs(rc.EpsilonSpent-cfg.Epsilon) > 1e-12 {
			t.Errorf("%s: spent paper %g (want %g), calibrated %g (want %g)", cfg.Estimator, rp.EpsilonSpent, cost, rc.EpsilonSpent, cfg.Epsilon)
		}
		est := noiseless(t, paper)
		if ratio := (rc.Estimate - est) / (rp.Estimate - est); cost > cfg.Epsilon && math.Abs(ratio-cost/cfg.Epsilon) > 1e-6*cost/cfg.Epsilon {
			t.Errorf("%s: calibrated noise is %g times the paper's, want %g", cfg.Estimator, ratio, cost/cfg.Epsilon)
		}
		// The mode survives persistence.
		data, err := cal.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(data, dprand.Seeded(1))
		if err != nil || back.Config().ReleaseNoise != NoiseCalibrated {
			t.Fatalf("%s: round trip lost the release noise mode: %v", cfg.Estimator, err)
		}
	}
	if _, err := (Config{Estimator: KindDensity, Epsilon: 0.3, UniverseSize: 10, SampleSize: 5, ReleaseNoise: "loud"}).Validate(); err == nil {
		t.Fatal("unknown release_noise accepted")
	}
}

// noiseless returns an estimator's estimate without noise.
func noiseless(t *testing.T, e Estimator) float64 {
	t.Helper()
	switch x := e.(type) {
	case *sampledDensity:
		return x.estimate()
	case *ppds:
		return x.estimate()
	case *croppedMean:
		return x.estimate()
	case *heavyHitters:
		return x.estimate()
	}
	t.Fatalf("no noiseless estimate for %T", e)
	return 0
}
