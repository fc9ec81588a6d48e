package panprivate

import (
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Noise calibration, measured (issue 38). Every test here runs the mechanism
// many times with seeded noise, takes the noise actually added (the output
// minus the noiseless value, or an intruder's view of a pure-noise
// accumulator), divides its square by the variance that the asked epsilon
// requires, computed here from the papers' formulas and never from the
// code's own scale, and checks that the mean of these ratios is 1.
//
// The statistic. For noise e of required variance s2, z = e^2/s2 has mean 1
// and variance 2 + kappa, kappa the excess kurtosis of e: 3 for one Laplace
// draw, 3/k for a sum of k draws, below 3 for the binomial noise of
// randomized response at the epsilons used here. So Var(z) <= 5, and the
// mean of n independent ratios has standard deviation at most sqrt(5/n).
// calibrationDraws = 20000 gives at most 0.0158; a test fails when the mean
// leaves [1 - calibrationBand, 1 + calibrationBand] = [0.9, 1.1], 6.3
// standard deviations away:
//
//   - false alarm: below 1e-9 per check (normal tail at 6.3 sd; the seeds are
//     fixed, so the test is deterministic, and this is the chance that a
//     fresh seed would fail a correct mechanism);
//   - power against the planted defect "noise variance cut by 20%" (the
//     scale cut by 10.6%): the mean is then 0.8, 6.3 sd below the band,
//     missed with probability below 1e-9; a 20% cut of the noise scale
//     (variance x0.64) is missed with probability below 1e-30. A 20% scale
//     cut at only one of the tree counter's two draws per node (variance
//     x0.82) is still caught with probability 1 - 3e-7.
//
// Too much noise fails too (the band is two-sided): it is no privacy loss,
// but the error bars would then lie. The tests exercise no concurrency and
// are skipped under -race; make test runs them in its oracle phase (about
// 3 s of CPU in all).
const (
	calibrationDraws = 20000
	calibrationBand  = 0.1
)

// noiseRatios pools the ratios e^2/s2 of one check.
type noiseRatios struct {
	n   int
	sum float64
}

func (r *noiseRatios) add(e, variance float64) {
	r.n++
	r.sum += e * e / variance
}

// check fails t when fewer than calibrationDraws ratios were pooled or their
// mean leaves the band.
func (r *noiseRatios) check(t *testing.T, what string) {
	t.Helper()
	if r.n < calibrationDraws {
		t.Fatalf("%s: only %d noise draws pooled, the stated power needs %d", what, r.n, calibrationDraws)
	}
	mean := r.sum / float64(r.n)
	t.Logf("%s: measured/required noise variance %.4f over %d draws", what, mean, r.n)
	if math.Abs(mean-1) > calibrationBand {
		t.Errorf("%s: measured noise variance / required variance = %.4f over %d draws, want within %g of 1 (sd of the mean <= %.4f)",
			what, mean, r.n, calibrationBand, math.Sqrt(5/float64(r.n)))
	}
}

// laplaceVariance is the variance 2b^2 of Lap(b).
func laplaceVariance(b float64) float64 { return 2 * b * b }

// releaseSensitivity measures, on e's current state, how far one user's
// entries of the state can move the noiseless estimate that a release
// noises: it flips each of the entries of one sampled user in turn, the
// estimate being linear in them, and adds the absolute changes. It returns
// also the sensitivity the papers' closed form gives (1/(n gap) for a
// density over n entries with gap = P1 - P0 of the paper's pair after the
// announced intrusions, t/(m gap) for the cropped mean), or NaN where there
// is none in closed form.
func releaseSensitivity(t *testing.T, e Estimator, intrusions int) (measured, closed float64) {
	t.Helper()
	cfg := e.Config()
	p0, p1 := paperPair(cfg.Algorithm, cfg.Epsilon)
	// An intrusion maps P(1) = q to P0 + q (P1 - P0) (base pair): the gap
	// g of the pair in use becomes g (P1 - P0).
	gap := math.Pow(p1-p0, float64(intrusions+1))
	flip := func(b bitset, i uint64) { b.set(i, !b.get(i)) }
	switch x := e.(type) {
	case *sampledDensity:
		before := x.estimate()
		flip(x.bits, 0)
		measured = math.Abs(x.estimate() - before)
		flip(x.bits, 0)
		return measured, 1 / (float64(cfg.SampleSize) * gap)
	case *croppedMean:
		before := x.estimate()
		flip(x.bits, 0)
		measured = math.Abs(x.estimate() - before)
		flip(x.bits, 0)
		return measured, float64(cfg.T) / (float64(cfg.SampleSize) * gap)
	case *ppds:
		before := x.estimate()
		x.members++
		measured = math.Abs(x.estimate() - before)
		x.members--
		return measured, 1 / (float64(cfg.UniverseSize>>x.level) * gap)
	case *heavyHitters:
		before := x.estimate()
		L := uint64(len(x.thresholds))
		for i := uint64(0); i < L; i++ {
			flip(x.bits, i)
			measured += math.Abs(x.estimate() - before)
			flip(x.bits, i)
		}
		return measured, math.NaN()
	}
	t.Fatalf("no sensitivity oracle for %T", e)
	return 0, 0
}

// TestReleaseNoiseCalibrated: for every kind with a linear release
// (density by dwork, opt_bern and ppds, cropped_mean, heavy_hitters), in both
// release_noise modes and after an announced intrusion, the noise a release
// adds has the variance 2 (Delta/eps)^2 of the Laplace mechanism at the
// epsilon the release says it spent, Delta being the sensitivity measured on
// the state (releaseSensitivity). Calibrated releases must spend exactly the
// asked epsilon. False alarm and power: see calibrationDraws (planted
// "release noise halved at release.go's noise call": variance x0.25, caught
// with certainty).
func TestReleaseNoiseCalibrated(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	cases := []struct {
		cfg        Config
		intrusions int
	}{
		{cfg: Config{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100}},
		{cfg: Config{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100}},
		{cfg: Config{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, ReleaseNoise: NoisePaper}},
		{cfg: Config{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.4, UniverseSize: 1000, SampleSize: 100}, intrusions: 1},
		{cfg: Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.3, UniverseSize: 4096, SampleSize: 64}},
		{cfg: Config{Estimator: KindCroppedMean, Algorithm: AlgorithmDwork, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 100, T: 3}},
		{cfg: Config{Estimator: KindCroppedMean, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, T: 5, ReleaseNoise: NoisePaper}},
		{cfg: Config{Estimator: KindHeavyHitters, Epsilon: 0.3, UniverseSize: 1000, SampleSize: 50, K: 4, MaxOccurrences: 64}},
	}
	for i, tc := range cases {
		name := fmt.Sprintf("%s/%s/%s/intrusions=%d", tc.cfg.Estimator, tc.cfg.Algorithm, tc.cfg.ReleaseNoise, tc.intrusions)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := dprand.Seeded(uint64(100 + i))
			e := mustNew(t, tc.cfg, rng)
			if err := e.Apply(uniformStream(rng, tc.cfg.UniverseSize, 400)); err != nil {
				t.Fatal(err)
			}
			for range tc.intrusions {
				e.Intrude()
			}
			delta, closed := releaseSensitivity(t, e, tc.intrusions)
			if !math.IsNaN(closed) && math.Abs(delta-closed) > 1e-9*closed {
				t.Fatalf("measured sensitivity %g, the papers' closed form gives %g", delta, closed)
			}
			est := noiseless(t, e)
			noise := seededNoise(uint64(200 + i))
			var ratios noiseRatios
			for range calibrationDraws {
				r, err := e.Release(noise)
				if err != nil {
					t.Fatal(err)
				}
				if e.Config().ReleaseNoise == NoiseCalibrated && math.Abs(r.EpsilonSpent-tc.cfg.Epsilon) > 1e-12*tc.cfg.Epsilon {
					t.Fatalf("calibrated release spent %g, asked %g", r.EpsilonSpent, tc.cfg.Epsilon)
				}
				ratios.add(r.Estimate-est, laplaceVariance(delta/r.EpsilonSpent))
			}
			ratios.check(t, name)
		})
	}
}

// tapLaplacer passes draws through from inner and records them.
type tapLaplacer struct {
	inner  dprand.Laplacer
	draws  []float64
	scales []float64
}

func (l *tapLaplacer) Laplace(scale float64) (float64, error) {
	x, err := l.inner.Laplace(scale)
	l.draws, l.scales = append(l.draws, x), append(l.scales, scale)
	return x, err
}

// TestIncidenceReleaseNoiseCalibrated: an incidence release adds Laplace
// noise to each entry of the l moduli's histograms of counter fractions,
// whose l1 sensitivity is 2l/m (one user's counter leaves one bucket and
// enters another, per modulus), then fits a linear program. The fit is not
// linear, so the noise is checked at the histogram: the draws (tapped) have
// the variance 2 (2l/(m eps))^2 at the epsilon the release spent, and the
// release's estimate is exactly the fit of the histogram plus those draws,
// unscaled. False alarm and power: see calibrationDraws.
func TestIncidenceReleaseNoiseCalibrated(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	for i, cfg := range []Config{
		{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 1000, SampleSize: 100, T: 2, MaxOccurrences: 8},
		{Estimator: KindIncidence, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 200, T: 1, MaxOccurrences: 4, Moduli: 2, K: 13, ReleaseNoise: NoisePaper},
	} {
		rng := dprand.Seeded(uint64(300 + i))
		e := mustNew(t, cfg, rng)
		if err := e.Apply(uniformStream(rng, cfg.UniverseSize, 300)); err != nil {
			t.Fatal(err)
		}
		in := e.(*incidence)
		l, m := float64(len(in.primes)), float64(cfg.SampleSize)
		if want := float64(e.Config().Moduli); l != want {
			t.Fatalf("%d moduli in the state, config says %g", len(in.primes), want)
		}
		tap := &tapLaplacer{inner: seededNoise(uint64(400 + i))}
		var ratios noiseRatios
		for ratios.n < calibrationDraws {
			tap.draws, tap.scales = tap.draws[:0], tap.scales[:0]
			r, err := e.Release(tap)
			if err != nil {
				t.Fatal(err)
			}
			b := 2 * l / (m * r.EpsilonSpent)
			best, k := math.Inf(1), 0
			for j, p := range in.primes {
				q := in.histogram(j)
				for u := range q {
					ratios.add(tap.draws[k], laplaceVariance(b))
					q[u] += tap.draws[k]
					k++
				}
				f, err := in.residueFractions(j, q)
				if err != nil {
					t.Fatal(err)
				}
				best = min(best, f[cfg.T%p])
			}
			if k != len(tap.draws) || r.Estimate != best {
				t.Fatalf("release %g with %d draws, the fit of histogram + draws gives %g with %d draws", r.Estimate, len(tap.draws), best, k)
			}
		}
		ratios.check(t, fmt.Sprintf("incidence %d", i))
	}
}

// noiseView is one value an output or an intruder shows, pure noise under
// zero input, with the variance epsilon requires of it.
type noiseView struct {
	pool     string // what the value is: "output", "partial sum", ...
	value    float64
	variance float64
}

// counterNoise returns the views of a counter fed zeros up to step (its
// output out, its internal state st after the step) with the variances
// epsilon requires, from the constructions' definitions:
//
//   - simple: the output holds t draws Lap(1/eps);
//   - randomized response: t reports flipped with probability
//     f = 1/(1+e^eps), debiased by 1/(1-2f);
//   - tree with L levels (1 <= L <= bits.Len(T)): every event lies in L
//     nodes, so every draw is Lap(L/eps); the output sums the
//     floor(t/B) + popcount(t mod B) nodes tiling [1, t] (B = 2^(L-1)), two
//     draws each; an open node's partial sum holds one draw;
//   - cascading with d levels: every draw is Lap(1/eps'), eps' =
//     eps/(2d+1) (Theorem 6.1); each of the F updates of the output adds
//     two draws (the flushed accumulator's and its own); an accumulator
//     holds one draw; level 1's buffer one draw per update, higher levels'
//     two (the flushed accumulator below and their own). Buffers are
//     returned only when buffers is true: a threshold the noise can reach
//     truncates their law.
//
// updates is the number of output changes so far (cascading's F).
func counterNoise(t *testing.T, alg CounterAlgorithm, eps float64, horizon, step, updates int64, out float64, st CounterInternalState, buffers bool) []noiseView {
	t.Helper()
	switch alg {
	case CounterSimple:
		return []noiseView{{"output", out, laplaceVariance(1/eps) * float64(step)}}
	case CounterRandomizedResponse:
		f := 1 / (1 + math.Exp(eps))
		return []noiseView{{"output", out, float64(step) * f * (1 - f) / ((1 - 2*f) * (1 - 2*f))}}
	case CounterTree:
		L := st.Levels
		if L < 1 || L > bits.Len64(uint64(horizon)) {
			t.Fatalf("tree with %d levels for horizon %d", L, horizon)
		}
		v := laplaceVariance(float64(L) / eps)
		B := int64(1) << (L - 1)
		nodes := step/B + int64(bits.OnesCount64(uint64(step%B)))
		views := []noiseView{{"output", out, 2 * v * float64(nodes)}}
		for _, p := range st.Partial {
			if p != nil {
				views = append(views, noiseView{"partial sum", *p, v})
			}
		}
		return views
	case CounterCascading:
		if st.D < 1 {
			t.Fatalf("cascading counter with %d levels", st.D)
		}
		v := laplaceVariance(float64(2*st.D+1) / eps)
		var views []noiseView
		if updates > 0 {
			views = append(views, noiseView{"output", out, 2 * v * float64(updates)})
		} else if out != 0 {
			t.Fatalf("step %d: output %g, want exactly 0 before any update", step, out)
		}
		for _, a := range st.Accumulators {
			views = append(views, noiseView{"accumulator", a, v})
		}
		for i, u := range st.Updates {
			if buffers && u > 0 {
				per := 2 * v
				if i == 0 {
					per = v
				}
				views = append(views, noiseView{"buffer", st.Buffers[i], per * float64(u)})
			}
		}
		return views
	}
	t.Fatalf("no noise law for counter %q", alg)
	return nil
}

// TestCounterNoiseCalibrated: every counter, fed zeros, outputs pure noise
// whose variance at step t is what epsilon requires (counterNoise), and
// every accumulator an intruder would see holds the noise pan-privacy
// requires; each kind of view is pooled and checked on its own. Each
// replicate counter is stepped to one step t (cycling through 1..maxStep),
// so the pooled ratios are independent. False alarm and power: see
// calibrationDraws (planted "tree counter noise x0.8": output variance
// x0.64, caught with certainty; at one of its two draws per node only,
// variance x0.82, caught with probability 1 - 3e-7).
func TestCounterNoiseCalibrated(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	for i, tc := range []struct {
		cfg     CounterConfig
		maxStep int64
		pools   []string // the views checked
		buffers bool     // the buffers' threshold is far above their noise
	}{
		{cfg: CounterConfig{Algorithm: CounterSimple, Epsilon: 0.5, Horizon: 32}, maxStep: 32, pools: []string{"output"}},
		{cfg: CounterConfig{Algorithm: CounterRandomizedResponse, Epsilon: 1, Horizon: 32}, maxStep: 32, pools: []string{"output"}},
		// T = 32 gives L = 1 (blocks only), 256 L = 6, 4096 L = 10 or 11
		{cfg: CounterConfig{Algorithm: CounterTree, Epsilon: 0.5, Horizon: 32}, maxStep: 32, pools: []string{"output", "partial sum"}},
		{cfg: CounterConfig{Algorithm: CounterTree, Epsilon: 2, Horizon: 256}, maxStep: 256, pools: []string{"output", "partial sum"}},
		{cfg: CounterConfig{Algorithm: CounterTree, Epsilon: 0.5, Horizon: 4096}, maxStep: 130, pools: []string{"output", "partial sum"}},
		// default d, l, kappa (d = 3): l is 288/eps', far above the
		// buffers' noise; the output moves once, at step 64
		{cfg: CounterConfig{Algorithm: CounterCascading, Epsilon: 0.5, Horizon: 64}, maxStep: 63, pools: []string{"accumulator", "buffer"}, buffers: true},
		// d = 1, (l eps'/(4 kappa))^2 = 1: the output is updated every step
		{cfg: CounterConfig{Algorithm: CounterCascading, Epsilon: 0.5, Horizon: 32, D: 1, Kappa: 1, L: 4 * 3 / 0.5}, maxStep: 32, pools: []string{"output", "accumulator"}},
		// d = 2, two updates per flush, thresholds the noise can cross
		{cfg: CounterConfig{Algorithm: CounterCascading, Epsilon: 0.5, Horizon: 32, D: 2, Kappa: 1, L: 4 * math.Sqrt2 * 5 / 0.5 * 1.0000001}, maxStep: 32, pools: []string{"output", "accumulator"}},
	} {
		name := fmt.Sprintf("%s/eps=%g/T=%d/d=%d", tc.cfg.Algorithm, tc.cfg.Epsilon, tc.cfg.Horizon, tc.cfg.D)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pools := map[string]*noiseRatios{}
			for _, p := range tc.pools {
				pools[p] = &noiseRatios{}
			}
			short := func() bool {
				for _, p := range pools {
					if p.n < calibrationDraws {
						return true
					}
				}
				return false
			}
			for r := 0; short(); r++ {
				seed := uint64(1_000_000*i + r)
				c, err := NewCounter(tc.cfg, seededNoise(seed), dprand.Seeded(seed))
				if err != nil {
					t.Fatal(err)
				}
				step := 1 + int64(r)%tc.maxStep
				var out float64
				var updates int64
				for s := int64(0); s < step; s++ {
					o, err := c.Step(0)
					if err != nil {
						t.Fatal(err)
					}
					if o != out {
						updates++
					}
					out = o
				}
				for _, v := range counterNoise(t, tc.cfg.Algorithm, tc.cfg.Epsilon, tc.cfg.Horizon, step, updates, out, c.InternalState(), tc.buffers) {
					if p := pools[v.pool]; p != nil {
						p.add(v.value, v.variance)
					}
				}
			}
			for _, p := range tc.pools {
				pools[p].check(t, name+" "+p)
			}
		})
	}
}

// TestContinualOutputNoiseCalibrated: the continual density estimator's
// output is (ocount - t/2)/(m eps^2/2), ocount the counter's noisy count of
// the inputs y it fed; the counter's noise, recovered from the output and
// the inputs, has the variance a counter at the estimator's epsilon requires
// (counterNoise). False alarm and power: see calibrationDraws.
func TestContinualOutputNoiseCalibrated(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (docs/testing.md)")
	}
	for i, alg := range []CounterAlgorithm{CounterSimple, CounterTree} {
		cfg := ContinualDensityConfig{Epsilon: 0.3, UniverseSize: 100, SampleSize: 50, Horizon: 32, Counter: alg}
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			var outs noiseRatios
			for r := range calibrationDraws {
				seed := uint64(5000*i + r)
				rng := dprand.Seeded(seed)
				e, err := NewContinualDensity(cfg, seededNoise(seed), rng)
				if err != nil {
					t.Fatal(err)
				}
				step := 1 + int64(r)%cfg.Horizon
				var ys float64
				for s := int64(0); s < step; s++ {
					if _, err := e.Apply(rng.Uint64N(cfg.UniverseSize), false); err != nil {
						t.Fatal(err)
					}
					ys += float64(e.input)
				}
				eps := cfg.Epsilon
				ocount := e.Output()*float64(cfg.SampleSize)*eps*eps/2 + float64(step)/2
				views := counterNoise(t, alg, eps, cfg.Horizon, step, 0, ocount-ys, e.counter.InternalState(), false)
				outs.add(views[0].value, views[0].variance)
			}
			outs.check(t, string(alg))
		})
	}
}
