package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// honestRelease is one simulated release: per reported key its population
// index, value and MLE frequency.
type honestRelease struct {
	idx  []int
	keys []ReportedKey
}

// honestTables are the tables a release is read with.
type honestTables struct {
	st              *sanitize.Table
	identity, count *Table // MLE
}

func newHonestTables(t *testing.T, p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method, n int64) honestTables {
	t.Helper()
	st := realCase{name: "honest", p: p, s: s, method: m}.table(t)
	id, err := Build(st, Spec{MaxFrequency: n, G: mustG("identity"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := Build(st, Spec{MaxFrequency: n, G: mustG("count"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	return honestTables{st: st, identity: id, count: ct}
}

// release samples w with q (Poisson, as ppswor with a fixed threshold) and
// sanitizes the sampled keys end to end.
func (h honestTables) release(t *testing.T, w []int64, rng *rand.Rand) honestRelease {
	t.Helper()
	s := h.st.Sampling()
	var freqs []int64
	var idx []int
	for k, f := range w {
		if rng.Float64() < s.Q(f) {
			freqs = append(freqs, f)
			idx = append(idx, k)
		}
	}
	outs, err := h.st.DrawAll(freqs, rng, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r honestRelease
	for k, o := range outs {
		if !o.Reported {
			continue
		}
		f, err := MLEFrequency(h.identity, h.count, o.Value)
		if err != nil {
			t.Fatal(err)
		}
		r.idx = append(r.idx, idx[k])
		r.keys = append(r.keys, ReportedKey{Value: o.Value, Frequency: f})
	}
	return r
}

// trueQuantile is the lower inverse-CDF quantile of w.
func trueQuantile(w []int64, q float64) float64 {
	s := slices.Clone(w)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(k, 0)])
}

// TestErrorBarsBySimulation checks, on populations with known truth and in
// many independent releases from fixed seeds, the claims of SumWithError and
// MLEFrequency:
//
//   - the 95% interval of a prefix sum (every other key, about half) covers
//     the true sum in at least 93.7% of releases;
//   - the mean standard error is within [0.95, 1.15] times the empirical
//     standard deviation of the estimate across releases;
//   - per-key MLE frequency of keys with w >= 10L is within 25% of w on
//     average (mean ratio and mean absolute relative error), i.e. carries no
//     1/q inflation;
//   - quantiles 0.5 and 0.9 of the frequency distribution (reported keys
//     weighted by 1/pi of their MLE frequency) are within 15% of the truth
//     in every release.
//
// Scenario (a) has no sampling; (b) ppswor-samples the same keys with q_i
// from 0.3 (w = 10L) to 0.97 (w = 100L). (a) exercises the sanitizer-noise
// part of the variance alone, (b) is dominated by the sampling part.
//
// False alarm and power (issue 38), with 3000 releases per scenario (seeded,
// so the test is deterministic; the rates are those of a fresh seed):
//
//   - coverage: a true 95% interval covers in Bin(3000, 0.95) releases, sd
//     0.40 points; falling below 93.7% has probability 5e-4 (3.3 sd). The
//     planted defect "SumWithError variance x0.8" (SE x0.894) makes the
//     interval a 92% one in (a) (measured 0.917): it stays above 93.7% with
//     probability 3e-4 (sd 0.50 points);
//   - SE vs empirical SD: the SD of 3000 near-normal estimates has a
//     relative sd of 1/sqrt(6000) = 1.3%, so a true ratio of 1 leaves
//     [0.95, 1.15] with probability 5e-5 (3.9 sd below); the planted
//     variance x0.8 gives ratio 0.891 in (a) and 0.917 in (b) (measured;
//     (b)'s honest SE is 2.5% conservative), 4.6 and 2.5 sd below 0.95:
//     caught with probability 1 - 1e-5 in (a), 0.99 in (b) alone.
//
// Together the planted defect is caught with probability above 1 - 1e-8;
// measured on the fixed seeds: (a) coverage 0.917, ratio 0.891; (b) 0.933,
// 0.917, both scenarios fail both checks. Honest: (a) 0.948, 0.996; (b)
// 0.958, 1.025. It runs without -race only (make test's oracle phase): 14 s.
func TestErrorBarsBySimulation(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	if raceEnabled {
		t.Skip("statistical: runs without -race in make test's oracle phase (see docs/testing.md)")
	}
	const (
		keys     = 400
		releases = 3000
	)
	p := mustPrivacy(1, 1e-6)
	L := sanitize.L(p)
	lo, hi := int64(math.Ceil(10*L)), int64(math.Floor(100*L))
	pop := dprand.Seeded(11)
	w := make([]int64, keys)
	for k := range w {
		w[k] = lo + pop.Int64N(hi-lo+1)
	}
	var truthSum float64
	for k := 0; k < keys; k += 2 {
		truthSum += float64(w[k])
	}
	tau := -math.Log(0.7) / float64(lo)
	for _, sc := range []struct {
		name string
		s    sanitize.Sampling
	}{
		{"a: no sampling", mustSampling(sanitize.SchemeNone, 0, nil)},
		{"b: ppswor q 0.3-0.97", mustSampling(sanitize.SchemePPSWOR, tau, nil)},
	} {
		t.Run(sc.name, func(t *testing.T) {
			h := newHonestTables(t, p, sc.s, sanitize.MethodMaxSeparation, 2*hi)
			rng := dprand.Seeded(5)
			var covered int
			var ests, ses []float64
			var ratio, absRel float64
			var nKeys int
			var q50, q90, worstQ float64
			for r := 0; r < releases; r++ {
				rel := h.release(t, w, rng)
				var sel []ReportedKey
				items := make([]WeightedPair, len(rel.keys))
				for k, key := range rel.keys {
					x := rel.idx[k]
					if x%2 == 0 {
						sel = append(sel, key)
					}
					ratio += key.Frequency / float64(w[x])
					absRel += math.Abs(key.Frequency-float64(w[x])) / float64(w[x])
					nKeys++
					wt, err := h.count.Estimate(key.Value)
					if err != nil {
						t.Fatal(err)
					}
					items[k] = WeightedPair{Pair: Pair{Key: fmt.Sprint(x), Value: key.Frequency}, Weight: wt}
				}
				se, err := SumWithError(h.identity, sel, 0.95, p, sc.s)
				if err != nil {
					t.Fatal(err)
				}
				if se.Interval.Lower <= truthSum && truthSum <= se.Interval.Upper {
					covered++
				}
				ests = append(ests, se.Estimate)
				ses = append(ses, se.StandardError)
				qs, err := Quantiles(items, []float64{0.5, 0.9}, rng)
				if err != nil {
					t.Fatal(err)
				}
				q50 += qs[0].Value / releases
				q90 += qs[1].Value / releases
				for k, q := range []float64{0.5, 0.9} {
					truth := trueQuantile(w, q)
					worstQ = math.Max(worstQ, math.Abs(qs[k].Value-truth)/truth)
				}
				if !se.Reliability.Reliable {
					t.Fatalf("release %d flagged unreliable: %+v", r, se.Reliability)
				}
			}
			mean, sd := meanSD(ests)
			meanSE, _ := meanSD(ses)
			cov := float64(covered) / releases
			t.Logf("%s: releases %d, coverage %.3f, mean SE %.1f vs empirical SD %.1f (ratio %.3f), mean estimate %.1f vs truth %.0f; frequency/w %.3f, mean |rel err| %.3f; q50 %.1f (truth %.0f), q90 %.1f (truth %.0f), worst quantile error %.1f%%",
				sc.name, releases, cov, meanSE, sd, meanSE/sd, mean, truthSum, ratio/float64(nKeys), absRel/float64(nKeys),
				q50, trueQuantile(w, 0.5), q90, trueQuantile(w, 0.9), 100*worstQ)
			if cov < 0.937 {
				t.Errorf("coverage %.3f < 0.937", cov)
			}
			if r := meanSE / sd; r > 1.15 || r < 0.95 {
				t.Errorf("mean SE %g vs empirical SD %g: ratio %.3f outside [0.95, 1.15]", meanSE, sd, r)
			}
			if r := ratio / float64(nKeys); math.Abs(r-1) > 0.25 {
				t.Errorf("mean frequency/w = %.3f, want within 25%% of 1", r)
			}
			if e := absRel / float64(nKeys); e > 0.25 {
				t.Errorf("mean |frequency - w|/w = %.3f > 0.25", e)
			}
			if worstQ > 0.15 {
				t.Errorf("a quantile 0.5 or 0.9 was %.1f%% off the truth in some release (more than 15%%)", 100*worstQ)
			}
		})
	}
}

func meanSD(x []float64) (float64, float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1))
}

// TestZipfCountUnreliable: on 20,000 Zipf keys, most of frequency below L,
// the number of keys (g = count) is carried by keys near or below the
// supported frequency and must be flagged unreliable with a note. So must the
// sum of frequencies: keys below L, almost never reported, hold 40% of it
// (truth 154,138, estimate about 94,500 with a standard error of about 140),
// and the reported keys near the threshold carry far more than two standard
// errors (MissingMassSEs). Before issue 23 the sum was passed as reliable
// (its near share, 15%, is under a fifth) though its interval missed the
// truth by 400 standard errors.
func TestZipfCountUnreliable(t *testing.T) {
	t.Parallel()
	const keys = 20_000
	p := mustPrivacy(1, 1e-6)
	L := sanitize.L(p)
	pop := dprand.Seeded(3)
	w := make([]int64, keys)
	below := 0
	for k := range w {
		w[k] = min(5000, int64(math.Ceil(math.Pow(1-pop.Float64(), -1/1.1))))
		if float64(w[k]) < L {
			below++
		}
	}
	if below < keys/2 {
		t.Fatalf("population: only %d of %d keys below L = %.1f", below, keys, L)
	}
	s := mustSampling(sanitize.SchemeNone, 0, nil)
	h := newHonestTables(t, p, s, sanitize.MethodMaxSeparation, 8192)
	ct, err := Build(h.st, Spec{MaxFrequency: 8192, G: mustG("count"), Estimator: BiasedDown})
	if err != nil {
		t.Fatal(err)
	}
	rel := h.release(t, w, dprand.Seeded(9))
	for _, c := range []struct {
		name     string
		tab      *Table
		reliable bool
	}{
		{"count mle", h.count, false},
		{"count biased_down", ct, false},
		{"identity mle", h.identity, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			se, err := SumWithError(c.tab, rel.keys, 0.95, p, s)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: estimate %.1f (truth count %d), SE %.1f, reliability %+v", c.name, se.Estimate, keys, se.StandardError, se.Reliability)
			if se.Reliability.Reliable != c.reliable {
				t.Errorf("reliable = %v, want %v (%+v)", se.Reliability.Reliable, c.reliable, se.Reliability)
			}
			if !c.reliable && se.Reliability.Note == "" {
				t.Error("an unreliable answer needs a note")
			}
		})
	}
}

// TestMLEFrequencyIsArgmax compares MLEFrequency with the brute-force argmax
// of the rows' token probabilities (ties to the smallest frequency) on small
// Algorithm 4 rows with sampling.
func TestMLEFrequencyIsArgmax(t *testing.T) {
	t.Parallel()
	rows := alg4Rows(0.7, 1e-3, ppswor(0.05), 200)
	src := &sliceSource{rows: rows}
	id, err := Build(src, Spec{MaxFrequency: 150, G: mustG("identity"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := Build(src, Spec{MaxFrequency: 150, G: mustG("count"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	for j := 1; j <= 150; j++ {
		best, bestM := int64(0), 0.0
		for _, r := range rows {
			if m := r.MassOn(float64(j-1), float64(j)); m > bestM*(1+1e-10) {
				best, bestM = r.Frequency, m
			}
		}
		if best == 0 {
			continue
		}
		got, err := MLEFrequency(id, ct, float64(j))
		if err != nil {
			t.Fatal(err)
		}
		if got != float64(best) {
			t.Errorf("token %d: MLEFrequency %g, argmax %d", j, got, best)
		}
	}
	if _, err := MLEFrequency(ct, id, 3); err == nil {
		t.Error("swapped tables must be refused")
	}
}

// TestSumWithErrorHandCase checks the formula on a table of one frequency
// by hand: Var^ = sum V(i^)/pi(i^); without sampling the unseen weight is 0
// and the interval is the gamma one of mean s and variance Var^, within a
// few percent of s -/+ 1.96 SE for these three keys (gamma shape 19,000).
func TestSumWithErrorHandCase(t *testing.T) {
	t.Parallel()
	rows := alg4Rows(0.7, 1e-3, qNone, 120)
	src := &sliceSource{rows: rows}
	id, err := Build(src, Spec{MaxFrequency: 100, G: mustG("identity"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := Build(src, Spec{MaxFrequency: 100, G: mustG("count"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	var keys []ReportedKey
	var want, est float64
	for _, v := range []float64{40, 55, 90} {
		f, err := MLEFrequency(id, ct, v)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, ReportedKey{Value: v, Frequency: f})
		st := id.Frequencies[int(f)-1]
		want += st.Variance / st.Reported
		a, _ := id.Estimate(v)
		est += a
	}
	noSampling := mustSampling(sanitize.SchemeNone, 0, nil)
	got, err := SumWithError(id, keys, 0.95, mustPrivacy(0.7, 1e-3), noSampling)
	if err != nil {
		t.Fatal(err)
	}
	if !relClose(got.Variance, want, 1e-12) || !relClose(got.Estimate, est, 1e-12) {
		t.Fatalf("variance %g want %g, estimate %g want %g", got.Variance, want, got.Estimate, est)
	}
	z := 1.959963984540054
	if got.UnseenWeight != 0 || got.Reliability.EffectiveKeys < 2 || got.Reliability.EffectiveKeys > 3+1e-9 {
		t.Fatalf("unseen weight %g, effective keys %g: want 0 and between 2 and 3", got.UnseenWeight, got.Reliability.EffectiveKeys)
	}
	if gi := GammaInterval(est, want, 0, 0.95); got.Interval != gi {
		t.Fatalf("interval %+v, want the gamma interval %+v", got.Interval, gi)
	}
	if hw := z * math.Sqrt(want); math.Abs(got.Interval.Upper-est-hw) > 0.02*hw || math.Abs(est-got.Interval.Lower-hw) > 0.02*hw {
		t.Fatalf("interval %+v, want within 2%% of the normal %g -/+ %g", got.Interval, est, hw)
	}
	for _, bad := range []float64{0, 1, -0.5, math.NaN()} {
		t.Run(fmt.Sprintf("level=%g", bad), func(t *testing.T) {
			if _, err := SumWithError(id, keys, bad, mustPrivacy(0.7, 1e-3), noSampling); err == nil {
				t.Errorf("level %g accepted", bad)
			}
		})
	}
}

// TestGroupKey: prefix before the first delimiter, or the first N runes.
func TestGroupKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, delim string
		n          int
		want       string
	}{
		{"a/b/c", "/", 0, "a"},
		{"abc", "/", 0, "abc"},
		{"/x", "/", 0, ""},
		{"a::b", "::", 0, "a"},
		{"héllo", "", 2, "hé"},
		{"ab", "", 5, "ab"},
	} {
		t.Run(fmt.Sprintf("%q/%q/%d", c.key, c.delim, c.n), func(t *testing.T) {
			if got := GroupKey(c.key, c.delim, c.n); got != c.want {
				t.Errorf("GroupKey(%q, %q, %d) = %q, want %q", c.key, c.delim, c.n, got, c.want)
			}
		})
	}
}

// TestSampledZipfReliable is the realistic case of issue 23, scaled down:
// 10,000 Zipf(1) keys whose every frequency is far above L (the smallest is 20L),
// ppswor-sampled with a small threshold so that a few percent are kept, eps
// 1. Every sampled key is reported, and the intervals of the sum and of the
// count cover the truth; no answer may be flagged for missing mass (near
// share 0). Before the fix supported_from was ln 2/tau (from q_i, about
// 4,000 here), above almost every sampled key, and every answer was flagged.
// The sum is reliable. The count is flagged by the sampling's rule
// (UnseenSEs, issue 32), not the privacy one: nothing public says that no
// key lies between supported_from (7) and 20L, and one such key, sampled
// with q = 0.001, would weigh about 1,700 keys, five standard errors.
func TestSampledZipfReliable(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const (
		keys     = 10_000
		releases = 30
	)
	p := mustPrivacy(1, 1e-6)
	L := sanitize.L(p)
	const maxW = 20_000 // the top 1.4% share it, so that the tables stay small
	minW := math.Ceil(20 * L)
	w := make([]int64, keys)
	var truthSum float64
	for k := range w {
		w[k] = min(maxW, int64(math.Ceil(minW*keys/float64(k+1)))) // Zipf(1), w_last = 20L
		truthSum += float64(w[k])
	}
	tau := 1.7e-4 // q from 0.05 (w = 20L) to 1; about 10% of the keys kept
	s := mustSampling(sanitize.SchemePPSWOR, tau, nil)
	h := newHonestTables(t, p, s, sanitize.MethodMaxSeparation, maxW+int64(4*L)+8)
	rng := dprand.Seeded(23)
	covSum, covCount := 0, 0
	var kept float64
	for r := 0; r < releases; r++ {
		rel := h.release(t, w, rng)
		kept += float64(len(rel.keys)) / releases
		for _, c := range []struct {
			tab     *Table
			truth   float64
			covered *int
		}{{h.identity, truthSum, &covSum}, {h.count, keys, &covCount}} {
			se, err := SumWithError(c.tab, rel.keys, 0.95, p, s)
			if err != nil {
				t.Fatal(err)
			}
			if se.Interval.Lower <= c.truth && c.truth <= se.Interval.Upper {
				(*c.covered)++
			}
			if se.Reliability.NearOrBelowShare != 0 || se.Reliability.Reliable != (c.tab.G.Kind == GIdentity) {
				t.Fatalf("release %d (g=%s): %+v, want near share 0 (every sampled key is far above L = %.1f), the sum reliable and the count not", r, c.tab.G.Kind, se.Reliability, L)
			}
			if !se.Reliability.Reliable && !strings.Contains(se.Reliability.Note, "sampling could have missed") {
				t.Fatalf("release %d (g=%s): note %q, want the sampling's", r, c.tab.G.Kind, se.Reliability.Note)
			}
			if from := se.Reliability.SupportedFrom; from < 1 || float64(from) > 2*L {
				t.Fatalf("supported_from %d, want the privacy threshold near L = %.1f, not the sampling one ln2/tau = %.0f", from, L, math.Ln2/tau)
			}
		}
	}
	t.Logf("about %.0f keys reported per release; 95%% intervals cover the sum in %d and the count in %d of %d releases", kept, covSum, covCount, releases)
	if float64(covSum) < 0.85*releases || float64(covCount) < 0.85*releases {
		t.Errorf("coverage sum %d, count %d of %d releases: below 85%%", covSum, covCount, releases)
	}
}

// TestWorkedExampleMissingMassFlagged is the README's worked example: keys
// with frequency floor(20000/i)+1, i = 1..2000 (down to 11, below L = 28),
// ppswor-sampled at tau = 0.01, (0.5, 1e-6)-DP, the sum over the odd keys.
// Keys below the privacy threshold are almost never reported, so the
// estimate misses about a tenth of the truth, far outside its interval;
// the reported keys near the threshold carry only a tenth of the answer (no
// flag by share) but many standard errors, and the answer must be flagged.
// With supported_from read from pi_i/q_i and the share rule alone it was
// passed as reliable.
func TestWorkedExampleMissingMassFlagged(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	p := mustPrivacy(0.5, 1e-6)
	w := make([]int64, 2000)
	var truth float64
	for i := range w {
		w[i] = 20000/int64(i+1) + 1
		if i%2 == 0 {
			truth += float64(w[i])
		}
	}
	s := mustSampling(sanitize.SchemePPSWOR, 0.01, nil)
	h := newHonestTables(t, p, s, sanitize.MethodMaxSeparation, 21000)
	rng := dprand.Seeded(1)
	for r := 0; r < 10; r++ {
		rel := h.release(t, w, rng)
		var sel []ReportedKey
		for k, key := range rel.keys {
			if rel.idx[k]%2 == 0 {
				sel = append(sel, key)
			}
		}
		se, err := SumWithError(h.identity, sel, 0.95, p, s)
		if err != nil {
			t.Fatal(err)
		}
		if se.Interval.Upper >= truth {
			t.Fatalf("release %d: interval %+v reaches the truth %.0f: the example no longer shows missing mass", r, se.Interval, truth)
		}
		if se.Reliability.Reliable || se.Reliability.Note == "" {
			t.Errorf("release %d: interval %+v misses the truth %.0f but the answer is not flagged: %+v", r, se.Interval, truth, se.Reliability)
		}
	}
}
