package panprivate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// ratioOK reports e^-eps <= a/b <= e^eps.
func ratioOK(a, b, eps float64) bool {
	r := a / b
	return r <= math.Exp(eps) && r >= math.Exp(-eps)
}

// TestStateLawsSatisfyEpsilonRatios checks the pan-privacy of every bit
// state: for the never-appeared law P0 and the appeared law P1 of each
// algorithm, before and after up to six announced intrusions,
// e^-eps <= P1(b)/P0(b) <= e^eps for b = 0 and b = 1, computed on the exact
// probabilities the sampler uses.
func TestStateLawsSatisfyEpsilonRatios(t *testing.T) {
	t.Parallel()
	for _, alg := range []Algorithm{AlgorithmDwork, AlgorithmOptBern, AlgorithmPPDS} {
		for _, eps := range []float64{1e-9, 0.001, 0.1, 0.25, 0.4999, 0.5} {
			law, err := newBitLaw(alg, eps)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k <= 6; k++ {
				l := law.withIntrusions(k)
				p0, p1 := l.p(false), l.p(true)
				if !ratioOK(p1, p0, eps) || !ratioOK(1-p1, 1-p0, eps) {
					t.Errorf("%s eps=%g after %d intrusions: P0=%v P1=%v violate the e^eps ratio bound", alg, eps, k, p0, p1)
				}
				if !(p1 >= p0) {
					t.Errorf("%s eps=%g after %d intrusions: P1 < P0", alg, eps, k)
				}
			}
		}
	}
}

// TestStateLawsMatchPapers checks the distributions against the papers'
// closed forms: Dwork's D0 = B(1/2), D1 = B(1/2 + eps/4) and, after one
// announced intrusion, D0' = B(1/2 + eps/8), D1' = B(1/2 + eps/8 + eps^2/16);
// OptBern's B((1 -+ tanh(eps/2))/2), whose ratio P1(1)/P0(1) attains e^eps
// (the whole budget) up to rounding.
func TestStateLawsMatchPapers(t *testing.T) {
	t.Parallel()
	const tol = 1e-15
	for _, eps := range []float64{0.01, 0.2, 0.5} {
		dw, _ := newBitLaw(AlgorithmDwork, eps)
		if math.Abs(dw.p(false)-0.5) > tol || math.Abs(dw.p(true)-(0.5+eps/4)) > tol {
			t.Errorf("dwork eps=%g: P0=%v P1=%v", eps, dw.p(false), dw.p(true))
		}
		s := dw.shifted()
		if math.Abs(s.p(false)-(0.5+eps/8)) > tol || math.Abs(s.p(true)-(0.5+eps/8+eps*eps/16)) > tol {
			t.Errorf("dwork eps=%g after intrusion: P0'=%v P1'=%v", eps, s.p(false), s.p(true))
		}
		ob, _ := newBitLaw(AlgorithmOptBern, eps)
		p0, p1 := paperPair(AlgorithmOptBern, eps)
		if math.Abs(ob.p(false)-p0) > tol || math.Abs(ob.p(true)-p1) > tol {
			t.Errorf("optbern eps=%g: P0=%v P1=%v, want %v %v", eps, ob.p(false), ob.p(true), p0, p1)
		}
		if r := ob.p(true) / ob.p(false); math.Abs(r-math.Exp(eps)) > 1e-12 {
			t.Errorf("optbern eps=%g: ratio %v does not spend the budget e^eps=%v", eps, r, math.Exp(eps))
		}
	}
}

// TestBitSamplerFrequencies checks that draw and rerandomize produce ones
// with the stated probabilities (within 5 standard errors).
func TestBitSamplerFrequencies(t *testing.T) {
	t.Parallel()
	const n = 200000
	rng := dprand.Seeded(5)
	law, _ := newBitLaw(AlgorithmOptBern, 0.5)
	law = law.shifted()
	for _, c := range []struct {
		name string
		draw func() bool
		p    float64
	}{
		{"D0", func() bool { return law.draw(rng, false) }, law.p(false)},
		{"D1", func() bool { return law.draw(rng, true) }, law.p(true)},
		{"rerandomize 0", func() bool { return law.rerandomize(rng, false) }, float64(law.base[0]) / probUnit},
		{"rerandomize 1", func() bool { return law.rerandomize(rng, true) }, float64(law.base[1]) / probUnit},
	} {
		t.Run(c.name, func(t *testing.T) {
			var k int
			for i := 0; i < n; i++ {
				if c.draw() {
					k++
				}
			}
			se := math.Sqrt(c.p * (1 - c.p) / n)
			if got := float64(k) / n; math.Abs(got-c.p) > 5*se {
				t.Errorf("%s: frequency %v, want %v", c.name, got, c.p)
			}
		})
	}
}

// TestCroppedMeanStateLaw checks Fig. 2's state law: a user appearing n times
// has bit 1 with probability P0 + (P1 - P0) min(n, t)/t (checked
// empirically over 12000 sampled users per count within 5 SE), which lies
// between P0 and P1 and so satisfies the e^eps ratio bound against n = 0.
func TestCroppedMeanStateLaw(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const (
		tt     = 4
		groups = 7 // counts 0..6
		per    = 12000
		n      = groups * per
	)
	for _, alg := range []Algorithm{AlgorithmDwork, AlgorithmOptBern} {
		cfg := Config{Estimator: KindCroppedMean, Algorithm: alg, Epsilon: 0.5, UniverseSize: n, SampleSize: n, T: tt}
		counts := make([]int, n)
		for u := range counts {
			counts[u] = u / per
		}
		rng := dprand.Seeded(7)
		e := mustNew(t, cfg, rng).(*croppedMean)
		if err := e.Apply(streamFromCounts(rng, counts)); err != nil {
			t.Fatal(err)
		}
		ones := make([]int, groups)
		for u := 0; u < n; u++ {
			if e.bits.get(e.perm.forward(uint64(u))) {
				ones[counts[u]]++
			}
		}
		p0, p1 := e.law.p(false), e.law.p(true)
		for c := 0; c < groups; c++ {
			want := p0 + (p1-p0)*float64(min(c, tt))/tt
			if !ratioOK(want, p0, 0.5) || !ratioOK(1-want, 1-p0, 0.5) {
				t.Errorf("%s n=%d: law %v violates the ratio bound", alg, c, want)
			}
			got := float64(ones[c]) / per
			if se := math.Sqrt(want * (1 - want) / per); math.Abs(got-want) > 5*se {
				t.Errorf("%s n=%d: fraction of ones %v, want %v ± %v", alg, c, got, want, se)
			}
		}
	}
}

// TestIncidenceNoiseLawRatios checks Fig. 5's state law for every prime
// modulus up to maxModulus: the initial noise law sums to 1, decreases, and
// for every count n the counter law P(c = i | n) = P(noise = i - n mod p) is
// within e^+-eps of the law for n = 0, also after announced intrusions
// (convolved laws).
func TestIncidenceNoiseLawRatios(t *testing.T) {
	t.Parallel()
	for _, eps := range []float64{0.01, 1.0 / 3, 1} {
		for _, p := range primesUpTo(maxModulus) {
			l, err := newModNoise(p, eps)
			if err != nil {
				t.Fatal(err)
			}
			var sum uint64
			for j, w := range l.weights {
				sum += w
				if j > 0 && w > l.weights[j-1] {
					t.Errorf("p=%d eps=%g: noise law increases at %d", p, eps, j)
				}
			}
			if sum != probUnit {
				t.Errorf("p=%d eps=%g: weights sum to %d", p, eps, sum)
			}
			for k := 0; k <= 3; k++ {
				pr := l.convolvedProbs(k)
				for n := 1; n < p; n++ {
					for i := 0; i < p; i++ {
						if a, b := pr[((i-n)%p+p)%p], pr[i]; !ratioOK(a, b, eps) {
							t.Fatalf("p=%d eps=%g intrusions=%d: P(c=%d|n=%d)/P(c=%d|0) = %v/%v", p, eps, k, i, n, i, a, b)
						}
					}
				}
			}
		}
	}
}

// TestPrivacyAccounting checks the stated guarantees: eps per state and per
// release, and (l+1) eps for the l+1 heavy-hitter tables (Theorem 4.1). With
// release_noise = paper a release costs its exact cost at the papers' noise;
// by default (calibrated) exactly the asked eps.
func TestPrivacyAccounting(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Estimator: KindDensity, Algorithm: AlgorithmDwork, Epsilon: 0.3, UniverseSize: 100, SampleSize: 10},
		{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.3, UniverseSize: 100, SampleSize: 10},
		{Estimator: KindCroppedMean, Epsilon: 0.3, UniverseSize: 100, SampleSize: 10, T: 3},
		{Estimator: KindHeavyHitters, Epsilon: 0.3, UniverseSize: 100, SampleSize: 10, K: 4, MaxOccurrences: 64},
		{Estimator: KindIncidence, Epsilon: 0.3, UniverseSize: 100, SampleSize: 10, T: 2, MaxOccurrences: 8},
	} {
		if p := mustNew(t, cfg, dprand.Seeded(1)).Privacy(); p.PerRelease != cfg.Epsilon {
			t.Errorf("%s: a default release costs %g, want exactly the asked epsilon %g", cfg.Estimator, p.PerRelease, cfg.Epsilon)
		}
		cfg.ReleaseNoise = NoisePaper
		e := mustNew(t, cfg, dprand.Seeded(1))
		want := 0.3
		if h, ok := e.(*heavyHitters); ok {
			want = 0.3 * float64(len(h.thresholds))
			if len(h.thresholds) != 8 { // t = 1, 2, ..., 128 >= 64 (1+rho)
				t.Errorf("heavy hitters: %d tables, want 8", len(h.thresholds))
			}
		}
		// A release adds Lap(1/(eps m)) to the debiased estimate, which one
		// entry moves by 1/(m gap): its exact cost is eps/gap — 4 for Dwork's
		// pair (gap eps/4), eps/tanh(eps/2) for OptBern's. Heavy hitters and
		// incidence keep the papers' charge of eps.
		wantRelease := 0.3
		switch cfg.Algorithm {
		case AlgorithmDwork:
			wantRelease = 4
		case AlgorithmPPDS:
			wantRelease = 0.3 / math.Tanh(0.15)
		}
		if cfg.Estimator == KindCroppedMean { // default algorithm dwork
			wantRelease = 4
		}
		if cfg.Estimator == KindIncidence { // l1 sensitivity 2k/m against Lap(k/(eps m))
			wantRelease = 0.6
		}
		if h, ok := e.(*heavyHitters); ok {
			wantRelease = bruteForceHHCost(h)
		}
		if p := e.Privacy(); math.Abs(p.State-want) > 1e-12 || math.Abs(p.PerRelease-wantRelease) > 1e-6*wantRelease {
			t.Errorf("%s: privacy %+v, want state %g and release %g", fmt.Sprint(cfg.Estimator), p, want, wantRelease)
		}
	}
}

// bruteForceHHCost measures the heavy-hitter release cost directly: over
// every setting of one user's bits (one per table) it finds the largest
// change of the noiseless estimate, and divides by the noise scale 1/(eps m).
func bruteForceHHCost(h *heavyHitters) float64 {
	L := len(h.thresholds)
	lo, hi := math.Inf(1), math.Inf(-1)
	for pattern := 0; pattern < 1<<L; pattern++ {
		for i := 0; i < L; i++ {
			h.bits.set(uint64(i), pattern>>i&1 == 1) // user 0's entry of table i
		}
		v := h.estimate()
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return (hi - lo) * h.cfg.Epsilon * float64(h.cfg.SampleSize)
}
