package estimate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// Token is one global output token (Lo, Hi] with its index (1-based, the j of
// a_j) and estimate.
type Token struct {
	Index    int64
	Lo, Hi   float64
	Estimate float64
}

// Token returns the 1-based index of the global token containing the
// sanitized value v: Algorithm 4's integer token j maps to token j; a value
// drawn uniformly inside an Algorithm 5 piece maps to the refinement token it
// falls in. Values beyond the table are mapped through the stationary tail.
func (t *Table) Token(v float64) (int64, error) {
	if !(v > 0) {
		return 0, ErrNotReported
	}
	if j, ok := t.explicitToken(v); ok {
		return int64(j), nil
	}
	k, r, err := t.tailUnit(v)
	if err != nil {
		return 0, err
	}
	return t.Tail.UnitToken + (k-t.Tail.From)*int64(len(t.Tail.Offsets)) + int64(r) + 1, nil
}

// Estimate returns the per-key estimate of g(w) for a key reported with
// sanitized value v (the a_j of its token). For values beyond MaxFrequency it
// extends the table through its stationary tail (see Tail); it returns
// ErrOutOfRange when that is not possible.
func (t *Table) Estimate(v float64) (float64, error) {
	if !(v > 0) {
		return 0, ErrNotReported
	}
	if j, ok := t.explicitToken(v); ok {
		return t.A[j-1], nil
	}
	k, r, err := t.tailUnit(v)
	if err != nil {
		return 0, err
	}
	return t.tailEstimate(k, r)
}

// estimateSum returns the eq. 10 estimate sum_x a_{j_x} of the statistic over
// the selected reported keys, given their sanitized values (L(x) = 1).
func (t *Table) estimateSum(values []float64) (float64, error) {
	s := 0.0
	for _, v := range values {
		a, err := t.Estimate(v)
		if err != nil {
			return 0, err
		}
		s += a
	}
	return s, nil
}

// explicitToken returns the 1-based token holding v when v is within the
// computed range.
func (t *Table) explicitToken(v float64) (int, bool) {
	last := t.Bounds[len(t.Bounds)-1]
	if v > last+tol(last) {
		return 0, false
	}
	j, _ := slices.BinarySearch(t.Bounds, v) // smallest j with Bounds[j] >= v
	j = max(j, 1)
	if j >= len(t.Bounds) {
		j = len(t.Bounds) - 1
	}
	return j, true
}

// tailUnit locates v beyond the computed range: unit k = ceil(v) and the
// sub-token r.
func (t *Table) tailUnit(v float64) (int64, int, error) {
	tl := t.Tail
	if tl == nil || v >= 1<<62 {
		return 0, 0, ErrOutOfRange
	}
	kf := math.Ceil(v)
	k := int64(kf)
	if k < tl.From {
		return 0, 0, ErrOutOfRange
	}
	u := v - (kf - 1)
	r, _ := slices.BinarySearch(tl.Offsets, u-tailTol)
	r = min(r, len(tl.Offsets)-1)
	return k, r, nil
}

// tailEstimate is the estimate of sub-token r of unit k > MaxFrequency.
func (t *Table) tailEstimate(k int64, r int) (float64, error) {
	tl := t.Tail
	if t.Estimator == MLE {
		return t.G.at(k+tl.MLEShift[r]) / tl.Pi, nil
	}
	if tl.Period == 0 {
		return 0, ErrOutOfRange
	}
	n := t.MaxFrequency
	periods := (k - n + tl.Period - 1) / tl.Period // k - periods*Period lies in (n-Period, n]
	kb := k - periods*tl.Period
	idx := tl.UnitToken + (kb-tl.From)*int64(len(tl.Offsets)) + int64(r)
	return t.A[idx] + float64(periods)*tl.Increment, nil
}

// Tokens calls fn for every global token that overlaps (lo, hi], in order,
// until fn returns false; beyond MaxFrequency the tokens come from the
// stationary tail. Use it to split an Algorithm 5 piece into the tokens (and
// estimates) it contains.
func (t *Table) Tokens(lo, hi float64, fn func(Token) bool) error {
	if !(hi > lo) {
		return nil
	}
	j, _ := slices.BinarySearch(t.Bounds, lo+tol(lo))
	j = max(j, 1)
	for ; j < len(t.Bounds) && t.Bounds[j-1] < hi-tol(hi); j++ {
		if !fn(Token{Index: int64(j), Lo: t.Bounds[j-1], Hi: t.Bounds[j], Estimate: t.A[j-1]}) {
			return nil
		}
	}
	last := t.Bounds[len(t.Bounds)-1]
	if hi <= last+tol(last) {
		return nil
	}
	tl := t.Tail
	if tl == nil || hi >= 1<<62 {
		return ErrOutOfRange
	}
	m := int64(len(tl.Offsets))
	for k := max(t.MaxFrequency+1, int64(math.Floor(lo))+1); float64(k-1) < hi; k++ {
		base := float64(k - 1)
		for r := range tl.Offsets {
			tlo := base
			if r > 0 {
				tlo += tl.Offsets[r-1]
			}
			thi := base + tl.Offsets[r]
			if thi <= lo+tol(lo) || tlo >= hi-tol(hi) {
				continue
			}
			a, err := t.tailEstimate(k, r)
			if err != nil {
				return err
			}
			if !fn(Token{Index: tl.UnitToken + (k-tl.From)*m + int64(r) + 1, Lo: tlo, Hi: thi, Estimate: a}) {
				return nil
			}
		}
	}
	return nil
}

// Stats returns the Section 7.1 statistics for true frequency i. Beyond
// MaxFrequency they are computed from the stationary tail's row pattern and
// extended estimates, or ErrOutOfRange.
func (t *Table) Stats(i int64) (FrequencyStats, error) {
	if i < 1 {
		return FrequencyStats{}, errors.New("estimate: frequency must be at least 1")
	}
	if i <= t.MaxFrequency {
		return t.Frequencies[i-1], nil
	}
	tl := t.Tail
	if tl == nil || i >= 1<<52 {
		return FrequencyStats{}, ErrOutOfRange
	}
	fi := float64(i)
	row := make([]sanitize.Piece, len(tl.Pattern))
	for k, p := range tl.Pattern {
		row[k] = sanitize.Piece{Lo: p.Lo + fi, Hi: p.Hi + fi, P: p.P}
	}
	masses, toks, err := t.rowTokens(row)
	if err != nil {
		return FrequencyStats{}, err
	}
	as := make([]float64, len(toks))
	for k, tok := range toks {
		as[k] = tok.Estimate
	}
	return rowStats(i, t.G.at(i), tl.Pi, masses, as), nil
}

// SumStats returns the eq. 12 bias, variance, MSE and NRMSE of the sum
// estimate over a selection whose true frequency distribution is dist
// (L(x) = 1 on the selection).
func (t *Table) SumStats(dist []FrequencyCount) (SumStats, error) {
	return sumStats(dist, t.Stats)
}

func sumStats(dist []FrequencyCount, stats func(int64) (FrequencyStats, error)) (SumStats, error) {
	var out SumStats
	for _, fc := range dist {
		if !(fc.Keys >= 0) || math.IsInf(fc.Keys, 0) {
			return SumStats{}, errors.New("estimate: key counts must be finite and nonnegative")
		}
		if fc.Keys == 0 {
			continue
		}
		st, err := stats(fc.Frequency)
		if err != nil {
			return SumStats{}, fmt.Errorf("estimate: statistics of the selection: %w", err)
		}
		out.Keys += fc.Keys
		out.Statistic += fc.Keys * st.G
		out.Bias += fc.Keys * st.Bias
		out.Variance += fc.Keys * st.Variance
	}
	if !(out.Statistic > 0) {
		return SumStats{}, errors.New("estimate: the selection is empty")
	}
	out.Expected = out.Statistic + out.Bias
	out.MSE = out.Variance + out.Bias*out.Bias
	out.NRMSE = math.Sqrt(out.MSE) / out.Statistic
	return out, nil
}

// rowTokens returns, for a row given by its pieces, the probability of each
// global token it overlaps together with the token (a token split between two
// pieces appears once per piece).
func (t *Table) rowTokens(pieces []sanitize.Piece) (masses []float64, toks []Token, err error) {
	for _, p := range pieces {
		dens := p.P / (p.Hi - p.Lo)
		err = t.Tokens(p.Lo, p.Hi, func(tok Token) bool {
			if ov := math.Min(p.Hi, tok.Hi) - math.Max(p.Lo, tok.Lo); ov > tol(tok.Hi) {
				masses = append(masses, dens*ov)
				toks = append(toks, tok)
			}
			return true
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return masses, toks, nil
}
