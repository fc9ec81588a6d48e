package panprivate

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/estimate"
)

// coverage accumulates the 95% intervals of repeated releases against the
// true value: how often they cover it, the mean stated standard error and
// the empirical root mean squared error around the truth.
type coverage struct {
	runs, covered int
	seSum, sqErr  float64
	bound         bool
}

func (c *coverage) add(truth, est, se float64, lo, hi float64, bound bool) {
	iv := estimate.NormalInterval(est, se, 0.95, lo, hi)
	c.runs++
	if iv.Lower <= truth && truth <= iv.Upper {
		c.covered++
	}
	c.seSum += se
	c.sqErr += (est - truth) * (est - truth)
	c.bound = c.bound || bound
}

func (c *coverage) rate() float64 { return float64(c.covered) / float64(c.runs) }

// ratio is the mean stated standard error over the empirical RMSE.
func (c *coverage) ratio() float64 {
	return (c.seSum / float64(c.runs)) / math.Sqrt(c.sqErr/float64(c.runs))
}

// check asserts the targets: coverage of the 95% intervals in
// [0.90, 0.99] and mean stated SE / empirical RMSE in [0.8, 1.25]. For a
// stated bound (bound: true) only the lower ends apply: a bound may be
// conservative, never optimistic. It logs one row of the table in
// docs/errorbars-streams.md.
func (c *coverage) check(t *testing.T, name string) {
	t.Helper()
	t.Logf("| %s | %d | %.3f | %.3f | %.4g | %v |", name, c.runs, c.rate(), c.ratio(), math.Sqrt(c.sqErr/float64(c.runs)), c.bound)
	if c.runs < 200 {
		t.Errorf("%s: %d releases, want at least 200", name, c.runs)
	}
	if c.rate() < 0.90 || (!c.bound && c.rate() > 0.99) {
		t.Errorf("%s: 95%% intervals cover the truth in %.3f of %d releases, want [0.90, 0.99]", name, c.rate(), c.runs)
	}
	if r := c.ratio(); r < 0.8 || (!c.bound && r > 1.25) {
		t.Errorf("%s: mean stated SE / empirical RMSE = %.3f, want [0.8, 1.25]", name, r)
	}
}

// streamOf returns the named stream over [0, n) with T appearances.
func streamOf(kind string, seed uint64, n uint64, T int) []Event {
	if kind == "zipf" {
		return zipfStream(dprand.Seeded(seed), n, T)
	}
	return uniformStream(dprand.Seeded(seed), n, T)
}

// TestReleaseErrorBarsCover simulates at least 200 releases per estimator,
// each from a fresh estimator (fresh sample, bits and noise) fed the same
// stream, and checks that the stated standard error describes the releases'
// spread around the true value and that the 95% intervals cover it. The
// density settings are the improved-density paper's experiments (§6: |U| =
// T, uniform and Zipf(1) streams, m a fraction 0.001 to 0.1 of |U|, eps 0.1
// to 0.5) scaled to test time; the others are the pan-private paper's
// constructions at sizes where their normal approximation holds.
func TestReleaseErrorBarsCover(t *testing.T) {
	t.Parallel()
	const runs = 200
	type tc struct {
		name   string
		cfg    Config
		stream func() ([]Event, float64) // events and the true value
	}
	densityStream := func(kind string, n uint64) func() ([]Event, float64) {
		return func() ([]Event, float64) {
			evs := streamOf(kind, 31, n, int(n))
			return evs, density(n, evs)
		}
	}
	croppedStream := func(n uint64, T, crop int) func() ([]Event, float64) {
		return func() ([]Event, float64) {
			evs := zipfStream(dprand.Seeded(32), n, T)
			counts := map[uint64]int{}
			for _, e := range evs {
				counts[e.User.id]++
			}
			var s float64
			for _, c := range counts {
				s += float64(min(c, crop))
			}
			return evs, s / float64(n)
		}
	}
	cases := []tc{
		{"density dwork uniform |U|=10^4 m=0.1|U| eps=0.5", Config{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.5, UniverseSize: 1e4, SampleSize: 1000, ReleaseNoise: NoisePaper}, densityStream("uniform", 1e4)},
		{"density dwork zipf |U|=10^4 m=0.1|U| eps=0.5 calibrated", Config{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.5, UniverseSize: 1e4, SampleSize: 1000}, densityStream("zipf", 1e4)},
		{"density optbern uniform |U|=10^4 m=0.01|U| eps=0.5", Config{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: 1e4, SampleSize: 100, ReleaseNoise: NoisePaper}, densityStream("uniform", 1e4)},
		{"density optbern zipf |U|=10^5 m=0.01|U| eps=0.2", Config{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.2, UniverseSize: 1e5, SampleSize: 1000, ReleaseNoise: NoisePaper}, densityStream("zipf", 1e5)},
		{"density optbern zipf |U|=10^4 m=0.1|U| eps=0.1", Config{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.1, UniverseSize: 1e4, SampleSize: 1000, ReleaseNoise: NoisePaper}, densityStream("zipf", 1e4)},
		{"density ppds uniform |U|=10^4 m=0.01|U| eps=0.5", Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.5, UniverseSize: 1e4, SampleSize: 100, ReleaseNoise: NoisePaper}, densityStream("uniform", 1e4)},
		{"density ppds zipf |U|=10^5 m=0.001|U| eps=0.2", Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.2, UniverseSize: 1e5, SampleSize: 100, ReleaseNoise: NoisePaper}, densityStream("zipf", 1e5)},
		{"density ppds zipf |U|=10^4 m=0.1|U| eps=0.2 calibrated", Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.2, UniverseSize: 1e4, SampleSize: 1000}, densityStream("zipf", 1e4)},
		{"cropped_mean t=4 zipf |U|=10^4 T=3*10^4 m=0.1|U| eps=0.5", Config{Estimator: KindCroppedMean, Epsilon: 0.5, UniverseSize: 1e4, SampleSize: 1000, T: 4, ReleaseNoise: NoisePaper}, croppedStream(1e4, 3e4, 4)},
		{"cropped_mean t=2 optbern zipf |U|=10^4 T=10^4 m=0.1|U| eps=0.2 calibrated", Config{Estimator: KindCroppedMean, Algorithm: AlgorithmOptBern, Epsilon: 0.2, UniverseSize: 1e4, SampleSize: 1000, T: 2}, croppedStream(1e4, 1e4, 2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			evs, truth := c.stream()
			rng, noise := dprand.Seeded(33), seededNoise(34)
			var cov coverage
			for r := 0; r < runs; r++ {
				_, rel := runFullRelease(t, c.cfg, rng, noise, evs)
				cov.add(truth, rel.Estimate, rel.StandardError, rel.Min, rel.Max, rel.Bound)
			}
			cov.check(t, c.name)
		})
	}
}

// TestHeavyHitterErrorBarsCover checks the heavy hitters' stated bound on a
// (1+rho)-close stream (counts powers of 2, rho = 1), where the recursion of
// Fig. 3 targets the fraction of users appearing at least k times.
func TestHeavyHitterErrorBarsCover(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const n, runs = 4000, 200
	rng := dprand.Seeded(41)
	counts := make([]int, n)
	heavy := 0
	for u := range counts {
		counts[u] = []int{0, 0, 1, 2, 4, 8}[rng.IntN(6)]
		if counts[u] >= 4 {
			heavy++
		}
	}
	evs := streamFromCounts(rng, counts)
	truth := float64(heavy) / n
	cfg := Config{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: n, SampleSize: n / 2, K: 4, MaxOccurrences: 8, Rho: 1, ReleaseNoise: NoisePaper}
	noise := seededNoise(42)
	var cov coverage
	for r := 0; r < runs; r++ {
		_, rel := runFullRelease(t, cfg, rng, noise, evs)
		cov.add(truth, rel.Estimate, rel.StandardError, rel.Min, rel.Max, rel.Bound)
	}
	cov.check(t, fmt.Sprintf("heavy_hitters k=4 N=8 rho=1 |U|=%d m=0.5|U| eps=0.5", n))
}

// TestIncidenceErrorBarsCover checks the incidence estimator's stated bound:
// its intervals must cover the truth at least at the nominal rate. No
// theorem states its variance, so the bound is conservative and the ratio
// to the empirical error is logged, not held to [0.8, 1.25].
func TestIncidenceErrorBarsCover(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const n, runs = 6000, 200
	evs := streamFromCounts(dprand.Seeded(51), incidenceCounts(n, map[int]float64{0: 0.4, 1: 0.35, 2: 0.25}))
	cfg := Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: n, SampleSize: n, T: 1, MaxOccurrences: 8, Moduli: 1, K: 11, ReleaseNoise: NoisePaper}
	rng, noise := dprand.Seeded(52), seededNoise(53)
	var cov coverage
	for r := 0; r < runs; r++ {
		_, rel := runFullRelease(t, cfg, rng, noise, evs)
		if !rel.Bound {
			t.Fatal("incidence release does not say its standard error is a bound")
		}
		cov.add(0.35, rel.Estimate, rel.StandardError, rel.Min, rel.Max, rel.Bound)
	}
	cov.check(t, "incidence t=1 N=8 one prime <= 11 |U|=m=6000 eps=1")
}

// TestContinualErrorBarsCover checks the continual density estimator's
// stated standard error at the end of a stream (and half-way), for the
// randomized-response and tree counters.
func TestContinualErrorBarsCover(t *testing.T) {
	t.Parallel()
	for _, ctr := range []CounterAlgorithm{CounterRandomizedResponse, CounterTree} {
		t.Run(string(ctr), func(t *testing.T) {
			t.Parallel()
			const n, runs = 10000, 200
			evs := zipfStream(dprand.Seeded(61), n, n)
			half, end := density(n, evs[:n/2]), density(n, evs)
			cfg := ContinualDensityConfig{Epsilon: 0.4, UniverseSize: n, SampleSize: n / 2, Horizon: n, Counter: ctr}
			rng, lap := dprand.Seeded(62), seededNoise(63)
			var covHalf, covEnd coverage
			for r := 0; r < runs; r++ {
				e, err := NewContinualDensity(cfg, lap, rng)
				if err != nil {
					t.Fatal(err)
				}
				for i, ev := range evs {
					if _, err := e.ApplyEvent(ev); err != nil {
						t.Fatal(err)
					}
					if i == n/2-1 {
						se, bound := e.StandardError()
						covHalf.add(half, e.Output(), se, 0, 1, bound)
					}
				}
				se, bound := e.StandardError()
				covEnd.add(end, e.Output(), se, 0, 1, bound)
			}
			covHalf.check(t, fmt.Sprintf("continual density %s |U|=10^4 m=0.5|U| eps=0.4, step T/2", ctr))
			covEnd.check(t, fmt.Sprintf("continual density %s |U|=10^4 m=0.5|U| eps=0.4, step T", ctr))
		})
	}
}

// TestCounterErrorBarsCover checks every counter's stated standard error
// against the true count of a random bit stream at several steps.
func TestCounterErrorBarsCover(t *testing.T) {
	t.Parallel()
	for _, alg := range []CounterAlgorithm{CounterSimple, CounterRandomizedResponse, CounterTree, CounterCascading} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			const horizon, runs = 1000, 300
			bitRng := dprand.Seeded(71)
			bits := make([]int, horizon)
			for i := range bits {
				if bitRng.Float64() < 0.3 {
					bits[i] = 1
				}
			}
			steps := []int64{50, 500, 1000}
			covs := make([]coverage, len(steps))
			rng, lap := dprand.Seeded(72), seededNoise(73)
			for r := 0; r < runs; r++ {
				c, err := NewCounter(CounterConfig{Algorithm: alg, Epsilon: 1, Horizon: horizon}, lap, rng)
				if err != nil {
					t.Fatal(err)
				}
				out, err := CounterSteps(c, bits)
				if err != nil {
					t.Fatal(err)
				}
				for k, s := range steps {
					truth := 0
					for _, b := range bits[:s] {
						truth += b
					}
					se, bound := c.StandardError(s)
					covs[k].add(float64(truth), out[s-1], se, math.Inf(-1), math.Inf(1), bound)
				}
			}
			for k, s := range steps {
				covs[k].check(t, fmt.Sprintf("counter %s eps=1 T=%d, step %d", alg, horizon, s))
			}
		})
	}
}

// TestPPDSErrorHidesTheLevel: the level L of PPDS is part of its state
// (it depends on the users' bits), so a release's standard error must not
// reveal it: it is computed at the level predicted from the clamped
// estimate, the same whatever the actual level.
func TestPPDSErrorHidesTheLevel(t *testing.T) {
	t.Parallel()
	cfg := Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.5, UniverseSize: 1 << 14, SampleSize: 200}
	e := mustNew(t, cfg, dprand.Seeded(91)).(*ppds)
	before := e.errorModel()
	e.level++
	after := e.errorModel()
	for _, x := range []float64{0, 0.1, 0.5, 1} {
		if v1, v2 := before.variance(x), after.variance(x); v1 != v2 {
			t.Errorf("d = %g: variance %g at one level, %g at the next: the level leaks", x, v1, v2)
		}
		if s1, s2 := before.noiseScale(x), after.noiseScale(x); s1 != s2 {
			t.Errorf("d = %g: noise scale %g at one level, %g at the next: the level leaks", x, s1, s2)
		}
	}
}

// TestDensityErrorBarsAfterDeletions is issue 32's second table: streams the
// API accepts whose history differs from their final state. U = 10^4, eps
// 0.4, final density 0.3, 200 releases each (fresh estimator, bits and
// noise): insert-only (m = 2000, and m = 1150, where the expected sample
// sits at a level boundary), every present user appearing 5 times (each
// appearance re-draws its bit), and every user appearing once and 70% of
// them being deleted. PPDS's level is a running maximum, so the last two
// read at a level above the one the final density predicts; its standard
// error is stated at the highest level the history can force and marked a
// bound, and must cover at least at the nominal rate. OptBern and Dwork keep
// a fixed sample: their errors are exact on every stream. Coverage bar: the
// check's 0.90 (three binomial standard deviations below 0.95 at 200 runs:
// false-alarm rate about 0.1% at a true 0.95) and, for PPDS, a stated SE at
// least 0.9 of the empirical RMSE (the predicted-level SE it replaced gave
// 0.70 after the deletions). PWSD_COVERAGE_RUNS=1 runs 1000 releases per
// stream instead (docs/errorbars-streams.md's figures).
func TestDensityErrorBarsAfterDeletions(t *testing.T) {
	t.Parallel()
	const n = 10_000
	runs := 200
	if os.Getenv("PWSD_COVERAGE_RUNS") != "" {
		runs = 1000
	}
	users := dprand.Seeded(81).Perm(n)
	present := users[:3*n/10]
	var insertOnly, repeated, deleted []Event
	for _, u := range present {
		insertOnly = append(insertOnly, Event{User: UserID(uint64(u))})
	}
	for range 5 {
		repeated = append(repeated, insertOnly...)
	}
	dprand.Seeded(82).Shuffle(len(repeated), func(i, j int) { repeated[i], repeated[j] = repeated[j], repeated[i] })
	for _, u := range users {
		deleted = append(deleted, Event{User: UserID(uint64(u))})
	}
	for _, u := range users[3*n/10:] {
		deleted = append(deleted, Event{User: UserID(uint64(u)), Delete: true})
	}
	for _, c := range []struct {
		name string
		alg  Algorithm
		m    int
		evs  []Event
	}{
		{"ppds insert-only m=2000", AlgorithmPPDS, 2000, insertOnly},
		{"ppds insert-only m=1150 (level boundary)", AlgorithmPPDS, 1150, insertOnly},
		{"ppds each user 5 times m=1150", AlgorithmPPDS, 1150, repeated},
		{"ppds all appear, 70% deleted m=1400", AlgorithmPPDS, 1400, deleted},
		{"optbern all appear, 70% deleted m=1400", AlgorithmOptBern, 1400, deleted},
		{"dwork all appear, 70% deleted m=1400", AlgorithmDwork, 1400, deleted},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if d := density(n, c.evs); d != 0.3 {
				t.Fatalf("stream density %g, want 0.3", d)
			}
			cfg := Config{Estimator: KindDensity, Algorithm: c.alg, Epsilon: 0.4, UniverseSize: n, SampleSize: c.m, ReleaseNoise: NoisePaper}
			rng, noise := dprand.Seeded(83), seededNoise(84)
			var cov coverage
			for r := 0; r < runs; r++ {
				_, rel := runFullRelease(t, cfg, rng, noise, c.evs)
				if rel.Bound != (c.alg == AlgorithmPPDS) {
					t.Fatalf("bound = %v for %s", rel.Bound, c.alg)
				}
				cov.add(0.3, rel.Estimate, rel.StandardError, rel.Min, rel.Max, rel.Bound)
			}
			cov.check(t, "density "+c.name+" |U|=10^4 eps=0.4")
			if c.alg == AlgorithmPPDS && cov.ratio() < 0.9 {
				t.Errorf("stated SE / empirical RMSE = %.3f: the bound understates the error", cov.ratio())
			}
		})
	}
}
