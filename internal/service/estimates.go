package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Selection chooses the keys L(x) = 1 of a linear statistic. Empty: all keys.
type Selection struct {
	Keys   []string
	Prefix string
	Regex  *regexp.Regexp
}

func (sel Selection) match(key string) bool {
	if len(sel.Keys) > 0 && !slices.Contains(sel.Keys, key) {
		return false
	}
	if sel.Prefix != "" && !strings.HasPrefix(key, sel.Prefix) {
		return false
	}
	if sel.Regex != nil && !sel.Regex.MatchString(key) {
		return false
	}
	return true
}

// frequencySample loads a sample and refuses keys-only releases.
func (s *Estimates) frequencySample(ctx context.Context, id string) (*Sample, error) {
	smp, err := s.getSample(ctx, id)
	if err != nil {
		return nil, err
	}
	if smp.Spec.Release != ReleaseFrequencies {
		return nil, fieldErr("sample", "is a keys release: it has no sanitized values to estimate from")
	}
	return smp, nil
}

// sampleTable returns the estimator table of (g, e) covering smp's values.
func (s *deps) sampleTable(ctx context.Context, smp *Sample, g estimate.G, e estimate.Estimator) (*estimate.Table, error) {
	return s.sampleTableMargin(ctx, smp, g, e, 0)
}

// sampleTableMargin is sampleTable covering margin more than the largest
// value: per-frequency statistics are read at MLE frequencies, which lie
// above the values (a key of frequency i is reported near i - L).
func (s *deps) sampleTableMargin(ctx context.Context, smp *Sample, g estimate.G, e estimate.Estimator, margin float64) (*estimate.Table, error) {
	t, err := s.sanitizer(smp.Spec)
	if err != nil {
		return nil, err
	}
	maxValue := 0.0
	for _, el := range smp.Elements {
		maxValue = math.Max(maxValue, el.Value)
	}
	if maxValue > 0 {
		maxValue += margin
	}
	et, err := s.estimatorTable(ctx, t, estimate.Spec{MaxFrequency: estimatorSize(t, maxValue), G: g, Estimator: e})
	if _, isField := checks.Fields(err); err != nil && g.Kind == estimate.GPower && !isField {
		// Only powers overflow float64 (w^P / pi_w): a property of the
		// parameters, answered as a 422 naming g, never a 500.
		return nil, fieldErr("g", "%s overflows floating point for the frequencies in this sample; use a smaller power", g)
	}
	return et, err
}

// GroupBy groups the selected keys of an estimate: by the part of the key
// before the first Delimiter, or (Delimiter empty) by its first Length runes.
// The zero value means no grouping.
type GroupBy struct {
	Delimiter string
	Length    int
}

func (g GroupBy) enabled() bool { return g.Delimiter != "" || g.Length > 0 }

// GroupEstimate is the estimate of one group.
type GroupEstimate struct {
	Group string
	estimate.SumError
}

// SampleEstimate is the estimate of sum_x L(x) g(w_x) over a stored sample
// with its standard error, interval and reliability, and (with a GroupBy) the
// same for every group of the selection, sorted by group.
type SampleEstimate struct {
	estimate.SumError
	Groups []GroupEstimate
}

// frequencyChunks returns the identity and count MLE chunk sets holding
// smp's values, from which a reported key's MLE frequency is read.
func (s *Estimates) frequencyChunks(ctx context.Context, smp *Sample) (identity, count *estimate.ChunkSet, err error) {
	t, err := s.sanitizer(smp.Spec)
	if err != nil {
		return nil, nil, err
	}
	return s.frequencyChunkSets(ctx, t, elementValues(smp.Elements), false)
}

var countG = estimate.G{Kind: estimate.GCount}

// Sample estimates sum_x L(x) g(w_x) from a stored sample: the sum of
// the per-token estimates a_j of the selected reported keys (eq. 10), with
// the standard error, interval (at level) and reliability of
// estimate.SumWithError, overall and per group when by is set (the groups
// share the selection's unseen weight).
func (s *Estimates) Sample(ctx context.Context, id string, g estimate.G, e estimate.Estimator, sel Selection, level float64, by GroupBy) (SampleEstimate, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return SampleEstimate{}, err
	}
	kes, err := s.keyEstimates(ctx, smp, estimate.MLE)
	if err != nil {
		return SampleEstimate{}, err
	}
	var all []estimate.ReportedKey
	groups := map[string][]estimate.ReportedKey{}
	for n, el := range smp.Elements {
		if !sel.match(el.Key) {
			continue
		}
		k := estimate.ReportedKey{Value: el.Value, Frequency: kes[n].Frequency}
		all = append(all, k)
		if by.enabled() {
			gk := estimate.GroupKey(el.Key, by.Delimiter, by.Length)
			groups[gk] = append(groups[gk], k)
		}
	}
	et, err := s.sampleLookup(ctx, smp, g, e, all)
	if err != nil {
		return SampleEstimate{}, err
	}
	var out SampleEstimate
	unseen, err := estimate.SumUnseenWeight(et, all, smp.Spec.Privacy, smp.Spec.Sampling)
	if err != nil {
		return SampleEstimate{}, estimateErr(err)
	}
	if out.SumError, err = sumWithError(et, all, level, smp.Spec.Sampling, unseen); err != nil {
		return SampleEstimate{}, err
	}
	if by.enabled() {
		out.Groups = make([]GroupEstimate, 0, len(groups))
		for _, name := range slices.Sorted(maps.Keys(groups)) {
			se, err := sumWithError(et, groups[name], level, smp.Spec.Sampling, unseen)
			if err != nil {
				return SampleEstimate{}, err
			}
			out.Groups = append(out.Groups, GroupEstimate{Group: name, SumError: se})
		}
	}
	if math.IsInf(out.Estimate, 0) || math.IsNaN(out.Estimate) {
		return SampleEstimate{}, fieldErr("g", "is out of range: the estimate overflows float64; use a smaller exponent or a cap")
	}
	return out, nil
}

// sampleLookup returns what the sum of (g, e) over keys reads: for the MLE,
// the chunks holding the keys' values and MLE frequencies (chunks.go); for
// biased-down, the full table covering the values and 4L + 8 beyond, where
// statistics are read at MLE frequencies (about 2L above the values).
func (s *Estimates) sampleLookup(ctx context.Context, smp *Sample, g estimate.G, e estimate.Estimator, keys []estimate.ReportedKey) (estimate.Lookup, error) {
	if !estimate.ServedByChunks(e) {
		return s.sampleTableMargin(ctx, smp, g, e, 4*sanitize.L(smp.Spec.Privacy)+8)
	}
	t, err := s.sanitizer(smp.Spec)
	if err != nil {
		return nil, err
	}
	// The estimates a_j are read at the keys' values (the value chunks may
	// be the estimates-only ones the release built), the statistics at
	// their MLE frequencies: first those the release collected there
	// (tablecache's StatsAt), then from chunks with statistics for the
	// others.
	size := estimate.ChunkSize(t.Privacy())
	is := make([]int64, len(keys))
	for n, k := range keys {
		is[n] = statsFrequency(k.Frequency)
	}
	sparse := s.cache.StatsAt(t, g, is)
	vks := make([]int64, 0, len(keys))
	fks := make([]int64, 0, len(keys))
	top := 1.0
	for n, k := range keys {
		vks = append(vks, estimate.ChunkOf(k.Value, size))
		if _, ok := sparse[is[n]]; !ok {
			fks = append(fks, estimate.ChunkOf(float64(is[n]), size))
		}
		top = max(top, k.Value, k.Frequency)
	}
	// A g that overflows on the sample's frequencies is a 422 naming g, as
	// for full tables (gErr).
	if err := gErr(estimate.ErrNotFinite, g, int64(math.Ceil(top))+size); !errors.Is(err, estimate.ErrNotFinite) {
		return nil, err
	}
	sets, err := s.chunkSets(ctx, t, []estimate.G{g}, fks)
	var values []*estimate.ChunkSet
	if err == nil {
		values, err = s.chunkSetsOf(ctx, t, []estimate.G{g}, vks, true)
	}
	if _, isField := checks.Fields(err); err != nil && g.Kind == estimate.GPower && !isField {
		// As sampleTableMargin: only powers overflow (w^P / pi_w).
		return nil, fieldErr("g", "%s overflows floating point for the frequencies in this sample; use a smaller power", g)
	}
	if err != nil {
		return nil, err
	}
	for k, c := range values[0].Chunks {
		if sets[0].Chunks[k] == nil {
			sets[0].Chunks[k] = c
		}
	}
	sets[0].Sparse = sparse
	return sets[0], nil
}

// sumWithError maps estimate.SumWithErrorAt's errors: a non-finite result is
// a 422 naming g (the frequency function that overflowed), never a 500. The
// unseen weight is the whole selection's (estimate.SumUnseenWeight), shared
// by its groups.
func sumWithError(t estimate.Lookup, keys []estimate.ReportedKey, level float64, smp sanitize.Sampling, unseen float64) (estimate.SumError, error) {
	se, err := estimate.SumWithErrorAt(t, keys, level, smp, unseen)
	if errors.Is(err, estimate.ErrNotFinite) {
		return se, fieldErr("g", "gives an estimate or standard error that is not a finite number for this sample; use a smaller power or cap")
	}
	if err != nil {
		return se, estimateErr(err)
	}
	return se, nil
}

// KeyEstimate is what a frequencies release says about one reported key:
// Frequency, the MLE point estimate of its own frequency, and Contribution,
// its term a_j in the estimate of a sum of frequencies (g = identity) under
// the chosen estimator.
type KeyEstimate struct {
	Frequency    float64
	Contribution float64
}

// keyEstimates returns the KeyEstimate of every element of a frequencies
// release, in the order of smp.Elements, with contributions from estimator e
// (mle or biased_down); nil for a keys release.
func (s *deps) keyEstimates(ctx context.Context, smp *Sample, e estimate.Estimator) ([]KeyEstimate, error) {
	if smp.Spec.Release != ReleaseFrequencies || len(smp.Elements) == 0 {
		return nil, nil
	}
	if e != estimate.MLE && e != estimate.BiasedDown {
		return nil, fieldErr("estimator", "must be mle or biased_down")
	}
	t, err := s.sanitizer(smp.Spec)
	if err != nil {
		return nil, err
	}
	freq, contrib, err := s.mleKeys(ctx, t, elementValues(smp.Elements), false)
	if err != nil {
		return nil, err
	}
	out := make([]KeyEstimate, len(smp.Elements))
	for i := range out {
		out[i] = KeyEstimate{Frequency: freq[i], Contribution: contrib[i]}
	}
	if estimate.ServedByChunks(e) {
		return out, nil
	}
	// Biased-down contributions: eq. 41 is a recursion over every token
	// below, so they come from the full table (bounded by the work limit).
	cT, err := s.sampleTable(ctx, smp, identityG, e)
	if err != nil {
		return nil, err
	}
	for i, el := range smp.Elements {
		if out[i].Contribution, err = cT.Estimate(el.Value); err != nil {
			return nil, estimateErr(err)
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// RankedElement is a reported key in the order of estimated frequency.
type RankedElement struct {
	Rank int
	Element
	KeyEstimate // contribution under mle
}

// ordered returns the sample's elements by decreasing MLE frequency, ties by
// decreasing sanitized value, remaining ties at random with a fresh generator
// per request (the MLE frequency is non-decreasing in the value for the
// paper's sanitizers, so this is the sanitized order of Section 6 with the
// frequency shown).
func (s *Estimates) ordered(ctx context.Context, smp *Sample) ([]RankedElement, error) {
	kes, err := s.keyEstimates(ctx, smp, estimate.MLE)
	if err != nil {
		return nil, err
	}
	pairs := make([]estimate.Pair, len(smp.Elements))
	byKey := make(map[string]int, len(smp.Elements))
	for i, el := range smp.Elements {
		pairs[i] = estimate.Pair{Key: el.Key, Value: el.Value}
		byKey[el.Key] = i
	}
	ord := estimate.Order(pairs, s.newRand())
	out := make([]RankedElement, len(ord))
	for i, p := range ord {
		k := byKey[p.Key]
		out[i] = RankedElement{Element: smp.Elements[k], KeyEstimate: kes[k]}
	}
	slices.SortStableFunc(out, func(a, b RankedElement) int { return cmp.Compare(b.Frequency, a.Frequency) })
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, nil
}

// Top returns the k reported keys with the largest estimated frequencies.
func (s *Estimates) Top(ctx context.Context, id string, k int) ([]RankedElement, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return nil, err
	}
	ord, err := s.ordered(ctx, smp)
	if err != nil {
		return nil, err
	}
	return ord[:min(k, len(ord))], nil
}

// Rank returns the rank of key by estimated frequency (1 = largest).
func (s *Estimates) Rank(ctx context.Context, id, key string) (RankedElement, int, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return RankedElement{}, 0, err
	}
	ord, err := s.ordered(ctx, smp)
	if err != nil {
		return RankedElement{}, 0, err
	}
	for _, r := range ord {
		if r.Key == key {
			return r, len(smp.Elements), nil
		}
	}
	return RankedElement{}, 0, &NotFoundError{Kind: "key", Name: key}
}

// Population says which keys a quantile is over.
type Population string

// The populations of Quantiles.
const (
	// PopulationAll: every key of the population, reported or not; each
	// reported key stands for 1/pi of its MLE frequency keys.
	PopulationAll Population = "all"
	// PopulationReported: the reported keys, each counted once.
	PopulationReported Population = "reported"
)

// Quantile is one quantile of the estimated frequency distribution.
type Quantile struct {
	Q         float64
	Frequency float64 // an MLE frequency estimate
	// Supported is false when Frequency lies below the supported frequency
	// (the privacy mechanism withholds most keys there): the answer extrapolates.
	Supported bool
}

// QuantileAnswer lists quantiles with the frequency from which they are
// supported by data.
type QuantileAnswer struct {
	Population    Population
	SupportedFrom int64 // smallest frequency with pi_i/q_i >= 1/2; 0: none in range
	// NearOrBelowShare is the share of the weight (estimated keys) at MLE
	// frequencies below 2*SupportedFrom. Reliable is false when it exceeds
	// estimate.UnreliableShare (population all only): keys below
	// SupportedFrom are mostly withheld by the privacy mechanism, so the number of keys, and with it
	// the rank of every quantile, is then uncertain. Note explains it.
	NearOrBelowShare float64
	Reliable         bool
	Note             string
	Quantiles        []Quantile
}

// Quantiles returns quantiles of the frequency distribution. Each reported key
// carries its MLE frequency (estimate.MLEFrequency, no inverse-probability
// weighting); over PopulationAll it is weighted by its inverse inclusion
// probability 1/pi_{i^} (the count MLE estimate), so that keys not sampled or
// not reported are accounted for, over PopulationReported by 1. The
// alpha-quantile is the lower inverse-CDF quantile of that weighted
// distribution (ties at random). Below SupportedFrom keys are mostly
// unreported and a quantile there rests on few reports with large weights:
// such quantiles are marked unsupported; so is every quantile of all keys when
// much of the weight sits near or below SupportedFrom (the answer is then
// flagged unreliable, with a note), because keys far below it are invisible.
func (s *Estimates) Quantiles(ctx context.Context, id string, qs []float64, pop Population) (QuantileAnswer, error) {
	if pop == "" {
		pop = PopulationAll
	}
	if pop != PopulationAll && pop != PopulationReported {
		return QuantileAnswer{}, fieldErr("population", "must be all or reported")
	}
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return QuantileAnswer{}, err
	}
	if len(smp.Elements) == 0 {
		return QuantileAnswer{}, fieldErr("sample", "has no reported keys")
	}
	idT, ctT, err := s.frequencyChunks(ctx, smp)
	if err != nil {
		return QuantileAnswer{}, err
	}
	items := make([]estimate.WeightedPair, len(smp.Elements))
	for i, el := range smp.Elements {
		f, err := estimate.MLEFrequency(idT, ctT, el.Value)
		if err != nil {
			return QuantileAnswer{}, estimateErr(err)
		}
		w := 1.0
		if pop == PopulationAll {
			if w, err = ctT.Estimate(el.Value); err != nil {
				return QuantileAnswer{}, estimateErr(err)
			}
		}
		items[i] = estimate.WeightedPair{Pair: estimate.Pair{Key: el.Key, Value: f}, Weight: w}
	}
	ps, err := estimate.Quantiles(items, qs, s.newRand())
	if err != nil {
		return QuantileAnswer{}, fmt.Errorf("quantiles: %w", err)
	}
	out := QuantileAnswer{Population: pop, SupportedFrom: ctT.SupportedFrom(smp.Spec.Sampling), Reliable: true, Quantiles: make([]Quantile, len(ps))}
	var near, total float64
	for _, it := range items {
		total += it.Weight
		if out.SupportedFrom == 0 || it.Value < 2*float64(out.SupportedFrom) {
			near += it.Weight
		}
	}
	if total > 0 {
		out.NearOrBelowShare = near / total
	}
	if pop == PopulationAll && out.NearOrBelowShare > estimate.UnreliableShare {
		out.Reliable = false
		out.Note = fmt.Sprintf("%.0f%% of the estimated keys have estimated frequency below %d, twice the frequency %d below which the privacy mechanism withholds most keys; "+
			"keys well below it are almost never reported, so the number of keys and the rank of every quantile are uncertain: quantiles of all keys may be far too high", 100*out.NearOrBelowShare, 2*out.SupportedFrom, out.SupportedFrom)
	}
	for i, p := range ps {
		supported := out.Reliable && out.SupportedFrom > 0 && p.Value >= float64(out.SupportedFrom)
		out.Quantiles[i] = Quantile{Q: qs[i], Frequency: p.Value, Supported: supported}
	}
	return out, nil
}
