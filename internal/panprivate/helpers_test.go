package panprivate

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
)

// uniformStream returns T appearances of users drawn uniformly from [0, n).
func uniformStream(rng *rand.Rand, n uint64, T int) []Event {
	evs := make([]Event, T)
	for i := range evs {
		evs[i] = Event{User: UserID(rng.Uint64N(n))}
	}
	return evs
}

// zipfStream returns T appearances drawn from a Zipf(1) law over [0, n):
// user u has probability proportional to 1/(u+1).
func zipfStream(rng *rand.Rand, n uint64, T int) []Event {
	cdf := make([]float64, n)
	var s float64
	for u := range cdf {
		s += 1 / float64(u+1)
		cdf[u] = s
	}
	evs := make([]Event, T)
	for i := range evs {
		x := rng.Float64() * s
		u := sort.SearchFloat64s(cdf, x)
		if u >= int(n) {
			u = int(n) - 1
		}
		evs[i] = Event{User: UserID(uint64(u))}
	}
	return evs
}

// streamFromCounts returns a stream in which user u appears counts[u] times,
// interleaved randomly.
func streamFromCounts(rng *rand.Rand, counts []int) []Event {
	var evs []Event
	for u, c := range counts {
		for j := 0; j < c; j++ {
			evs = append(evs, Event{User: UserID(uint64(u))})
		}
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}

// density returns the fraction of [0, n) that has a net appearance.
func density(n uint64, evs []Event) float64 {
	present := make(map[uint64]bool)
	for _, e := range evs {
		present[e.User.id] = !e.Delete
	}
	var k int
	for _, p := range present {
		if p {
			k++
		}
	}
	return float64(k) / float64(n)
}

// sample accumulates a sample's mean and standard error.
type sample struct {
	n          int
	sum, sumSq float64
}

func (s *sample) add(x float64) { s.n++; s.sum += x; s.sumSq += x * x }
func (s *sample) mean() float64 { return s.sum / float64(s.n) }
func (s *sample) se() float64 {
	m := s.mean()
	v := (s.sumSq/float64(s.n) - m*m) * float64(s.n) / float64(s.n-1)
	return math.Sqrt(math.Max(v, 0) / float64(s.n))
}

// mustNew builds an estimator or fails the test.
func mustNew(t testing.TB, cfg Config, rng *rand.Rand) Estimator {
	t.Helper()
	e, err := New(cfg, rng)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return e
}

// runRelease applies evs to a fresh estimator and returns one release's
// estimate.
func runRelease(t testing.TB, cfg Config, rng *rand.Rand, noise dprand.Laplacer, evs []Event) (Estimator, float64) {
	t.Helper()
	e, r := runFullRelease(t, cfg, rng, noise, evs)
	return e, r.Estimate
}

// runFullRelease applies evs to a fresh estimator and returns one release.
func runFullRelease(t testing.TB, cfg Config, rng *rand.Rand, noise dprand.Laplacer, evs []Event) (Estimator, Release) {
	t.Helper()
	e := mustNew(t, cfg, rng)
	if err := e.Apply(evs); err != nil {
		t.Fatal(err)
	}
	r, err := e.Release(noise)
	if err != nil {
		t.Fatal(err)
	}
	return e, r
}

func seededNoise(seed uint64) dprand.Laplacer { return dprandtest.NewLaplace(dprand.Seeded(seed)) }

// paperPair returns the closed-form pair of the papers: Dwork's
// (1/2, 1/2 + eps/4) and OptBern's ((1 -+ tanh(eps/2))/2).
func paperPair(alg Algorithm, eps float64) (p0, p1 float64) {
	if alg == AlgorithmDwork {
		return 0.5, 0.5 + eps/4
	}
	th := math.Tanh(eps / 2)
	return (1 - th) / 2, (1 + th) / 2
}
