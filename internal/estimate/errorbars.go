package estimate

import (
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// MLEFrequency returns the maximum-likelihood estimate of a reported key's
// own frequency from its sanitized value v: i* = argmax_h pi_{h,j}, the
// frequency whose row (end to end: sampling times sanitizer) is most likely to
// produce v's token j, ties to the smallest frequency. It involves no
// inverse-probability weighting: it is a point estimate of w_x, not a term of
// a sum.
//
// The MLE tables of two frequency functions share the argmax (eq. 11 picks
// the row by its probability of the token, not by g), so with identity and
// count MLE tables a_j = i*/pi_{i*} and a_j = 1/pi_{i*}; their ratio is i*
// (rounded to remove the last-bit error of the division).
func MLEFrequency(identity, count Lookup, v float64) (float64, error) {
	if !isMLEOf(identity, GIdentity) || !isMLEOf(count, GCount) {
		return 0, errors.New("estimate: MLEFrequency needs the identity and count MLE tables")
	}
	num, err := identity.Estimate(v)
	if err != nil {
		return 0, err
	}
	den, err := count.Estimate(v)
	if err != nil {
		return 0, err
	}
	if !(den > 0) || math.IsInf(den, 0) {
		return 0, fmt.Errorf("estimate: no frequency produces value %g", v)
	}
	return math.Round(num / den), nil
}

// isMLEOf reports whether t is an MLE table or chunk set of g's kind.
func isMLEOf(t Lookup, kind GKind) bool {
	switch t := t.(type) {
	case *Table:
		return t.Estimator == MLE && t.G.Kind == kind
	case *ChunkSet:
		return t.G.Kind == kind
	}
	return false
}

// SupportedFrom returns the smallest frequency i whose privacy part of
// reporting, pi_i/q_i (the probability that a sampled key of frequency i is
// reported by the sanitizer), reaches 1/2, in t's range or its stationary
// tail; s is the sampling scheme t was built for. Below it most sampled keys
// are withheld by the privacy mechanism, so what an answer says about them
// rests on few reports weighted by large factors and keys well below it are
// missing from the answer. Sampling is not part of it: the inverse weights
// 1/pi already account for q_i, so a key sampled with small q_i and reported
// is as well supported as any other. It returns 0 when no frequency the table
// knows reaches 1/2.
func (t *Table) SupportedFrom(s sanitize.Sampling) int64 {
	for _, fs := range t.Frequencies {
		if q := s.Q(fs.Frequency); q > 0 && fs.Reported >= 0.5*q {
			return fs.Frequency
		}
	}
	if t.Tail != nil && t.Tail.Pi >= 0.5 { // q_i = 1 in the tail
		return max(t.Tail.From, t.MaxFrequency+1)
	}
	return 0
}

// ReportedKey is one selected reported key of a sum: its sanitized value and
// its MLE frequency (MLEFrequency).
type ReportedKey struct {
	Value     float64
	Frequency float64
}

// Interval is a two-sided confidence interval at the given level.
type Interval struct {
	Level, Lower, Upper float64
}

// NormalInterval returns the normal interval estimate -/+ z se at level
// (z = Phi^{-1}((1 + level)/2)), clipped to [lo, hi], the range of the
// estimand (clipping is post-processing and never loses coverage). level
// must lie strictly between 0 and 1.
func NormalInterval(estimate, se, level, lo, hi float64) Interval {
	z := math.Sqrt2 * math.Erfinv(level)
	return Interval{Level: level,
		Lower: math.Min(math.Max(estimate-z*se, lo), hi),
		Upper: math.Min(math.Max(estimate+z*se, lo), hi)}
}

// Reliability says how much of an answer rests on keys that the release
// mostly hides, and on how many keys its uncertainty rests.
type Reliability struct {
	// SupportedFrom is the frequency below which sampled keys are mostly
	// withheld by the privacy mechanism (pi_i/q_i < 1/2); 0 when no
	// frequency in range reaches 1/2.
	SupportedFrom int64
	// NearOrBelowShare estimates the share of the answer carried by keys
	// near or below SupportedFrom: sum of |a_j| over selected reported keys
	// with MLE frequency < 2*SupportedFrom, divided by sum of |a_j| over all
	// selected reported keys (1 when SupportedFrom = 0).
	NearOrBelowShare float64
	// EffectiveKeys is the effective number of keys the answer's
	// uncertainty rests on, (sum_j v_j)^2 / sum_j v_j^2 over the selected
	// reported keys' variance terms v_j (the terms of the plug-in variance):
	// k for k keys of equal variance, near 1 when one key carries it. 0
	// with no key; the number of keys when every v_j is 0.
	EffectiveKeys float64
	// Reliable is false when no key was selected, when EffectiveKeys is
	// below MinEffectiveKeys, when one unseen key would weigh more than
	// UnseenSEs standard errors, or when the privacy threshold's rules
	// (UnreliableShare, MissingMassSEs) flag the answer.
	Reliable bool
	// Note explains an unreliable answer in plain words; empty otherwise.
	Note string
}

// MinEffectiveKeys is the sampling half of the reliability rule: an answer
// whose uncertainty rests on fewer effective keys (Reliability.EffectiveKeys)
// is not called reliable. With so few keys the plug-in variance is itself a
// one- or two-term estimate (its own relative error is about
// sqrt(2/n_eff)), and whether the truth lies inside the interval depends on
// keys the sample did not catch more than on the ones it did. The gamma
// interval keeps its level down to a few keys (docs/api.md, "Reading an
// estimate": on issue 32's Zipf log the 206 reliable answers over 2-5 keys
// all covered, the 40 over 6-9 covered 37); below two effective keys, one
// key carries the answer and no interval built from it is honest. One
// selected key always falls below it.
const MinEffectiveKeys = 2

// UnreliableShare is the share of an answer carried by keys near or below
// the supported frequency above which the answer is flagged unreliable: more
// than a fifth of it then comes from keys the release mostly hides or barely
// shows, where the estimate extrapolates from few reports with large weights
// 1/pi_i and the MLE frequency (and so the plug-in standard error) is poorly
// estimated. It is also a proxy for what no estimate can see: keys well below
// the supported frequency are almost never reported, so their mass is
// missing from the answer (a bias the interval does not contain), and a large
// share near the threshold signals that such keys are many. The threshold is
// the privacy one (pi_i/q_i, SupportedFrom), not the sampling one: sampling
// is unbiased under the inverse weights, its variance is in the standard
// error and its skew in the gamma interval, and the number of keys the answer
// rests on is MinEffectiveKeys' rule. A fifth keeps sums over heavy keys
// reliable, whatever the sampling, and flags counts over Zipf data and sums
// where light keys matter.
const UnreliableShare = 0.2

// UnseenSEs flags answers that the keys the sampling missed dominate: when
// one unseen key (UnseenWeight, about 1/(tau i) for a count at the lightest
// frequency i the release vouches for, supported_from) would move the answer
// by more than this many standard errors, the sample's keys say less about
// the answer than the keys it may have missed. It is where counts under heavy
// sampling fail without a known minimum frequency: the interval still
// covers (its upper end allows for the unseen key), but it is many times
// wider than the standard error suggests, and the answer is flagged rather
// than passed with an interval no reader expects. A sum over a few light
// keys of weight about 1/tau each has UnseenWeight about one standard error
// and is not flagged by it.
const UnseenSEs = 2

// MissingMassSEs flags the second way an answer misleads: when the reported
// keys near the privacy threshold (MLE frequency below 2*SupportedFrom)
// carry more than this many standard errors of the answer, the population
// reaches down to the threshold and, in the frequency distributions met in
// practice (non-increasing density: Zipf, power laws), continues below it,
// where keys are almost never reported. Their mass is missing, and the mass
// just above the threshold is the answer's only trace of it. On the issue 32
// Zipf log (eps 0.1, tau 1e-4, a prefix of one key in 26) the bias was about
// half that near mass (near mass 1.3-2.7 standard errors, estimate 0.9
// standard errors low on average), and with the bar at two standard errors
// the answers left reliable covered 74%; at one the bias left in a reliable
// answer is about half a standard error, which costs a 95% interval about
// two points. A population whose reported keys all lie far above the
// threshold (sampled or not) carries none and is not flagged.
const MissingMassSEs = 1

// SumError is a sum estimate with its standard error, interval and
// reliability.
type SumError struct {
	Selected      int
	Estimate      float64
	Variance      float64
	StandardError float64
	Interval      Interval
	// UnseenWeight is the weight of the one unseen key the interval's
	// upper end allows for (UnseenWeight).
	UnseenWeight float64
	Reliability  Reliability
}

// SumWithError estimates sum_x L(x) g(w_x) over the selected reported keys
// (eq. 10: s^ = sum_x a_{j_x}) with a standard error, a confidence interval
// at level (0 < level < 1) and a reliability statement; p and smp are the
// release's privacy and sampling.
//
// Variance. Keys are sanitized (and, under ppswor/priority/custom sampling,
// sampled) independently, so Var[s^] = sum over ALL selected keys, reported
// or not, of V(w_x), where V(i) = Stats(i).Variance = sum_j pi_{i,j}
// (a_j - E_i)^2 + (1 - pi_i) E_i^2 is the exact variance of one key's term
// under the end-to-end rows pi_{i,j} (sampling q_i and the sanitizer's
// noise both included; the (1 - pi_i) part is the key not being reported).
// The true frequencies are unknown and unreported keys are invisible, so we
// use the Horvitz-Thompson plug-in
//
//	Var^ = sum_{x reported, selected} v_x,   v_x = V(i^_x) / pi_{i^_x},   i^_x = MLEFrequency of x,
//
// which is exactly unbiased for sum_x V(w_x) if i^_x = w_x (each key appears
// with probability pi_{w_x} and is weighted by its inverse), and close to it
// where the MLE frequency is accurate, i.e. above SupportedFrom. We prefer it
// to the unbiased estimator of Var (which needs an unbiased estimate of
// g(w)^2 per key, the triangular solve whose estimates alternate in sign and
// explode, Appendix F) because it is nonnegative and stable; where it is not
// accurate (mass below SupportedFrom) the answer is flagged unreliable.
//
// Interval. Under sampling the sum is a sum of a few large inverse-
// probability weights (about 1/tau each under ppswor), Poisson-like: skewed
// to the right, with a plug-in variance smallest exactly when the estimate
// is low. A normal interval then misses, almost always below the truth. The
// interval is GammaInterval(s^, Var^, w): Fay and Feuer's gamma interval for
// weighted Poisson sums, with w = UnseenWeight(g, p, smp, SupportedFrom,
// top), the Poisson-equivalent weight of one key the release did not show
// (top: where sampling leaves no key unseen; under custom sampling, twice
// the largest selected MLE frequency or the list's length). Over many keys
// it tends to the normal interval s^ -/+ z SE, shifted up by about w. An
// estimate, variance, interval or w that is not finite (g overflowing)
// returns ErrNotFinite. It
// covers the sampling and sanitizer noise, not the estimator's bias: small
// where keys are well above SupportedFrom (see Stats(i).Bias), but keys well
// below it are almost never reported and their mass is missing from the
// estimate — the reliability block flags answers where that matters.
//
// Reliability: no selected key, fewer than MinEffectiveKeys effective keys,
// an unseen key worth more than UnseenSEs standard
// errors, or the privacy threshold's rules (UnreliableShare, MissingMassSEs)
// make the answer unreliable, with a note saying why.
func SumWithError(t Lookup, keys []ReportedKey, level float64, p sanitize.Privacy, smp sanitize.Sampling) (SumError, error) {
	w, err := SumUnseenWeight(t, keys, p, smp)
	if err != nil {
		return SumError{}, err
	}
	return SumWithErrorAt(t, keys, level, smp, w)
}

// SumUnseenWeight is the unseen weight SumWithError uses for a sum of t's g
// over keys: UnseenWeight from supported_from up to where sampling leaves no
// key unseen (ppswor, priority) or, under custom sampling, up to twice the
// largest MLE frequency among keys or the list's length, whichever is
// larger. It costs a few thousand evaluations of q: a group-by computes it
// once, over all the selected keys, for every group (SumWithErrorAt).
func SumUnseenWeight(t Lookup, keys []ReportedKey, p sanitize.Privacy, smp sanitize.Sampling) (float64, error) {
	g, ok := lookupG(t)
	if !ok {
		return 0, errors.New("estimate: the unseen weight needs a *Table or *ChunkSet")
	}
	top := math.Inf(1)
	if smp.Scheme == sanitize.SchemeCustom {
		top = float64(len(smp.Probabilities))
		for _, k := range keys {
			top = max(top, 2*math.Round(k.Frequency))
		}
	}
	return UnseenWeight(g, p, smp, t.SupportedFrom(smp), top), nil
}

// SumWithErrorAt is SumWithError with the unseen weight w given
// (SumUnseenWeight), for groups that share it.
func SumWithErrorAt(t Lookup, keys []ReportedKey, level float64, smp sanitize.Sampling, w float64) (SumError, error) {
	if !(level > 0 && level < 1) {
		return SumError{}, errors.New("estimate: interval level must lie strictly between 0 and 1")
	}
	out := SumError{Selected: len(keys), UnseenWeight: w}
	from := t.SupportedFrom(smp)
	var total, near, sumV2 float64
	for _, k := range keys {
		a, err := t.Estimate(k.Value)
		if err != nil {
			return SumError{}, err
		}
		out.Estimate += a
		i := max(int64(math.Round(k.Frequency)), 1)
		st, err := t.Stats(i)
		if err != nil {
			return SumError{}, err
		}
		if st.Reported > 0 {
			v := st.Variance / st.Reported
			out.Variance += v
			sumV2 += v * v
		}
		total += math.Abs(a)
		if from == 0 || float64(i) < 2*float64(from) {
			near += math.Abs(a)
		}
	}
	out.StandardError = math.Sqrt(out.Variance)
	out.Interval = GammaInterval(out.Estimate, out.Variance, out.UnseenWeight, level)
	rel := Reliability{SupportedFrom: from, Reliable: true}
	switch {
	case out.Variance > 0:
		rel.EffectiveKeys = out.Variance * out.Variance / sumV2
	default:
		rel.EffectiveKeys = float64(len(keys))
	}
	if total > 0 {
		rel.NearOrBelowShare = near / total
	}
	if from == 0 && len(keys) > 0 {
		rel.NearOrBelowShare = 1
	}
	rel.Reliable, rel.Note = reliabilityNote(out, rel, near)
	out.Reliability = rel
	for _, v := range []float64{out.Estimate, out.Variance, out.Interval.Lower, out.Interval.Upper, out.UnseenWeight} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return SumError{}, ErrNotFinite
		}
	}
	return out, nil
}

// reliabilityNote applies the reliability rules in order and returns
// whether the answer is reliable and, if not, why in plain words.
func reliabilityNote(out SumError, rel Reliability, near float64) (bool, string) {
	from := rel.SupportedFrom
	switch {
	case out.Selected == 0:
		return false, fmt.Sprintf("no selected key is in the release: 0 is what the release shows, not a measurement. Keys the client's sampling left out may hold a total up to the interval's upper end, %.0f (one key the sampling missed can weigh %.0f)", out.Interval.Upper, out.UnseenWeight)
	case rel.EffectiveKeys < MinEffectiveKeys:
		return false, fmt.Sprintf("this answer rests on %d selected key(s), whose uncertainty amounts to about %.1f key(s): a key the sample missed or caught by chance moves it by about %.0f, and with so few keys neither the standard error nor the interval can be trusted", out.Selected, rel.EffectiveKeys, max(out.UnseenWeight, out.StandardError))
	case out.UnseenWeight > UnseenSEs*out.StandardError:
		return false, fmt.Sprintf("one key the client's sampling could have missed would add about %.0f to this answer, more than %s (%.0f): the light keys it stands for are sampled too rarely for the keys seen to show how many there are, so the interval's upper end reflects the sampling rate, not the data", out.UnseenWeight, standardErrors(UnseenSEs), UnseenSEs*out.StandardError)
	}
	if rel.NearOrBelowShare > UnreliableShare {
		if from == 0 {
			return false, "no frequency in range is reported by the privacy mechanism with probability 1/2 or more (given that it was sampled): the whole answer extrapolates from few reports with large inverse-probability weights"
		}
		return false, fmt.Sprintf("%.0f%% of this answer comes from keys with estimated frequency below %d, twice the frequency %d below which the privacy mechanism withholds most keys: "+
			"it extrapolates from few reports with large weights, its standard error is itself uncertain, and keys well below %d, almost never reported, are missing from it (a bias the interval does not contain)", 100*rel.NearOrBelowShare, 2*from, from, from)
	}
	if near > MissingMassSEs*out.StandardError {
		return false, fmt.Sprintf("keys with estimated frequency below %d, twice the frequency %d below which the privacy mechanism withholds most keys, carry %.4g of this answer, more than %s (%.4g): "+
			"the population reaches down to that threshold and likely continues below it, where keys are almost never reported; their mass is missing from the answer (a bias the interval does not contain)", 2*from, from, near, standardErrors(MissingMassSEs), MissingMassSEs*out.StandardError)
	}
	return true, ""
}

// standardErrors words n standard errors for a note.
func standardErrors(n float64) string {
	if n == 1 {
		return "one standard error"
	}
	return fmt.Sprintf("%g standard errors", n)
}

// lookupG returns the frequency function of a *Table or *ChunkSet.
func lookupG(t Lookup) (G, bool) {
	switch t := t.(type) {
	case *Table:
		return t.G, true
	case *ChunkSet:
		return t.G, true
	}
	return G{}, false
}
