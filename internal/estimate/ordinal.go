package estimate

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// Pair is a reported key with its sanitized value. Values are ordinal: they
// order keys (Section 6) but are not frequencies.
type Pair struct {
	Key   string
	Value float64
}

// Order returns a copy of pairs sorted by decreasing value, keys with equal
// values in uniformly random order drawn from rng. Top-k, rank and quantiles
// all derive from this order.
//
// The pairs are shuffled and then sorted by value alone. The sort's moves
// depend only on which positions hold which values, never on which key sits
// in a tied position, so after a uniform shuffle the order among ties is
// uniform whatever (unstable) sort is used.
func Order(pairs []Pair, rng *rand.Rand) []Pair {
	out := slices.Clone(pairs)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	slices.SortFunc(out, func(a, b Pair) int { return cmp.Compare(b.Value, a.Value) })
	return out
}

// topK returns the k pairs with the largest values, largest first, ties
// broken uniformly at random (as Order); all pairs when k >= len(pairs).
// O(n log k): a size-k heap over the shuffled pairs.
func topK(pairs []Pair, k int, rng *rand.Rand) ([]Pair, error) {
	if k < 0 {
		return nil, errors.New("estimate: k must be nonnegative")
	}
	if k == 0 {
		return []Pair{}, nil
	}
	if 4*k >= len(pairs) {
		return Order(pairs, rng)[:min(k, len(pairs))], nil
	}
	perm := rng.Perm(len(pairs))
	// h is a min-heap on value holding the best k seen so far.
	h := make([]Pair, 0, k)
	less := func(a, b Pair) bool { return a.Value < b.Value }
	down := func(i int) {
		for {
			l, s := 2*i+1, i
			if l < len(h) && less(h[l], h[s]) {
				s = l
			}
			if r := l + 1; r < len(h) && less(h[r], h[s]) {
				s = r
			}
			if s == i {
				return
			}
			h[i], h[s] = h[s], h[i]
			i = s
		}
	}
	for _, idx := range perm {
		p := pairs[idx]
		switch {
		case len(h) < k:
			h = append(h, p)
			for i := len(h) - 1; i > 0 && less(h[i], h[(i-1)/2]); i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case p.Value > h[0].Value:
			h[0] = p
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b Pair) int { return cmp.Compare(b.Value, a.Value) })
	return h, nil
}

// rank returns the 1-based rank of key in decreasing order of value (1 = the
// largest value). Among t keys tied with it the rank is uniform over the t
// positions, exactly as in Order. Keys are assumed unique; the first pair
// with the key is used. O(len(pairs)).
func rank(pairs []Pair, key string, rng *rand.Rand) (int, error) {
	idx := slices.IndexFunc(pairs, func(p Pair) bool { return p.Key == key })
	if idx < 0 {
		return 0, errors.New("estimate: key not among the pairs")
	}
	v := pairs[idx].Value
	greater, tied := 0, 0
	for k, p := range pairs {
		switch {
		case k == idx:
		case p.Value > v:
			greater++
		case p.Value == v:
			tied++
		}
	}
	return 1 + greater + rng.IntN(tied+1), nil
}

// WeightedPair is a pair with a nonnegative weight for Quantiles.
type WeightedPair struct {
	Pair
	Weight float64
}

// Quantiles returns, for each alpha in [0, 1], the alpha-quantile pair of the
// weighted distribution of sanitized values. Definition: order the pairs by
// increasing value, ties at random (rng); with W the total weight, the
// alpha-quantile is the first pair whose cumulative weight reaches alpha*W
// (the lower, inverse-CDF quantile; alpha = 0 gives the first pair with
// positive weight).
//
// With all weights 1 these are quantiles of the reported keys' order (an
// ordinal statistic, Section 6). For quantiles of the estimated frequency
// distribution of the whole population, weight each reported key by its
// estimated count (Estimate of a Table with g = count, which accounts for
// keys that were not sampled or reported) and read the frequency off the
// returned key with an MLE table. Because the order is by sanitized value and
// estimates are monotone in it, the returned key's estimate is the quantile.
func Quantiles(items []WeightedPair, alphas []float64, rng *rand.Rand) ([]Pair, error) {
	if len(items) == 0 {
		return nil, errors.New("estimate: no pairs")
	}
	for _, a := range alphas {
		if !(a >= 0 && a <= 1) {
			return nil, errors.New("estimate: quantile levels must lie in [0, 1]")
		}
	}
	o := slices.Clone(items)
	rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
	slices.SortStableFunc(o, func(a, b WeightedPair) int { return cmp.Compare(a.Value, b.Value) })
	cum := make([]float64, len(o))
	total := 0.0
	for k, it := range o {
		if !(it.Weight >= 0) || math.IsInf(it.Weight, 0) {
			return nil, errors.New("estimate: weights must be finite and nonnegative")
		}
		total += it.Weight
		cum[k] = total
	}
	if !(total > 0) {
		return nil, errors.New("estimate: total weight must be positive")
	}
	out := make([]Pair, len(alphas))
	for q, a := range alphas {
		target := a * total
		k, _ := slices.BinarySearchFunc(cum, target, func(c, t float64) int {
			if c > 0 && c >= t {
				return 1
			}
			return -1
		})
		out[q] = o[min(k, len(o)-1)].Pair
	}
	return out, nil
}
