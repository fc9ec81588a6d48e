package panprivate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestIncidenceLPRecoversExactFractions checks the linear program of Fig. 5
// on noiseless input: from s = N f it recovers f (to 1e-4; the 1e-9
// anti-degeneracy perturbation is amplified by the flat laws), for the initial
// and the convolved (post-intrusion) noise laws.
func TestIncidenceLPRecoversExactFractions(t *testing.T) {
	t.Parallel()
	rng := dprand.Seeded(61)
	for _, p := range []int{2, 3, 13, 31, 61} {
		for _, intrusions := range []int{0, 2} {
			t.Run(fmt.Sprintf("p=%d,intrusions=%d", p, intrusions), func(t *testing.T) {
				if p == 61 && intrusions > 0 {
					return // slow; p = 31 covers the convolved laws
				}
				l, err := newModNoise(p, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				noise := l.convolvedProbs(intrusions)
				f := make([]float64, p)
				var s float64
				for j := range f {
					if rng.IntN(3) > 0 {
						f[j] = rng.Float64()
						s += f[j]
					}
				}
				if s == 0 {
					f[0], s = 1, 1
				}
				for j := range f {
					f[j] /= s
				}
				q := make([]float64, p)
				for i := range q {
					for j := range f {
						q[i] += noise[((i-j)%p+p)%p] * f[j]
					}
				}
				got, err := solveIncidenceLP(noise, q)
				if err != nil {
					t.Fatalf("p=%d: %v", p, err)
				}
				for j := range f {
					if math.Abs(got[j]-f[j]) > 1e-4 {
						t.Fatalf("p=%d intrusions=%d: f[%d] = %v, want %v", p, intrusions, j, got[j], f[j])
					}
				}
			})
		}
	}
}

// incidenceCounts builds a universe in which fraction w[c] of the users
// appears exactly c times.
func incidenceCounts(n int, w map[int]float64) []int {
	counts := make([]int, 0, n)
	for c := 0; c <= 64; c++ {
		k := int(math.Round(w[c] * float64(n)))
		for i := 0; i < k && len(counts) < n; i++ {
			counts = append(counts, c)
		}
	}
	for len(counts) < n {
		counts = append(counts, 0)
	}
	return counts
}

// TestIncidenceSanity checks the t-incidence estimator of Fig. 4 against
// the truth. When no count collides with t modulo any candidate prime, the
// modular fraction is the incidence itself and the release is unbiased up
// to the linear program's small non-negativity bias (mean over runs within
// 5 SE + 0.01). When small primes collide (2, 4 and 0 are all even, 7 = 2
// mod 5), they over-estimate, and the minimum over three primes stays within
// 0.1 of the truth on average, also with a sample of half the universe and
// the default prime range (the minimum of noisy estimates is biased down).
func TestIncidenceSanity(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const n = 30000
	clean := streamFromCounts(dprand.Seeded(62), incidenceCounts(n, map[int]float64{0: 0.4, 1: 0.35, 2: 0.25}))
	colliding := streamFromCounts(dprand.Seeded(62), incidenceCounts(n, map[int]float64{0: 0.3, 1: 0.25, 2: 0.2, 4: 0.15, 7: 0.1}))
	for _, tc := range []struct {
		name  string
		cfg   Config
		evs   []Event
		truth float64
		runs  int
		tol   func(se float64) float64
	}{
		{"no collisions", Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: n, SampleSize: n, T: 1, MaxOccurrences: 8, Moduli: 1, K: 11, ReleaseNoise: NoisePaper},
			clean, 0.35, 40, func(se float64) float64 { return 5*se + 0.01 }},
		{"collisions, three primes <= 13", Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: n, SampleSize: n, T: 2, MaxOccurrences: 8, Moduli: 3, K: 13, ReleaseNoise: NoisePaper},
			colliding, 0.2, 15, func(float64) float64 { return 0.1 }},
		{"collisions, sampled, default range", Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 2 * n, SampleSize: n, T: 4, MaxOccurrences: 8, Moduli: 2, ReleaseNoise: NoisePaper},
			colliding, 0.075, 15, func(float64) float64 { return 0.1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng, noise := dprand.Seeded(63), seededNoise(64)
			var errs sample
			for r := 0; r < tc.runs; r++ {
				_, est := runRelease(t, tc.cfg, rng, noise, tc.evs)
				errs.add(est - tc.truth)
			}
			t.Logf("%s: mean error %.4f ± %.4f", tc.name, errs.mean(), errs.se())
			if math.Abs(errs.mean()) > tc.tol(errs.se()) {
				t.Errorf("%s: mean error %.4f ± %.4f beyond %.4f", tc.name, errs.mean(), errs.se(), tc.tol(errs.se()))
			}
		})
	}
}

// TestIncidencePrimeRange checks Fig. 4's default range: the smallest range
// holding 4 ln N / alpha primes, capped at defaultMaxModulus, and the k
// override.
func TestIncidencePrimeRange(t *testing.T) {
	t.Parallel()
	c := Config{Estimator: KindIncidence, MaxOccurrences: 8, Moduli: 3, Accuracy: &Accuracy{Alpha: 1, Beta: 0.1}}
	if got := incidencePrimeRange(c); len(got) != 9 || got[8] != 23 { // ceil(4 ln 8) = 9 primes
		t.Errorf("range for N=8, alpha=1: %v", got)
	}
	c.Accuracy = nil // alpha 0.1: 84 primes, capped at the 11 primes <= 31
	if got := incidencePrimeRange(c); len(got) != 11 || got[10] != 31 {
		t.Errorf("capped range: %v", got)
	}
	c.K = 10
	if got := incidencePrimeRange(c); len(got) != 4 || got[3] != 7 {
		t.Errorf("range for k=10: %v", got)
	}
}

// TestIncidenceIntrusionLaw checks the announced-intrusion handling of
// incidence: after an intrusion, counters follow the convolution of the
// noise law with itself (per value within 5 SE, users with no appearances),
// the state view reports that law, and releases invert it: from the exact
// expected histogram the residue fractions are recovered (to 1e-4).
func TestIncidenceIntrusionLaw(t *testing.T) {
	t.Parallel()
	const n = 60000
	cfg := Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: n, SampleSize: n, T: 1, MaxOccurrences: 8, Moduli: 1, K: 7}
	e := mustNew(t, cfg, dprand.Seeded(65)).(*incidence)
	e.Intrude()
	p := e.primes[0]
	law := e.laws[0].convolvedProbs(1)
	if got := e.state().Moduli[0].Noise; !slicesAlmostEqual(got, law) {
		t.Errorf("state reports noise %v, want %v", got, law)
	}
	freq := make([]float64, p)
	for _, c := range e.counters[0] {
		freq[c] += 1.0 / n
	}
	for v := range freq {
		if se := math.Sqrt(law[v] * (1 - law[v]) / n); math.Abs(freq[v]-law[v]) > 5*se {
			t.Errorf("p=%d: counter value %d has frequency %v, want %v", p, v, freq[v], law[v])
		}
	}
	f := make([]float64, p)
	f[0], f[1%p] = 0.6, 0.4
	q := make([]float64, p)
	for i := range q {
		for j := range f {
			q[i] += law[((i-j)%p+p)%p] * f[j]
		}
	}
	got, err := e.residueFractions(0, q)
	if err != nil {
		t.Fatal(err)
	}
	for j := range f {
		if math.Abs(got[j]-f[j]) > 1e-4 {
			t.Errorf("after an intrusion, residue %d recovered as %v, want %v", j, got[j], f[j])
		}
	}
}

func slicesAlmostEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-15 {
			return false
		}
	}
	return true
}
