package estimate

import (
	"errors"
	"fmt"
	"math"
)

// processToken finalises the token (pos, t]: it records every active row's
// mass on it and computes its estimate.
func (b *builder) processToken(t float64) error {
	pos := b.pos
	j := len(b.t.A)
	j += b.dropped
	if b.spec.Estimator == Unbiased {
		if k := math.Floor(pos+tol(pos)) + 1; k < t-tol(t) {
			return errors.New("estimate: the unbiased estimator needs every integer to be a token boundary")
		}
	}
	b.mass, b.rem = b.mass[:0], b.rem[:0]
	active := b.buf[b.head:]
	tp, tt := tol(pos), tol(t)
	for _, r := range active {
		if r.first < 0 && r.lo >= t-tt {
			// Not active yet (read ahead). Supports start in non-decreasing
			// order up to rounding crumbs, so few rows are skipped here;
			// once active, a row records every token until it retires.
			b.mass = append(b.mass, 0)
			b.rem = append(b.rem, 0)
			continue
		}
		m, rem := r.advance(pos, t, tp, tt)
		if r.first < 0 {
			r.first = j
		}
		if !b.lean {
			r.masses = append(r.masses, m)
		}
		b.mass = append(b.mass, m)
		b.rem = append(b.rem, rem)
	}
	prev := b.lastA
	var a float64
	switch b.spec.Estimator {
	case BiasedDown:
		a = math.Inf(1)
		for k, r := range active {
			if m := b.mass[k]; m > 0 {
				if v := (r.g - r.sa) / b.rem[k]; v < a {
					a = v
				}
			}
		}
		if math.IsInf(a, 1) {
			a = prev // no frequency produces this token
		}
	case MLE:
		best, bestM := -1, 0.0
		for k := range active {
			if m := b.mass[k]; m > 0 && (best < 0 || m > bestM*(1+tieTol)) {
				best, bestM = k, m
			}
		}
		a = prev
		if best >= 0 {
			a = active[best].gOverPi
		}
	case Unbiased:
		a = math.NaN() // set when the unit cell closes
		for k, r := range active {
			r.cell += b.mass[k]
		}
	}
	b.appendToken(a, t)
	if b.spec.Estimator != Unbiased {
		for k, r := range active {
			if m := b.mass[k]; m > 0 {
				r.sa += a * m
			}
		}
		b.finalPos = t
	} else if k := math.Round(t); k >= 1 && math.Abs(t-k) <= tt {
		if err := b.closeCell(int64(k)); err != nil {
			return err
		}
		b.finalPos = t
	}
	for b.head < len(b.buf) && b.buf[b.head].top <= b.finalPos+tol(b.finalPos) {
		b.retireHead()
	}
	return nil
}

// processTokenFused is processToken for MLE and biased-down in one pass over
// the active rows, in the loop shape of the unit-cell builder (unitBD): each
// row's mass on the token is folded into the argmax (MLE) or the minimum
// (biased-down) as it is computed, and the biased-down sums take the
// previous token's a m in the same pass (deferred: the same additions in
// the same order, before the row's sa is read). No per-row scratch. It
// computes exactly what processToken computes (tested).
func (b *builder) processTokenFused(t float64) error {
	pos := b.pos
	j := len(b.t.A) + b.dropped
	active := b.buf[b.head:]
	tp, tt := tol(pos), tol(t)
	prev := b.lastA
	bd := b.spec.Estimator == BiasedDown
	pend := b.saPending
	a := math.Inf(1)
	found, bestM, bestA := false, 0.0, 0.0
	for _, r := range active {
		if pend && r.lastM > 0 {
			r.sa += prev * r.lastM
		}
		r.lastM = 0
		if r.first < 0 && r.lo >= t-tt {
			continue // not active yet (see processToken)
		}
		m, rem := r.advance(pos, t, tp, tt)
		if r.first < 0 {
			r.first = j
		}
		if !b.lean {
			r.masses = append(r.masses, m)
		}
		if !(m > 0) {
			continue
		}
		if bd {
			r.lastM = m
			// The quotient is formed only when it can win: for rem > 0,
			// FMA(-a, rem, d) < 0 exactly when d/rem < a, and a quotient
			// d/rem >= a rounds to a value >= a.
			d := r.g - r.sa
			if !(rem > 0) || math.FMA(-a, rem, d) < 0 {
				if v := d / rem; v < a {
					a = v
				}
			}
		} else if !found || m > bestM*(1+tieTol) {
			found, bestM, bestA = true, m, r.gOverPi
		}
	}
	if bd {
		if math.IsInf(a, 1) {
			a = prev // no frequency produces this token
		}
		b.saPending = true
	} else {
		a = prev
		if found {
			a = bestA
		}
	}
	b.appendToken(a, t)
	b.finalPos = t
	for b.head < len(b.buf) && b.buf[b.head].top <= b.finalPos+tol(b.finalPos) {
		b.retireHead()
	}
	return nil
}

// maxCancellation bounds sum_j pi_{i,j} |a_j| / |g(i)| for the unbiased
// estimator: beyond it float64 rounding (about 1e-16 per term) can no longer
// keep E_i = g(i) to 1e-9 relative.
const maxCancellation = 1e5

// UnstableError reports that the unbiased estimator cannot be computed to
// the requested max frequency: its estimates alternate in sign and grow
// exponentially with the frequency (Appendix F: privacy forbids nonnegative
// unbiased estimators), and from Frequency on E_i = sum_j pi_{i,j} a_j
// cancels so much that float64 cannot keep it equal to g(i). Frequency is a
// property of the parameters (eps, delta, q, g), not of any data. Build a
// table up to Frequency-1 or use biased_down or mle.
type UnstableError struct {
	Frequency int64
}

func (e *UnstableError) Error() string {
	return fmt.Sprintf("estimate: the unbiased estimator is numerically unstable from frequency %d on; use a smaller max frequency or the biased_down or mle estimator", e.Frequency)
}

// closeCell solves row k's unbiasedness equation for the estimate of unit
// cell (k-1, k].
func (b *builder) closeCell(k int64) error {
	if b.head == len(b.buf) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	idx := k - b.buf[b.head].freq
	if idx < 0 || idx >= int64(len(b.buf)-b.head) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	row := b.buf[b.head+int(idx)]
	if !(row.cell > 0) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	a := (row.g - row.sa) / row.cell
	if cond := row.sabs + math.Abs(a)*row.cell; !(cond <= maxCancellation*math.Abs(row.g)) {
		return &UnstableError{Frequency: k}
	}
	for _, r := range b.buf[b.head:] {
		if r.cell != 0 {
			r.sa += a * r.cell
			r.sabs += math.Abs(a) * r.cell
			r.cell = 0
		}
	}
	for tok := b.cellStart; tok < len(b.t.A); tok++ {
		b.t.A[tok] = a
	}
	b.cellStart = len(b.t.A)
	return nil
}

// appendToken records token t's estimate a: appended to the table, or, for
// a token below the part the table keeps (keepFrom), counted as dropped
// with t as the kept part's lower bound.
func (b *builder) appendToken(a, t float64) {
	if b.keepFrom == 0 || b.nextFreq > b.keepFrom {
		b.t.A = append(b.t.A, a)
		b.t.Bounds = append(b.t.Bounds, t)
	} else {
		b.dropped++
		b.t.Bounds[0] = t
	}
	b.lastA = a
	b.pos = t
}
