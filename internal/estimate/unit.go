package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// buildUnit is the dense unit-cell builder: BuildContext for MLE and
// biased-down tables of rows on unit cells (Algorithm 4). A dense token
// loop (denseMLE or denseBD) replaces the general one, the general
// builder's shift tracking, stationarity check and tail analysis are
// reused, and the table is bit for bit the reference builder's (buildGeneralRef;
// unit_test.go). It returns errNotUnit (and the caller falls back) when a
// row is not on unit cells.
func buildUnit(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	b := newBuilder(spec)
	b.ctx = ctx
	loop := newTableLoop(ctx, &b, spec)
	u := loop.window()
	var err error
	fn := func(row sanitize.Row) bool {
		if err = b.cancelled(row.Frequency, len(row.Pieces)); err != nil {
			return false
		}
		if !(row.Pi >= 0 && row.Pi <= 1+1e-9) {
			err = errors.New("estimate: row reporting probability must lie in [0, 1]")
			return false
		}
		sum := 0.0
		for _, p := range row.Pieces {
			sum += p.P
		}
		if math.Abs(sum-row.Pi) > 1e-9 {
			err = errors.New("estimate: row pieces do not sum to the reporting probability")
			return false
		}
		b.trackShift(row)
		if err = addPieces(loop, row); err != nil {
			return false
		}
		return !u.done
	}
	last := min(spec.MaxFrequency+maxLookahead, sanitize.MaxFrequency)
	if us, ok := src.(unitSource); ok && float64(last) < denseShiftLimit {
		// Dense rows: no pieces are built or parsed. The checks and the
		// shift tracking are the ones above on the row's positive cells.
		// The row goroutine checks the rows and tracks shifted copies
		// with its own tracker (it may read rows past the last one the
		// build takes); each row carries the tracker's state after it,
		// which the build adopts row by row.
		tr := &shiftTracker{}
		pre := func(it *denseItem, m []float64) error {
			if !(it.pi >= 0 && it.pi <= 1+1e-9) {
				return errors.New("estimate: row reporting probability must lie in [0, 1]")
			}
			sum := 0.0
			for _, v := range m {
				if v > 0 {
					sum += v
				}
			}
			if math.Abs(sum-it.pi) > 1e-9 {
				return errors.New("estimate: row pieces do not sum to the reporting probability")
			}
			if float64(int64(it.lo)) != it.lo {
				return errNotUnit
			}
			before := tr.shiftSince
			it.copied = tr.trackShiftDense(it.i, it.pi, int64(it.lo), m)
			it.mark = tr.markSince(before)
			return nil
		}
		dense := func(it *denseItem) bool {
			if err = b.cancelled(it.i, it.cells); err != nil {
				return false
			}
			if it.err != nil {
				err = it.err
				return false
			}
			b.adopt(&it.mark)
			it.r.copied = it.copied
			if err = linkDense(loop, it.r); err != nil {
				return false
			}
			return !u.done
		}
		if e := u.pipeDense(ctx, us, 1, last, math.MaxInt64, pre, dense); e != nil {
			return nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
		}
	} else if e := src.Rows(1, last, fn); e != nil {
		return nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
	}
	if err != nil {
		return nil, err
	}
	if !u.done {
		if u.next <= last { // the source has no more rows
			if u.next <= u.n {
				return nil, errors.New("estimate: the sanitizer table ended before the max frequency")
			}
			if err := loop.advance(u.n); err != nil {
				return nil, err
			}
		}
		if !u.done {
			return nil, errors.New("estimate: row supports do not move past the max frequency")
		}
	}
	b.t.Bounds, b.t.A = unitBounds(b.t.Bounds[:1], 1, u.pos), u.a
	for _, a := range b.t.A {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, errors.New("estimate: an estimate is not finite (the unbiased system is ill-conditioned or the last unit is incomplete)")
		}
	}
	if err := b.stationarity(src); err != nil {
		return nil, err
	}
	b.t.Tail = b.analyzeTail()
	return b.t, nil
}
