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
	_, err := Open(ctx, src, Ask{Rows: &RowsAsk{G: g, From: from, To: to, Margin: margin, Fn: fn}})
	return err
}

// rowEstimates answers j's rows ask with the row band band computes (the
// rows from..to and the biased-down and MLE band tables from a band that
// starts at the given row): from the band margin rows below from, or,
// when the margin misses rows that produce row from's tokens, from row 1.
func rowEstimates(j *job, band func(bandStart int64) ([]sanitize.Row, *Table, *Table, error)) error {
	ask := j.ask.Rows
	from, to, fn := ask.From, ask.To, ask.Fn
	bandStart := max(1, from-max(ask.Margin, 0))
	rows, bd, mle, err := band(bandStart)
	if err != nil {
		return err
	}
	if len(rows) > 0 && len(rows[0].Pieces) > 0 && rows[0].Pieces[0].Lo < float64(bandStart-1) {
		// The margin missed rows that produce row from's tokens.
		if rows, bd, mle, err = band(1); err != nil {
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
				o := RowOutcome{Lo: lo, Hi: hi, P: density * (hi - lo), MLE: mle.A[k-1], BiasedDown: math.NaN()}
				if bd != nil {
					b := tokenAt(bd.Bounds, (lo+hi)/2)
					if b >= len(bd.Bounds) || bd.Bounds[b-1] > lo+tol(lo) {
						return errors.New("estimate: internal error: a row outcome lies outside the biased-down band")
					}
					o.BiasedDown = bd.A[b-1]
				}
				out = append(out, o)
			}
		}
		if err := fn(r, out); err != nil {
			return err
		}
	}
	return nil
}

// rowsFromTables answers j's rows ask from the MLE and biased-down tables
// of size n = TableSize(src, To) that the ask's Tables gives, through
// their stationary tails, when n <= To: the rows are then stationary below
// To, and two small (cached) tables serve any frequency, where a band of
// rows would start near From. It declines when n > To. The rows come
// first: computing them detects stationarity, which lets the tables stop
// early and extend through their tails. Not a fast path of the band but
// another answer (tails continue the tables by their closed forms), so it
// runs under pwsd_reference too.
func rowsFromTables(j *job) (*Opened, error) {
	t, ask := j.src.(*sanitize.Table), j.ask.Rows
	n, err := TableSize(j.ctx, t, float64(ask.To))
	if err != nil {
		return nil, err
	}
	if n > ask.To {
		return nil, errDecline
	}
	raw := make([]sanitize.Row, 0, ask.To-ask.From+1)
	for i := ask.From; i <= ask.To; i++ {
		if err := j.ctx.Err(); err != nil {
			return nil, err
		}
		r, err := t.Row(i)
		if err != nil {
			return nil, fmt.Errorf("estimate: computing row: %w", err)
		}
		raw = append(raw, r)
	}
	mle, err := ask.Tables(Spec{MaxFrequency: n, G: ask.G, Estimator: MLE})
	if err != nil {
		return nil, err
	}
	bd, err := ask.Tables(Spec{MaxFrequency: n, G: ask.G, Estimator: BiasedDown})
	if err != nil {
		return nil, err
	}
	var out []RowOutcome
	for _, r := range raw {
		out = out[:0]
		for _, pc := range r.Pieces {
			density := pc.P / (pc.Hi - pc.Lo)
			var ferr error
			err := mle.Tokens(pc.Lo, pc.Hi, func(tok Token) bool {
				lo, hi := math.Max(tok.Lo, pc.Lo), math.Min(tok.Hi, pc.Hi)
				o := RowOutcome{Lo: lo, Hi: hi, P: density * (hi - lo), MLE: tok.Estimate}
				if o.BiasedDown, ferr = bd.Estimate((lo + hi) / 2); ferr != nil {
					return false
				}
				out = append(out, o)
				return true
			})
			if err == nil {
				err = ferr
			}
			if err != nil {
				return nil, fmt.Errorf("estimate: outcomes of row %d: %w", r.Frequency, err)
			}
		}
		if err := ask.Fn(r, out); err != nil {
			return nil, err
		}
	}
	return &Opened{}, nil
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
// estimates-only biased-down loop and the rows from bandStart on to an
// estimates-only MLE loop (both made by newLoop: the general loops, fast or
// reference), until both have finalised every token up to to; it returns
// copies of rows from..to and the two loops' (partial) tables. Rows are
// read on a second goroutine (pipeRows). With mleOnly there is no
// biased-down loop (its table is nil) and the rows are read from bandStart.
func rowBand(ctx context.Context, src RowSource, newLoop newGeneralLoop, g G, from, to, bandStart int64, mleOnly bool) ([]sanitize.Row, *Table, *Table, error) {
	// Estimates only: biased-down from row 1, storing the tokens from the
	// band on (those below are never looked up), and MLE from the band.
	mle := newLoop(ctx, g, MLE, to, bandStart, 0)
	bd, first := mle, bandStart // with mleOnly the MLE loop stands in for the checks below
	if !mleOnly {
		bd, first = newLoop(ctx, g, BiasedDown, to, 1, bandStart), 1
	}
	var rows []sanitize.Row
	var err error
	fn := func(row sanitize.Row, dens []float64, cerr error, _ *shiftMark) bool {
		if err = bd.cancelled(row.Frequency, len(row.Pieces)); err != nil {
			return false
		}
		if !mleOnly {
			if err = feedLoop(bd, row, dens, cerr); err != nil {
				return false
			}
		}
		if row.Frequency >= bandStart {
			if err = feedLoop(mle, row, dens, cerr); err != nil {
				return false
			}
		}
		if row.Frequency >= from && row.Frequency <= to {
			rows = append(rows, row.Clone())
		}
		return !(bd.done && mle.done)
	}
	last := min(to+maxLookahead, sanitize.MaxFrequency)
	if e := pipeRows(ctx, src, first, last, nil, fn); e != nil {
		return nil, nil, nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if mleOnly {
		if err := finishLoops(last, mle); err != nil {
			return nil, nil, nil, err
		}
		return rows, nil, mle.t, nil
	}
	if err := finishLoops(last, bd, mle); err != nil {
		return nil, nil, nil, err
	}
	return rows, bd.t, mle.t, nil
}

// rowBandUnit is rowBand for Algorithm 4 rows read in dense form: the
// biased-down pass is the dense loop on unit cells (denseBD, estimates
// only, kept above the band), which needs no pieces; only the band's rows
// are converted to pieces, for the MLE loop (the fast general one) and the
// answer. It fails with errNotUnit on rows that are not on unit cells
// (Open then takes rowBand). Bit for bit rowBand (TestBuilderPairs).
func rowBandUnit(ctx context.Context, us unitSource, g G, from, to, bandStart int64) ([]sanitize.Row, *Table, *Table, error) {
	mle := newEstimatesOnly(ctx, g, MLE, to, bandStart, 0)
	ubd := newDenseBD(g, to, bandStart-1)
	ubd.ctx = ctx
	var rows []sanitize.Row
	var err error
	last := min(to+maxLookahead, sanitize.MaxFrequency)
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
		if err = feedRow(mle, row); err != nil {
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
	if err != nil {
		return nil, nil, nil, err
	}
	if err := finishLoops(last, mle); err != nil {
		return nil, nil, nil, err
	}
	if !ubd.done {
		return nil, nil, nil, errors.New("estimate: row supports do not move past the requested frequency")
	}
	return rows, ubd.storedTable(BiasedDown), mle.t, nil
}

// feedLoop gives the next row, checked on the row goroutine (dens, cerr:
// pipeRows), to a general loop that is not done yet and finalises the
// tokens it makes final.
func feedLoop(l generalLoop, row sanitize.Row, dens []float64, cerr error) error {
	if l.done {
		return nil
	}
	if err := l.addChecked(row, dens, cerr, nil); err != nil {
		return err
	}
	return l.advance()
}

// feedRow is feedLoop for a row not checked yet (addRow checks it).
func feedRow(l generalLoop, row sanitize.Row) error {
	if l.done {
		return nil
	}
	if err := l.addRow(row); err != nil {
		return err
	}
	return l.advance()
}

// finishLoops finalises general loops whose source ended before they were
// done (last: the last row asked for) and fails when one is still not done.
func finishLoops(last int64, loops ...generalLoop) error {
	for _, l := range loops {
		if !l.done && l.nextFreq <= last { // the source has no more rows
			l.exhausted = true
			if err := l.advance(); err != nil {
				return err
			}
		}
		if !l.done {
			return errors.New("estimate: row supports do not move past the requested frequency")
		}
	}
	return nil
}
