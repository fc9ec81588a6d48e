package panprivate

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
)

// counterZeroLaplace is a noise source that always returns 0: with it every
// counter is deterministic and its bookkeeping can be checked exactly.
type counterZeroLaplace struct{}

func (counterZeroLaplace) Laplace(float64) (float64, error) { return 0, nil }

// counterFailingLaplace fails after ok successful draws.
type counterFailingLaplace struct{ ok int }

func (f *counterFailingLaplace) Laplace(float64) (float64, error) {
	if f.ok == 0 {
		return 0, errors.New("noise source down")
	}
	f.ok--
	return 0, nil
}

func counterSeeded(seed uint64) (dprand.Laplacer, *rand.Rand) {
	return dprandtest.NewLaplace(dprand.Seeded(seed)), dprand.Seeded(seed + 1<<32)
}

func mustCounter(t testing.TB, cfg CounterConfig, lap dprand.Laplacer, rng *rand.Rand) Counter {
	t.Helper()
	c, err := NewCounter(cfg, lap, rng)
	if err != nil {
		t.Fatalf("NewCounter(%+v): %v", cfg, err)
	}
	return c
}

// counterStream returns a Bernoulli(p) bit stream of length n.
func counterStream(n int, p float64, seed uint64) []int {
	rng := dprand.Seeded(seed)
	s := make([]int, n)
	for i := range s {
		if rng.Float64() < p {
			s[i] = 1
		}
	}
	return s
}

func TestCounterConfigValidate(t *testing.T) {
	t.Parallel()
	ok := CounterConfig{Algorithm: CounterTree, Epsilon: 1, Horizon: 1000}
	tests := []struct {
		name  string
		mod   func(*CounterConfig)
		field string // "" = valid
	}{
		{"valid tree", func(c *CounterConfig) {}, ""},
		{"default algorithm", func(c *CounterConfig) { c.Algorithm = "" }, ""},
		{"simple", func(c *CounterConfig) { c.Algorithm = CounterSimple }, ""},
		{"randomized response", func(c *CounterConfig) { c.Algorithm = CounterRandomizedResponse }, ""},
		{"cascading derived", func(c *CounterConfig) { c.Algorithm = CounterCascading }, ""},
		{"cascading explicit", func(c *CounterConfig) {
			*c = CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: 10, D: 2, L: 5, Kappa: 1}
		}, ""},
		{"unknown algorithm", func(c *CounterConfig) { c.Algorithm = "fancy" }, "algorithm"},
		{"zero epsilon", func(c *CounterConfig) { c.Epsilon = 0 }, "epsilon"},
		{"negative epsilon", func(c *CounterConfig) { c.Epsilon = -1 }, "epsilon"},
		{"NaN epsilon", func(c *CounterConfig) { c.Epsilon = math.NaN() }, "epsilon"},
		{"infinite epsilon", func(c *CounterConfig) { c.Epsilon = math.Inf(1) }, "epsilon"},
		{"huge epsilon", func(c *CounterConfig) { c.Epsilon = 1000 }, "epsilon"},
		{"zero horizon", func(c *CounterConfig) { c.Horizon = 0 }, "horizon"},
		{"negative horizon", func(c *CounterConfig) { c.Horizon = -5 }, "horizon"},
		{"huge horizon", func(c *CounterConfig) { c.Horizon = counterMaxHorizon + 1 }, "horizon"},
		{"d on tree", func(c *CounterConfig) { c.D = 2 }, "d"},
		{"l on simple", func(c *CounterConfig) { c.Algorithm = CounterSimple; c.L = 2 }, "l"},
		{"kappa on default", func(c *CounterConfig) { c.Algorithm = ""; c.Kappa = 2 }, "kappa"},
		{"negative d", func(c *CounterConfig) { c.Algorithm = CounterCascading; c.D = -1 }, "d"},
		{"d too large", func(c *CounterConfig) { c.Algorithm = CounterCascading; c.D = counterMaxDepth + 1 }, "d"},
		{"negative l", func(c *CounterConfig) { c.Algorithm = CounterCascading; c.L = -1 }, "l"},
		{"NaN l", func(c *CounterConfig) { c.Algorithm = CounterCascading; c.L = math.NaN() }, "l"},
		{"infinite kappa", func(c *CounterConfig) { c.Algorithm = CounterCascading; c.Kappa = math.Inf(1) }, "kappa"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			err := cfg.Validate()
			_, nerr := NewCounter(cfg, counterZeroLaplace{}, dprand.Seeded(1))
			if tc.field == "" {
				if err != nil || nerr != nil {
					t.Fatalf("valid config rejected: %v / %v", err, nerr)
				}
				return
			}
			var pe *checks.FieldError
			if !errors.As(err, &pe) || pe.Field != tc.field {
				t.Fatalf("Validate() = %v, want a checks.FieldError on %q", err, tc.field)
			}
			if !errors.As(nerr, &pe) || pe.Field != tc.field {
				t.Fatalf("NewCounter error = %v, want a checks.FieldError on %q", nerr, tc.field)
			}
		})
	}
	if _, err := NewCounter(ok, nil, dprand.Seeded(1)); err == nil {
		t.Error("nil Laplacer accepted")
	}
	if _, err := NewCounter(ok, counterZeroLaplace{}, nil); err == nil {
		t.Error("nil rng accepted")
	}
}

// TestCounterTreeMeanNodes checks the closed form for the mean number of
// released nodes per output (which drives the tree's level choice and
// defaultCounterAlgorithm) against direct counting.
func TestCounterTreeMeanNodes(t *testing.T) {
	t.Parallel()
	for _, T := range []int64{1, 2, 3, 7, 8, 100, 1000, 1024, 4097} {
		for L := 1; L <= bits.Len64(uint64(T)); L++ {
			B := int64(1) << (L - 1)
			var sum int64
			for s := int64(1); s <= T; s++ {
				sum += s/B + int64(bits.OnesCount64(uint64(s%B)))
			}
			want := float64(sum) / float64(T)
			if got := counterTreeMeanNodes(T, L); math.Abs(got-want) > 1e-9*want {
				t.Errorf("T=%d L=%d: mean nodes %g, want %g", T, L, got, want)
			}
		}
	}
}

// TestDefaultCounterAlgorithm checks that the default is the algorithm with
// the lowest predicted error: randomized response for short horizons, the
// tree for long ones, and never simple or cascading.
func TestDefaultCounterAlgorithm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		eps     float64
		horizon int64
		want    CounterAlgorithm
	}{
		{1, 1, CounterRandomizedResponse},
		{1, 1 << 10, CounterRandomizedResponse},
		{1, 1 << 13, CounterRandomizedResponse},
		{1, 1 << 14, CounterTree},
		{1, 1 << 16, CounterTree},
		{1, 1 << 20, CounterTree},
		{0.1, 1 << 10, CounterRandomizedResponse},
		{0.1, 1 << 20, CounterTree},
		{5, 1 << 16, CounterRandomizedResponse}, // RR variance e^-eps: tiny at large eps
	}
	for _, tc := range tests {
		if got := defaultCounterAlgorithm(tc.eps, tc.horizon); got != tc.want {
			t.Errorf("DefaultCounterAlgorithm(%g, %d) = %s, want %s", tc.eps, tc.horizon, got, tc.want)
		}
		got := defaultCounterAlgorithm(tc.eps, tc.horizon)
		for _, alg := range []CounterAlgorithm{CounterSimple, CounterRandomizedResponse, CounterTree} {
			if CounterPredictedMSE(alg, tc.eps, tc.horizon) < CounterPredictedMSE(got, tc.eps, tc.horizon) {
				t.Errorf("eps %g T %d: %s predicted better than default %s", tc.eps, tc.horizon, alg, got)
			}
		}
	}
	c := mustCounter(t, CounterConfig{Epsilon: 1, Horizon: 1 << 16}, counterZeroLaplace{}, dprand.Seeded(1))
	if c.State().Algorithm != CounterTree {
		t.Errorf("empty algorithm built %s, want tree", c.State().Algorithm)
	}
}

// TestCountersExactWithoutNoise checks every counter's bookkeeping: with a
// zero noise source the simple and tree counters output the exact count at
// every step, and the cascading counter outputs the exact count as of its
// last flush of level d.
func TestCountersExactWithoutNoise(t *testing.T) {
	t.Parallel()
	stream := counterStream(3000, 0.3, 7)
	for _, alg := range []CounterAlgorithm{CounterSimple, CounterTree} {
		for _, T := range []int64{1, 2, 5, 64, 1000, 3000} {
			c := mustCounter(t, CounterConfig{Algorithm: alg, Epsilon: 1, Horizon: T}, counterZeroLaplace{}, dprand.Seeded(1))
			n := 0
			for i := int64(0); i < T; i++ {
				n += stream[i]
				out, err := c.Step(stream[i])
				if err != nil {
					t.Fatal(err)
				}
				if out != float64(n) {
					t.Fatalf("%s T=%d step %d: output %g, want exact count %d", alg, T, i+1, out, n)
				}
			}
		}
	}
	// Cascading, d = 1, l = 3, no flush on updates (kappa tiny): ocount is
	// 3 * floor(n/3). d = 2 with the same l: level 2 flushes whenever level 1
	// does, same output. d = 1 with at most 4 updates between flushes and l
	// out of reach: ocount is the count as of the last multiple of 4 steps.
	tests := []struct {
		d       int
		l, k    float64
		want    func(step, n int, hist []int) float64
		maxUpdt int64
	}{
		{1, 3, 1e-9, func(_, n int, _ []int) float64 { return float64(3 * (n / 3)) }, 0},
		{2, 3, 1e-9, func(_, n int, _ []int) float64 { return float64(3 * (n / 3)) }, 0},
		{1, 1e6, 0, func(s, _ int, hist []int) float64 { return float64(hist[s/4*4]) }, 4},
	}
	for _, tc := range tests {
		cfg := CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: 3000, D: tc.d, L: tc.l, Kappa: tc.k}
		if tc.maxUpdt != 0 { // choose kappa so that (l eps'/4 kappa)^2 = maxUpdt
			eps := cfg.Epsilon / float64(2*tc.d+1)
			cfg.Kappa = tc.l * eps / (4 * math.Sqrt(float64(tc.maxUpdt)))
		}
		c := mustCounter(t, cfg, counterZeroLaplace{}, dprand.Seeded(1))
		if tc.maxUpdt != 0 && c.InternalState().MaxUpdates != tc.maxUpdt {
			t.Fatalf("max updates %d, want %d", c.InternalState().MaxUpdates, tc.maxUpdt)
		}
		hist := []int{0}
		for i, x := range stream {
			hist = append(hist, hist[i]+x)
			out, err := c.Step(x)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(i+1, hist[i+1], hist); out != want {
				t.Fatalf("cascading %+v step %d: output %g, want %g", cfg, i+1, out, want)
			}
		}
	}
}

// TestSimpleCounterRMSE checks Var(output_t - n_t) = 2t/eps^2 for the simple
// counter: the empirical RMSE at each checkpoint matches sqrt(2t)/eps within
// 5 standard errors of the MSE estimate (Var(X^2) <= 20 b^4 for a single
// Laplace draw, 2 sigma^4 for long sums). Also checks the randomized-response
// variant: unbiased with variance t e^eps/(e^eps-1)^2.
//
// False alarm: 40 checks at 5 SE, 2.3e-5 together. Power against "noise
// scale x0.8" (MSE x0.64): the MSE's relative SE over 1500 runs is at most
// 0.058 (t = 1) and 0.037 from t = 10, so the cut is 6.2 to 9.9 SE, beyond
// the 5 SE bar at t >= 10 with certainty.
func TestSimpleCounterRMSE(t *testing.T) {
	t.Parallel()
	if counterRaceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	const T = 1024
	runs := 1500.0
	if testing.Short() {
		runs = 300
	}
	checkpoints := []int{1, 10, 100, 500, 1024}
	stream := counterStream(T, 0.2, 11)
	for _, tc := range []struct {
		alg     CounterAlgorithm
		eps     float64
		stepVar float64
		kurt    float64 // bound on Var(err^2)/MSE^2 at t = 1
	}{
		{CounterSimple, 1, 2, 5},
		{CounterSimple, 0.25, 2 / 0.0625, 5},
		{CounterRandomizedResponse, 1, rrStepVariance(1), 10},
		{CounterRandomizedResponse, 0.25, rrStepVariance(0.25), 10},
	} {
		lap, rng := counterSeeded(101)
		sq := make([]float64, len(checkpoints))
		sum := make([]float64, len(checkpoints))
		for r := 0; r < int(runs); r++ {
			c := mustCounter(t, CounterConfig{Algorithm: tc.alg, Epsilon: tc.eps, Horizon: T}, lap, rng)
			n, k := 0, 0
			for i, x := range stream {
				n += x
				out, err := c.Step(x)
				if err != nil {
					t.Fatal(err)
				}
				if i+1 == checkpoints[k] {
					e := out - float64(n)
					sq[k] += e * e
					sum[k] += e
					k++
				}
			}
		}
		for k, tt := range checkpoints {
			want := tc.stepVar * float64(tt)
			mse := sq[k] / runs
			se := want * math.Sqrt(math.Max(tc.kurt/float64(tt), 2)/runs)
			if math.Abs(mse-want) > 5*se {
				t.Errorf("%s eps %g t=%d: MSE %.4g, want %.4g (RMSE %.4g vs %.4g), 5 SE = %.3g",
					tc.alg, tc.eps, tt, mse, want, math.Sqrt(mse), math.Sqrt(want), 5*se)
			}
			if bias := sum[k] / runs; math.Abs(bias) > 5*math.Sqrt(want/runs) {
				t.Errorf("%s eps %g t=%d: mean error %.4g, want 0", tc.alg, tc.eps, tt, bias)
			}
		}
	}
}

// counterTreeNodes is the number of released nodes summed at step s.
func counterTreeNodes(s int64, L int) int64 {
	B := int64(1) << (L - 1)
	return s/B + int64(bits.OnesCount64(uint64(s%B)))
}

// TestTreeCounterErrorBound checks the tree counter's error law: the output
// at step t is unbiased with variance exactly 4 (L/eps)^2 nodes(t) (checked
// pooled over t and at single checkpoints, 5 SE), and every error lies within
// the Chernoff bound 2b(k ln(4/3) + ln(2/beta)) for a sum of k = 2 nodes(t)
// Lap(b) draws, beta = 1e-9 per output.
//
// False alarm: the variance checks at 5 SE, about 6e-7 each; the Chernoff
// bound 1e-9 per output, 1e-3 over all 300 x 7096 outputs at most. Power
// against a cut noise scale: see TestCounterNoiseCalibrated (stated there);
// here a tree with its levels' noise x0.8 moves the pooled variance by 36%.
func TestTreeCounterErrorBound(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	if counterRaceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	runs := 300
	if testing.Short() {
		runs = 60
	}
	for _, tc := range []struct {
		eps float64
		T   int64
	}{{1, 1 << 12}, {0.5, 3000}} {
		L := counterTreeLevels(tc.T)
		b := float64(L) / tc.eps
		stream := counterStream(int(tc.T), 0.05, 3)
		lap, rng := counterSeeded(202)
		var pooled, pooledWant float64
		checkpoints := map[int64]int{tc.T / 3: 0, tc.T - 1: 1, tc.T: 2}
		cpSq := make([]float64, 3)
		for r := 0; r < runs; r++ {
			c := mustCounter(t, CounterConfig{Algorithm: CounterTree, Epsilon: tc.eps, Horizon: tc.T}, lap, rng)
			n := 0
			for i, x := range stream {
				n += x
				out, err := c.Step(x)
				if err != nil {
					t.Fatal(err)
				}
				s := int64(i + 1)
				e := out - float64(n)
				k := float64(2 * counterTreeNodes(s, L))
				if bound := 2 * b * (k*math.Log(4.0/3) + math.Log(2/1e-9)); math.Abs(e) > bound {
					t.Fatalf("eps %g T %d step %d: |error| %g beyond bound %g", tc.eps, tc.T, s, math.Abs(e), bound)
				}
				pooled += e * e
				pooledWant += 2 * k * b * b
				if cp, ok := checkpoints[s]; ok {
					cpSq[cp] += e * e
				}
			}
		}
		// Pooled over t the errors of one run share nodes; a conservative SE
		// treats each run's pooled MSE as one draw with relative SD <= 1.
		if ratio := pooled / pooledWant; math.Abs(ratio-1) > 5/math.Sqrt(float64(runs)) {
			t.Errorf("eps %g T %d: pooled MSE / predicted = %.4f", tc.eps, tc.T, ratio)
		}
		if pred := CounterPredictedMSE(CounterTree, tc.eps, tc.T); math.Abs(pooledWant/float64(runs*int(tc.T))/pred-1) > 1e-9 {
			t.Errorf("CounterPredictedMSE(tree) = %g, direct sum %g", pred, pooledWant/float64(runs*int(tc.T)))
		}
		for s, cp := range checkpoints {
			want := 4 * b * b * float64(counterTreeNodes(s, L))
			if mse := cpSq[cp] / float64(runs); math.Abs(mse-want) > 5*want*math.Sqrt(5/float64(runs)) {
				t.Errorf("eps %g T %d t=%d: MSE %.4g, want %.4g", tc.eps, tc.T, s, mse, want)
			}
		}
	}
}

// counterPooledRMSE runs a fresh counter over stream `runs` times and returns
// the RMSE pooled over all steps and runs.
func counterPooledRMSE(t testing.TB, cfg CounterConfig, stream []int, runs int, seed uint64) float64 {
	lap, rng := counterSeeded(seed)
	var sq float64
	for r := 0; r < runs; r++ {
		c := mustCounter(t, cfg, lap, rng)
		n := 0
		for _, x := range stream {
			n += x
			out, err := c.Step(x)
			if err != nil {
				t.Fatal(err)
			}
			e := out - float64(n)
			sq += e * e
		}
	}
	return math.Sqrt(sq / float64(runs*len(stream)))
}

// TestTreeBeatsSimple checks that at T = 2^16, eps = 1, on a sparse stream
// (1% ones) the tree counter's RMSE (pooled over all steps) is at least 2.5
// times smaller than the simple counter's. Predicted: 256 vs 87.5. The
// simple counter's pooled MSE has relative SD about 1.15/sqrt(runs) (a
// random walk's mean square), so 300 runs keep the check 3+ SE from the
// threshold: false alarm below 1.3e-3 (normal). Power: a tree no better than
// the simple counter (ratio 1 instead of 2.9) fails with certainty.
func TestTreeBeatsSimple(t *testing.T) {
	t.Parallel()
	if testing.Short() || counterRaceEnabled {
		t.Skip("statistical: runs without -short and -race (make test's oracle phase, docs/testing.md)")
	}
	const T = 1 << 16
	const simpleRuns, treeRuns = 300, 40
	stream := counterStream(T, 0.01, 5)
	simple := counterPooledRMSE(t, CounterConfig{Algorithm: CounterSimple, Epsilon: 1, Horizon: T}, stream, simpleRuns, 1)
	tree := counterPooledRMSE(t, CounterConfig{Algorithm: CounterTree, Epsilon: 1, Horizon: T}, stream, treeRuns, 2)
	t.Logf("T=2^16 eps=1: simple RMSE %.1f (predicted %.1f), tree RMSE %.1f (predicted %.1f), ratio %.2f",
		simple, math.Sqrt(CounterPredictedMSE(CounterSimple, 1, T)), tree, math.Sqrt(CounterPredictedMSE(CounterTree, 1, T)), simple/tree)
	if simple < 2.5*tree {
		t.Errorf("simple RMSE %.1f < 2.5 x tree RMSE %.1f", simple, tree)
	}
}

// TestCascadingTheoremBound checks that the cascading counter's error stays
// within Theorem 6.1's bound (explicit-constant form, theoremBound, which
// fails with probability about exp(-kappa) per step) at every step of several
// runs, for explicit parameters and for the Corollary 6.1 parameters. The
// dense case's bound at the last step is below the true count, so a counter
// that lost its counts would fail here too (the exact bookkeeping is checked
// by TestCountersExactWithoutNoise).
//
// False alarm: about 2 exp(-kappa) per step, so at most 2^15 x 10 x 2e-11
// = 7e-6 for kappa = 25, 1.3e-3 for kappa = 20 (case 3), nothing for the
// corollary's kappa = 225. Power: a counter losing its counts fails the
// dense case's bound at T with certainty.
func TestCascadingTheoremBound(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	if counterRaceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	const T = 1 << 15
	runs := 10
	if testing.Short() {
		runs = 3
	}
	for _, tc := range []struct {
		name string
		cfg  CounterConfig
		p    float64
	}{
		{"d=2 kappa=25 sparse", CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T, D: 2, Kappa: 25}, 0.02},
		{"d=2 kappa=25 dense", CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T, D: 2, Kappa: 25}, 0.5},
		{"d=3 l=500 kappa=20", CounterConfig{Algorithm: CounterCascading, Epsilon: 2, Horizon: T, D: 3, L: 500, Kappa: 20}, 0.1},
		{"corollary 6.1", CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T}, 0.3},
	} {
		stream := counterStream(T, tc.p, 9)
		lap, rng := counterSeeded(303)
		p := counterCascadingDerive(tc.cfg.Epsilon, tc.cfg.Horizon, tc.cfg.D, tc.cfg.L, tc.cfg.Kappa)
		worst, n := 0.0, 0
		for r := 0; r < runs; r++ {
			c := mustCounter(t, tc.cfg, lap, rng)
			n = 0
			for i, x := range stream {
				n += x
				out, err := c.Step(x)
				if err != nil {
					t.Fatal(err)
				}
				bound := p.theoremBound(int64(i+1), int64(n))
				e := math.Abs(out - float64(n))
				if e > bound {
					t.Fatalf("%s: step %d: error %g beyond Theorem 6.1 bound %g", tc.name, i+1, e, bound)
				}
				worst = max(worst, e/bound)
			}
		}
		t.Logf("%s: %+v, largest error/bound %.3f, bound at T %.0f, n_T %d", tc.name, p, worst, p.theoremBound(T, int64(n)), n)
		if tc.p == 0.5 && p.theoremBound(T, int64(n)) >= float64(n) {
			t.Errorf("%s: bound %g not below n_T = %d", tc.name, p.theoremBound(T, int64(n)), n)
		}
	}
}

// TestCounterMarshalRoundTrip checks that a counter restored from its bytes
// continues exactly like the original (same noise draws, same outputs) and
// has the same public and internal state.
func TestCounterMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	stream := counterStream(700, 0.3, 13)
	for _, cfg := range []CounterConfig{
		{Algorithm: CounterSimple, Epsilon: 0.5, Horizon: 1000},
		{Algorithm: CounterRandomizedResponse, Epsilon: 0.5, Horizon: 1000},
		{Algorithm: CounterTree, Epsilon: 0.5, Horizon: 1000},
		{Algorithm: CounterCascading, Epsilon: 0.5, Horizon: 1000},
		{Algorithm: CounterCascading, Epsilon: 2, Horizon: 1000, D: 3, L: 10, Kappa: 0.3},
	} {
		lap, rng := counterSeeded(404)
		c := mustCounter(t, cfg, lap, rng)
		for _, x := range stream[:500] {
			if _, err := c.Step(x); err != nil {
				t.Fatal(err)
			}
		}
		data, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		// Both copies continue with identically seeded noise.
		c2, err := UnmarshalCounter(data, dprandtest.NewLaplace(dprand.Seeded(9)), dprand.Seeded(10))
		if err != nil {
			t.Fatalf("%s: unmarshal: %v", cfg.Algorithm, err)
		}
		j1, _ := json.Marshal(c.InternalState())
		j2, _ := json.Marshal(c2.InternalState())
		if !bytes.Equal(j1, j2) {
			t.Fatalf("%s: internal state differs after round trip", cfg.Algorithm)
		}
		counterSetNoise(c, dprandtest.NewLaplace(dprand.Seeded(9)), dprand.Seeded(10))
		for i, x := range stream[500:] {
			a, err1 := c.Step(x)
			b, err2 := c2.Step(x)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("%s: step %d after restore: %g/%v vs %g/%v", cfg.Algorithm, 501+i, a, err1, b, err2)
			}
		}
		again, _ := c2.MarshalBinary()
		final, _ := c.MarshalBinary()
		if !bytes.Equal(again, final) {
			t.Errorf("%s: encodings differ after identical continuation", cfg.Algorithm)
		}
		t.Logf("%s: %d bytes", cfg.Algorithm, len(data))
		// Every truncation and any trailing byte is rejected.
		for n := 0; n < len(data); n++ {
			if _, err := UnmarshalCounter(data[:n], lap, rng); err == nil {
				t.Fatalf("%s: truncation to %d bytes accepted", cfg.Algorithm, n)
			}
		}
		if _, err := UnmarshalCounter(append(append([]byte(nil), data...), 0), lap, rng); err == nil {
			t.Fatalf("%s: trailing byte accepted", cfg.Algorithm)
		}
	}
	// Inconsistent contents are rejected: steps beyond the horizon.
	c := mustCounter(t, CounterConfig{Algorithm: CounterSimple, Epsilon: 1, Horizon: 3}, counterZeroLaplace{}, dprand.Seeded(1))
	data, _ := c.MarshalBinary()
	bad := append([]byte(nil), data...)
	bad[3+8+1] = 4 // steps = 4 > horizon 3
	if _, err := UnmarshalCounter(bad, counterZeroLaplace{}, dprand.Seeded(1)); err == nil {
		t.Error("steps beyond horizon accepted")
	}
}

// counterSetNoise swaps a counter's noise sources (test helper).
func counterSetNoise(c Counter, lap dprand.Laplacer, rng *rand.Rand) {
	switch c := c.(type) {
	case *simpleCounter:
		c.lap = lap
	case *rrCounter:
		c.rng = rng
	case *treeCounter:
		c.lap = lap
	case *cascadingCounter:
		c.lap = lap
	}
}

// TestCounterHorizon checks that a counter refuses steps beyond its horizon
// and invalid bits without changing state, that CounterSteps refuses a whole
// batch that would not fit, and that a failed noise draw makes the counter
// refuse further steps.
func TestCounterHorizon(t *testing.T) {
	t.Parallel()
	for _, alg := range []CounterAlgorithm{CounterSimple, CounterRandomizedResponse, CounterTree, CounterCascading} {
		lap, rng := counterSeeded(505)
		c := mustCounter(t, CounterConfig{Algorithm: alg, Epsilon: 1, Horizon: 5}, lap, rng)
		if _, err := CounterSteps(c, []int{1, 0, 1, 1, 0, 1}); !errors.Is(err, ErrCounterHorizon) || c.Steps() != 0 {
			t.Fatalf("%s: oversize batch: err %v, steps %d", alg, err, c.Steps())
		}
		if _, err := CounterSteps(c, []int{1, 2}); !errors.Is(err, ErrCounterBit) || c.Steps() != 0 {
			t.Fatalf("%s: bad bit in batch: err %v, steps %d", alg, err, c.Steps())
		}
		out, err := CounterSteps(c, []int{1, 0, 1, 1, 0})
		if err != nil || len(out) != 5 {
			t.Fatalf("%s: full batch: %v", alg, err)
		}
		before, _ := c.MarshalBinary()
		if _, err := c.Step(1); !errors.Is(err, ErrCounterHorizon) {
			t.Fatalf("%s: step beyond horizon: err %v", alg, err)
		}
		if _, err := c.Step(-1); err == nil {
			t.Fatalf("%s: bit -1 accepted", alg)
		}
		after, _ := c.MarshalBinary()
		if !bytes.Equal(before, after) || c.Steps() != 5 || c.State().Count != out[4] {
			t.Fatalf("%s: refused steps changed the state", alg)
		}
		if eps, level := c.Cost(); eps != 1 || level != counterLevel {
			t.Errorf("%s: Cost() = %g, %q", alg, eps, level)
		}
	}
	for _, alg := range []CounterAlgorithm{CounterSimple, CounterTree, CounterCascading} {
		f := &counterFailingLaplace{ok: 20}
		c := mustCounter(t, CounterConfig{Algorithm: alg, Epsilon: 1, Horizon: 100}, f, dprand.Seeded(1))
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = c.Step(1)
		}
		if err == nil {
			t.Fatalf("%s: failing noise source went unnoticed", alg)
		}
		f.ok = 1000
		if _, err := c.Step(1); !errors.Is(err, ErrCounterBroken) {
			t.Fatalf("%s: step after failure: %v, want ErrCounterBroken", alg, err)
		}
	}
}
