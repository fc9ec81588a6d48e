package panprivate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestHeavyHitterRecursionIsExactForSpreadCounts checks the algebra of
// Fig. 3's step 3: when the users of every interval (t_i, t_{i+1}] have
// multiplicities spread uniformly over it (the case the recursion is built
// for), the cropped means determine the interval fractions and the
// recursion recovers them exactly.
func TestHeavyHitterRecursionIsExactForSpreadCounts(t *testing.T) {
	t.Parallel()
	for _, rho := range []float64{1, 0.5, 0.3} {
		t.Run(fmt.Sprintf("rho=%g", rho), func(t *testing.T) {
			const l = 7
			tt := make([]float64, l+1)
			for i := range tt {
				tt[i] = math.Pow(1+rho, float64(i))
			}
			// a[i]: fraction uniform on (t_i, t_{i+1}], i < l; the rest at 0.
			a := []float64{0.1, 0.05, 0.15, 0.02, 0.08, 0.1, 0.03}
			e := make([]float64, l+1)
			for k := range e {
				for i, ai := range a {
					if k <= i {
						e[k] += ai * tt[k]
					} else {
						e[k] += ai * (tt[i] + tt[i+1]) / 2
					}
				}
			}
			v := hhIntervals(e, tt)
			for i, ai := range a {
				if math.Abs(v[i]-ai) > 1e-12 {
					t.Errorf("rho=%g: v[%d] = %v, want %v", rho, i, v[i], ai)
				}
			}
			if v[l] != 0 {
				t.Errorf("rho=%g: v[l] = %v", rho, v[l])
			}
		})
	}
}

// hhExpected returns the mean of the heavy-hitter release for the user
// counts: the recursion applied to the exact expected cropped means
// E[e_i] = avg over users and multiplicity offsets j of
// min(n (R + j), T_i) / R (the wrap probability of Fig. 2 in integer units).
// The release is linear in the e_i, so it is unbiased for this value. It
// also returns the E[e_i].
func hhExpected(cfg Config, counts []int) (float64, []float64) {
	th, res := hhLayout(cfg)
	maxJ := uint64(math.Floor(cfg.Rho * float64(res)))
	e := make([]float64, len(th))
	tt := make([]float64, len(th))
	hist := make(map[int]int)
	for _, c := range counts {
		hist[c]++
	}
	for i, T := range th {
		tt[i] = float64(T) / float64(res)
		for c, k := range hist {
			var s float64
			for j := uint64(0); j <= maxJ; j++ {
				s += float64(min(uint64(c)*(res+j), T))
			}
			e[i] += float64(k) * s / float64(maxJ+1) / float64(res)
		}
		e[i] /= float64(len(counts))
	}
	v := hhIntervals(e, tt)
	h := &heavyHitters{base: &base{cfg: cfg}}
	var out float64
	for i := h.hhStart(tt); i < len(v); i++ {
		out += v[i]
	}
	return out, e
}

// TestHeavyHittersSanity checks the k-heavy-hitter estimator of Fig. 3:
// every table's cropped mean with the randomized multiplicities averages
// (5 SE) to its exact expectation, the releases average (5 SE) to the
// recursion's value on the exact expected cropped means, and on a stream whose heavy users' counts are
// spread out (uniform on 4..16, k = 4) that value is within 0.05 of the
// true fraction of k-heavy hitters. (Fig. 3's recursion assumes multiplicities
// spread evenly within each interval; for a point mass, e.g. every heavy
// user appearing 12 times, it is biased by up to a half of the truth.)
func TestHeavyHittersSanity(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const (
		n    = 12000
		runs = 40
	)
	rng := dprand.Seeded(81)
	counts := make([]int, n)
	for u := range counts {
		switch {
		case u < n/5:
			counts[u] = 4 + rng.IntN(13)
		case u < n/2:
			counts[u] = 1
		case u < 3*n/5:
			counts[u] = 2
		}
	}
	evs := streamFromCounts(rng, counts)
	const truth = 0.2
	cfg := Config{Estimator: KindHeavyHitters, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: n, SampleSize: n, K: 4, MaxOccurrences: 16, Rho: 1, ReleaseNoise: NoisePaper}
	want, wantE := hhExpected(cfg, counts)
	t.Logf("truth %.4f, recursion on exact cropped means %.4f", truth, want)
	if math.Abs(want-truth) > 0.05 {
		t.Errorf("recursion on exact cropped means %.4f, truth %.4f", want, truth)
	}
	noise := seededNoise(82)
	var errs sample
	tables := make([]sample, len(wantE))
	for r := 0; r < runs; r++ {
		e, est := runRelease(t, cfg, rng, noise, evs)
		errs.add(est - want)
		got, _ := e.(*heavyHitters).croppedMeans()
		for i := range got {
			tables[i].add(got[i] - wantE[i])
		}
	}
	for i := range tables {
		if math.Abs(tables[i].mean()) > 5*tables[i].se() {
			t.Errorf("table %d: cropped mean %.4f off its expectation %.4f (5 SE = %.4f)", i, tables[i].mean(), wantE[i], 5*tables[i].se())
		}
	}
	t.Logf("release - expected: %.4f ± %.4f", errs.mean(), errs.se())
	if math.Abs(errs.mean()) > 5*errs.se() {
		t.Errorf("releases average %.4f off their expectation (5 SE = %.4f)", errs.mean(), 5*errs.se())
	}
}

// TestHeavyHitterLayout checks the thresholds: t_0 = 1, ratio 1+rho, the
// last at least N (1+rho), and j = ceil(log_{1+rho} k).
func TestHeavyHitterLayout(t *testing.T) {
	t.Parallel()
	cfg, err := Config{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 100, SampleSize: 10, K: 5, MaxOccurrences: 40, Rho: 0.5}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	th, res := hhLayout(cfg)
	if res != 400 || th[0] != res {
		t.Errorf("resolution %d, t_0 = %d", res, th[0])
	}
	last := float64(th[len(th)-1]) / float64(res)
	prev := float64(th[len(th)-2]) / float64(res)
	if last < 40*1.5 || prev >= 40*1.5 {
		t.Errorf("last thresholds %v, %v around N(1+rho) = 60", prev, last)
	}
	tt := make([]float64, len(th))
	for i, T := range th {
		tt[i] = float64(T) / float64(res)
	}
	h := &heavyHitters{base: &base{cfg: cfg}}
	if j := h.hhStart(tt); j != 4 || tt[3] >= 5 || tt[4] < 5 { // 1.5^4 = 5.06
		t.Errorf("start index %d for k = 5 (thresholds %v)", j, tt)
	}
}
