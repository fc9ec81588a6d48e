package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// generalBuilderRef is the plain reference builder: the general builder's token
// loop in its textbook form, token by token over any row source (every
// active row's mass on the token first, then the token's estimate, then
// the rows' running sums). It is the oracle every fast builder is tested
// against bit for bit (docs/estimator-builders.md), and the builder of the
// unbiased estimator, which has no fast one.
type generalBuilderRef struct {
	builder
	mass, rem []float64 // per-token scratch, one entry per active row
	cellStart int       // unbiased: first token of the open unit cell
}

// newGeneralBuilderRef returns a reference builder of spec's full table.
func newGeneralBuilderRef(spec Spec) *generalBuilderRef {
	return &generalBuilderRef{builder: newBuilder(spec)}
}

// buildGeneralRef is BuildContext on the reference builder, for any estimator:
// the table every fast builder's is compared with (spec is valid).
func buildGeneralRef(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	b := newGeneralBuilderRef(spec)
	b.ctx = ctx
	return b.build(src, b.processToken)
}

// processToken finalises the token (pos, t]: it records every active row's
// mass on it and computes its estimate.
func (b *generalBuilderRef) processToken(t float64) error {
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
		if !b.estimatesOnly {
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
			if m := b.mass[k]; mleBeats(m, bestM, best >= 0) {
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
func (b *generalBuilderRef) closeCell(k int64) error {
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
