package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// RowOutcome is one outcome (Lo, Hi] of a sanitizer row, cut at the global
// tokens so that it carries one estimate per estimator: P is the row's
// probability of the outcome, MLE and BiasedDown the eq. 11 and eq. 41
// estimates of g(w) for a key reported there.
type RowOutcome struct {
	Lo, Hi     float64
	P          float64
	MLE        float64
	BiasedDown float64
}

// RowEstimates calls fn, in ascending order, with rows from..to of src
// (1 <= from <= to) and their outcomes split at the global tokens, each with
// its MLE and biased-down estimate of g. The values are the ones
// Build(src, Spec{MaxFrequency: n, G: g, ...}).Tokens and .Estimate give
// for any n >= to, without building those tables:
//
//   - the rows are read once, from row 1, by one call to src.Rows (on a
//     second goroutine, so that the sanitizer and the estimators overlap);
//   - the biased-down estimates (eq. 41, a recursion over every token below)
//     come from an estimates-only streaming pass that keeps no
//     per-frequency statistics and stores only the tokens from the band
//     below on;
//   - the MLE of a token (eq. 11) depends only on the rows whose support
//     contains it, so it comes from the band of rows from - margin .. (the
//     first row whose support starts at or above to). margin must cover the
//     support width of row from (a few L); when it does not, RowEstimates
//     falls back to a band that starts at row 1.
//
// Memory is O((to - from + margin) L). The rows passed to fn are only valid
// during the call. RowEstimates stops with ctx's error soon after ctx is
// cancelled.
func RowEstimates(ctx context.Context, src RowSource, g G, from, to, margin int64, fn func(sanitize.Row, []RowOutcome) error) error {
	if from < 1 || to < from {
		return errors.New("estimate: row estimates need 1 <= from <= to")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	if src == nil {
		return errors.New("estimate: nil row source")
	}
	bandStart := max(1, from-max(margin, 0))
	unit := false
	if methodOf(src) == sanitize.MethodDiscrete {
		unit = true
	}
	rows, bd, mle, err := rowBand(ctx, src, g, from, to, bandStart, unit)
	if errors.Is(err, errNotUnit) {
		unit = false
		rows, bd, mle, err = rowBand(ctx, src, g, from, to, bandStart, unit)
	}
	if err != nil {
		return err
	}
	if len(rows) > 0 && len(rows[0].Pieces) > 0 && rows[0].Pieces[0].Lo < float64(bandStart-1) {
		// The margin missed rows that produce row from's tokens.
		if rows, bd, mle, err = rowBand(ctx, src, g, from, to, 1, unit); err != nil {
			return err
		}
	}
	if int64(len(rows)) != to-from+1 {
		return errors.New("estimate: the sanitizer table ended before the requested rows")
	}
	var out []RowOutcome
	for _, r := range rows {
		out = out[:0]
		for _, pc := range r.Pieces {
			density := pc.P / (pc.Hi - pc.Lo)
			k, _ := slices.BinarySearch(mle.Bounds, pc.Lo+tol(pc.Lo)) // Table.Tokens' rule
			for k = max(k, 1); k < len(mle.Bounds) && mle.Bounds[k-1] < pc.Hi-tol(pc.Hi); k++ {
				lo, hi := math.Max(mle.Bounds[k-1], pc.Lo), math.Min(mle.Bounds[k], pc.Hi)
				b := tokenAt(bd.Bounds, (lo+hi)/2)
				if b >= len(bd.Bounds) || bd.Bounds[b-1] > lo+tol(lo) {
					return errors.New("estimate: internal error: a row outcome lies outside the biased-down band")
				}
				out = append(out, RowOutcome{Lo: lo, Hi: hi, P: density * (hi - lo), MLE: mle.A[k-1], BiasedDown: bd.A[b-1]})
			}
		}
		if err := fn(r, out); err != nil {
			return err
		}
	}
	return nil
}

// unitSource is implemented by *sanitize.Table: Algorithm 4 rows in dense
// form.
type unitSource interface {
	UnitRows(from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error
}

// tokenAt returns the 1-based index into bounds of the token holding v:
// the smallest k >= 1 with bounds[k] >= v (Table.explicitToken's rule).
func tokenAt(bounds []float64, v float64) int {
	k, _ := slices.BinarySearch(bounds, v)
	return min(max(k, 1), len(bounds)-1)
}

// rowBand streams rows 1.. of src once, feeding every row to an
// estimates-only biased-down builder (the dense one on unit cells when unit
// is set; it fails with errNotUnit on other rows) and the rows from
// bandStart on to an estimates-only MLE builder,
// until both have finalised every token up to to; it returns copies of rows
// from..to and the two builders' (partial) tables.
func rowBand(ctx context.Context, src RowSource, g G, from, to, bandStart int64, unit bool) ([]sanitize.Row, *Table, *Table, error) {
	// Estimates only: biased-down from row 1, storing the tokens from the
	// band on (those below are never looked up), and MLE from the band.
	bd := newEstimatesOnly(ctx, g, BiasedDown, to, 1, bandStart)
	mle := newEstimatesOnly(ctx, g, MLE, to, bandStart, 0)
	var ubd *denseBD // the biased-down pass on unit cells, when unit
	if unit {
		ubd = newDenseBD(g, to, bandStart-1)
		ubd.ctx = ctx
		bd.done = true
	}
	var rows []sanitize.Row
	var err error
	feedChecked := func(b *fusedBuilder, row sanitize.Row, dens []float64, cerr error) error {
		if b.done {
			return nil
		}
		if err := b.addChecked(row, dens, cerr, nil); err != nil {
			return err
		}
		return b.advance()
	}
	feed := func(b *fusedBuilder, row sanitize.Row) error {
		if b.done {
			return nil
		}
		if err := b.addRow(row); err != nil {
			return err
		}
		return b.advance()
	}
	fn := func(row sanitize.Row, dens []float64, cerr error, _ *shiftMark) bool {
		if err = bd.cancelled(row.Frequency, len(row.Pieces)); err != nil {
			return false
		}
		if err = feedChecked(bd, row, dens, cerr); err != nil {
			return false
		}
		if ubd != nil && !ubd.done {
			if err = addPieces(ubd, row); err != nil {
				return false
			}
		}
		if row.Frequency >= bandStart {
			if err = feedChecked(mle, row, dens, cerr); err != nil {
				return false
			}
		}
		if row.Frequency >= from && row.Frequency <= to {
			rows = append(rows, row.Clone())
		}
		return !(bd.done && mle.done && (ubd == nil || ubd.done))
	}
	last := min(to+maxLookahead, sanitize.MaxFrequency)
	if us, ok := src.(unitSource); ok && ubd != nil {
		// Dense rows: the unit builder needs no pieces; only the band
		// rows are converted for the MLE builder and the answer.
		var buf []sanitize.Piece
		dense := func(it *denseItem) bool {
			i, pi, lo, m := it.i, it.pi, it.lo, it.raw
			if err = ubd.cancelled(i, it.cells); err != nil {
				return false
			}
			if !ubd.done {
				if it.err != nil {
					err = it.err
					return false
				}
				if err = linkDense(ubd, it.r); err != nil {
					return false
				}
			} else if it.r != nil {
				ubd.pool = append(ubd.pool, it.r)
			}
			if i < bandStart {
				return true
			}
			buf = buf[:0]
			for k, v := range m {
				if v > 0 {
					buf = append(buf, sanitize.Piece{Lo: lo + float64(k), Hi: lo + float64(k+1), P: v})
				}
			}
			row := sanitize.Row{Frequency: i, Pi: pi, Pieces: buf}
			if err = feed(mle, row); err != nil {
				return false
			}
			if i >= from && i <= to {
				rows = append(rows, row.Clone())
			}
			return !(mle.done && ubd.done)
		}
		if e := ubd.pipeDense(ctx, us, 1, last, bandStart, nil, dense); e != nil {
			return nil, nil, nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
		}
	} else if e := pipeRows(ctx, src, 1, last, nil, fn); e != nil {
		return nil, nil, nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	for _, b := range []*fusedBuilder{bd, mle} {
		if !b.done && b.nextFreq <= last { // the source has no more rows
			b.exhausted = true
			if err := b.advance(); err != nil {
				return nil, nil, nil, err
			}
		}
		if !b.done {
			return nil, nil, nil, errors.New("estimate: row supports do not move past the requested frequency")
		}
	}
	if ubd != nil {
		if !ubd.done {
			return nil, nil, nil, errors.New("estimate: row supports do not move past the requested frequency")
		}
		return rows, ubd.storedTable(BiasedDown), mle.t, nil
	}
	return rows, bd.t, mle.t, nil
}
