package service

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/store"
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

// SampleEstimate is the estimate of sum_x L(x) g(w_x) over a stored sample.
type SampleEstimate struct {
	Selected int
	Estimate float64
}

// frequencySample loads a sample and refuses keys-only releases.
func (s *Service) frequencySample(ctx context.Context, id string) (*Sample, error) {
	smp, err := s.GetSample(ctx, id)
	if err != nil {
		return nil, err
	}
	if smp.Spec.Release != ReleaseFrequencies {
		return nil, fieldErr("sample", "is a keys release: it has no sanitized values to estimate from")
	}
	return smp, nil
}

// sampleTable returns the estimator table of (g, e) covering smp's values.
func (s *Service) sampleTable(ctx context.Context, smp *Sample, g estimate.G, e estimate.Estimator) (*estimate.Table, error) {
	t, err := s.tables.get(smp.Spec.Privacy, smp.Spec.Sampling, smp.Spec.Method)
	if err != nil {
		return nil, err
	}
	maxValue := 0.0
	for _, el := range smp.Elements {
		maxValue = math.Max(maxValue, el.Value)
	}
	return s.estimatorTable(ctx, t, estimate.Spec{MaxFrequency: estimatorSize(t, maxValue), G: g, Estimator: e})
}

// EstimateSample estimates sum_x L(x) g(w_x) from a stored sample: the sum of
// the per-token estimates a_j of the selected reported keys (eq. 10).
func (s *Service) EstimateSample(ctx context.Context, id string, g estimate.G, e estimate.Estimator, sel Selection) (SampleEstimate, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return SampleEstimate{}, err
	}
	et, err := s.sampleTable(ctx, smp, g, e)
	if err != nil {
		return SampleEstimate{}, err
	}
	var out SampleEstimate
	values := make([]float64, 0, len(smp.Elements))
	for _, el := range smp.Elements {
		if sel.match(el.Key) {
			values = append(values, el.Value)
		}
	}
	out.Selected = len(values)
	if out.Estimate, err = et.EstimateSum(values); err != nil {
		return SampleEstimate{}, estimateErr(err)
	}
	if math.IsInf(out.Estimate, 0) || math.IsNaN(out.Estimate) {
		return SampleEstimate{}, fieldErr("g", "is out of range: the estimate overflows float64; use a smaller exponent or a cap")
	}
	return out, nil
}

// RankedElement is a reported key in the sanitized order.
type RankedElement struct {
	Rank int
	store.Element
}

// ordered returns the sample's elements in decreasing sanitized value, ties
// broken at random with a fresh generator per request.
func (s *Service) ordered(smp *Sample) []RankedElement {
	pairs := make([]estimate.Pair, len(smp.Elements))
	byKey := make(map[string]store.Element, len(smp.Elements))
	for i, el := range smp.Elements {
		pairs[i] = estimate.Pair{Key: el.Key, Value: el.Value}
		byKey[el.Key] = el
	}
	ord := estimate.Order(pairs, s.newRand())
	out := make([]RankedElement, len(ord))
	for i, p := range ord {
		out[i] = RankedElement{Rank: i + 1, Element: byKey[p.Key]}
	}
	return out
}

// Top returns the k reported keys with the largest sanitized values.
func (s *Service) Top(ctx context.Context, id string, k int) ([]RankedElement, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return nil, err
	}
	ord := s.ordered(smp)
	return ord[:min(k, len(ord))], nil
}

// Rank returns the rank of key in the sanitized order (1 = largest).
func (s *Service) Rank(ctx context.Context, id, key string) (RankedElement, int, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return RankedElement{}, 0, err
	}
	for _, r := range s.ordered(smp) {
		if r.Key == key {
			return r, len(smp.Elements), nil
		}
	}
	return RankedElement{}, 0, &NotFoundError{Kind: "key", Name: key}
}

// Quantile is one quantile of the estimated frequency distribution.
type Quantile struct {
	Q         float64
	Frequency float64 // the MLE estimate of the quantile key's frequency
	Key       string
}

// Quantiles returns quantiles of the estimated frequency distribution of the
// population: reported keys ordered by sanitized value, each weighted by its
// estimated count (g = count, biased-down, so keys that were not sampled or
// reported are accounted for), the quantile read off with the MLE estimate.
func (s *Service) Quantiles(ctx context.Context, id string, qs []float64) ([]Quantile, error) {
	smp, err := s.frequencySample(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(smp.Elements) == 0 {
		return nil, fieldErr("sample", "has no reported keys")
	}
	countT, err := s.sampleTable(ctx, smp, estimate.G{Kind: estimate.GCount}, estimate.BiasedDown)
	if err != nil {
		return nil, err
	}
	items := make([]estimate.WeightedPair, len(smp.Elements))
	byKey := make(map[string]store.Element, len(smp.Elements))
	for i, el := range smp.Elements {
		w, err := countT.Estimate(el.Value)
		if err != nil {
			return nil, estimateErr(err)
		}
		items[i] = estimate.WeightedPair{Pair: estimate.Pair{Key: el.Key, Value: el.Value}, Weight: math.Max(w, 0)}
		byKey[el.Key] = el
	}
	ps, err := estimate.Quantiles(items, qs, s.newRand())
	if err != nil {
		return nil, fmt.Errorf("quantiles: %w", err)
	}
	out := make([]Quantile, len(ps))
	for i, p := range ps {
		out[i] = Quantile{Q: qs[i], Key: p.Key, Frequency: byKey[p.Key].Estimate}
	}
	return out, nil
}
