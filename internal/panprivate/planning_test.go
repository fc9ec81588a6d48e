package panprivate

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestDensityMSEIsTheStatedError checks that DensityMSE is the variance a
// density release states (its standard error squared, at the clamped
// estimate; ppds at boundLevel), for every algorithm and both release
// noises, and that PPDSLevel never exceeds boundLevel (the stated level is
// the highest any history can force).
func TestDensityMSEIsTheStatedError(t *testing.T) {
	t.Parallel()
	for _, alg := range []Algorithm{AlgorithmDwork, AlgorithmOptBern, AlgorithmPPDS} {
		for _, noise := range []ReleaseNoise{NoisePaper, NoiseCalibrated} {
			const n, m = 5000, 300
			cfg := Config{Estimator: KindDensity, Algorithm: alg, Epsilon: 0.3, UniverseSize: n, SampleSize: m, ReleaseNoise: noise}
			e, err := New(cfg, dprand.Seeded(5))
			if err != nil {
				t.Fatal(err)
			}
			evs := make([]Event, 2000)
			for u := range evs {
				evs[u] = Event{User: UserID(uint64(u))}
			}
			if err := e.Apply(evs); err != nil {
				t.Fatal(err)
			}
			rel, err := e.Release(seededNoise(6))
			if err != nil {
				t.Fatal(err)
			}
			read := uint64(m)
			if alg == AlgorithmPPDS {
				bl := e.(*ppds).boundLevel()
				read = n >> bl
				level, err := PPDSLevel(0.3, n, m, 0.4)
				if err != nil || level > bl {
					t.Errorf("ppds: PPDSLevel %d (%v) above boundLevel %d", level, err, bl)
				}
			}
			want, err := DensityMSE(alg, 0.3, noise, n, read, rel.Clamped())
			if err != nil {
				t.Fatal(err)
			}
			if got := rel.StandardError * rel.StandardError; math.Abs(got-want) > 1e-12*want {
				t.Errorf("%s %s: stated variance %.15g, DensityMSE %.15g", alg, noise, got, want)
			}
		}
	}
}

// TestPlanningArgumentsChecked: the planning functions refuse what no
// density stream accepts.
func TestPlanningArgumentsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		alg   Algorithm
		eps   float64
		noise ReleaseNoise
		n, m  uint64
		d     float64
	}{
		{"algorithm", "rr", 0.3, NoisePaper, 100, 10, 0.5},
		{"epsilon above 1/2", AlgorithmOptBern, 0.6, NoisePaper, 100, 10, 0.5},
		{"epsilon NaN", AlgorithmOptBern, math.NaN(), NoisePaper, 100, 10, 0.5},
		{"noise", AlgorithmDwork, 0.3, "loud", 100, 10, 0.5},
		{"m above n", AlgorithmDwork, 0.3, NoisePaper, 100, 101, 0.5},
		{"m zero", AlgorithmDwork, 0.3, NoisePaper, 100, 0, 0.5},
		{"density", AlgorithmDwork, 0.3, NoisePaper, 100, 10, -0.1},
	} {
		if _, err := DensityMSE(tc.alg, tc.eps, tc.noise, tc.n, tc.m, tc.d); err == nil {
			t.Errorf("%s: DensityMSE accepted it", tc.name)
		}
	}
	if _, err := DensityTheoremMSE(AlgorithmDwork, 0.3, 0); err == nil {
		t.Error("DensityTheoremMSE accepted m = 0")
	}
	if _, err := PPDSLevel(0.3, 100, 10, 2); err == nil {
		t.Error("PPDSLevel accepted density 2")
	}
	if _, err := DensityReleaseEpsilon(AlgorithmPPDS, 0.3, ""); err == nil {
		t.Error("DensityReleaseEpsilon accepted an empty noise")
	}
}
