package planner

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sort"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
)

// Limits of the synthetic distributions.
const (
	// maxKeys bounds the number of keys n of a synthetic distribution.
	maxKeys = 10_000_000
	// maxZipfAlpha bounds the Zipf exponent.
	maxZipfAlpha = 4.0
	// maxUniformFrequency bounds b of a uniform [a, b] distribution.
	maxUniformFrequency = 1 << 17
)

// Zipf returns the frequency distribution Zipf[alpha] on n keys used by the
// paper's experiments: the key of rank r = 1..n has frequency
// floor((n/r)^alpha), so the rarest key has frequency 1 and the most frequent
// n^alpha. Counts are exact integers, sorted by increasing frequency; the
// work is O(D log n) for D distinct frequencies.
func Zipf(alpha float64, n int64) ([]estimate.FrequencyCount, error) {
	if !(alpha > 0) || alpha > maxZipfAlpha {
		return nil, &checks.FieldError{Field: "alpha", Reason: "must be greater than 0 and at most 4"}
	}
	if n < 1 || n > maxKeys {
		return nil, &checks.FieldError{Field: "n", Reason: "must be an integer from 1 to 10000000"}
	}
	fn := float64(n)
	w := func(r int64) int64 { return int64(math.Floor(math.Pow(fn/float64(r), alpha))) }
	var out []estimate.FrequencyCount
	for r := int64(1); r <= n; {
		v := w(r)
		// last rank with the same frequency (w is non-increasing in r)
		k := r + int64(sort.Search(int(n-r), func(j int) bool { return w(r+int64(j)+1) < v }))
		out = append(out, estimate.FrequencyCount{Frequency: v, Keys: float64(k - r + 1)})
		r = k + 1
	}
	slices.SortFunc(out, func(a, b estimate.FrequencyCount) int { return cmp.Compare(a.Frequency, b.Frequency) })
	return out, nil
}

// uniform returns n keys whose frequencies are spread evenly over a..b:
// n/(b-a+1) keys (an expectation, possibly fractional) at each frequency, as
// in the paper's Figure 8 (2x10^5 keys uniform on [1, 200]).
func uniform(a, b, n int64) ([]estimate.FrequencyCount, error) {
	switch {
	case a < 1 || a > maxUniformFrequency:
		return nil, &checks.FieldError{Field: "a", Reason: "must be an integer from 1 to 131072"}
	case b < a || b > maxUniformFrequency:
		return nil, &checks.FieldError{Field: "b", Reason: "must be an integer from a to 131072"}
	case n < 1 || n > maxKeys:
		return nil, &checks.FieldError{Field: "n", Reason: "must be an integer from 1 to 10000000"}
	}
	per := float64(n) / float64(b-a+1)
	out := make([]estimate.FrequencyCount, 0, b-a+1)
	for i := a; i <= b; i++ {
		out = append(out, estimate.FrequencyCount{Frequency: i, Keys: per})
	}
	return out, nil
}

// distStats summarises a distribution.
func distStats(dist []estimate.FrequencyCount) (keys float64, maxFreq int64, err error) {
	for _, fc := range dist {
		if fc.Frequency < 1 || !(fc.Keys >= 0) || math.IsInf(fc.Keys, 0) {
			return 0, 0, errors.New("planner: a distribution needs frequencies >= 1 and finite nonnegative key counts")
		}
		keys += fc.Keys
		maxFreq = max(maxFreq, fc.Frequency)
	}
	if !(keys > 0) {
		return 0, 0, errors.New("planner: the distribution has no keys")
	}
	return keys, maxFreq, nil
}
