package estimate

import (
	"context"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// pieceBatch holds rows as pieces: row k is rows[k] with its pieces
// pieces[end[k-1]:end[k]], their densities dens[end[k-1]:end[k]] and the
// row's check error errs[k].
type pieceBatch struct {
	rows   []sanitize.Row
	errs   []error
	end    []int
	pieces []sanitize.Piece
	dens   []float64
	marks  []shiftMark // with tracking: the tracker's state after each row
}

func (b *pieceBatch) reset() {
	clear(b.rows)
	clear(b.errs)
	clear(b.marks)
	b.rows, b.errs, b.end, b.pieces, b.dens, b.marks = b.rows[:0], b.errs[:0], b.end[:0], b.pieces[:0], b.dens[:0], b.marks[:0]
}

// pipeRows is src.Rows(from, to, ...) with the rows computed, checked
// (checkRow) and their pieces' densities formed (appendDens) on another
// goroutine, so that the sanitizer rows and the estimator passes overlap on
// two cores: fn gets the same rows in the same order in the caller's
// goroutine with the densities and the check's error, so the results are
// those of the direct calls. With a tracker tr (one of its own: it
// may see rows past the last one fn takes), the row goroutine also runs
// the shift tracking (trackShift) and fn gets tr's state after each row
// (nil without). Successive calls reading successive ranges of rows must
// share one tracker, which carries the previous row across them. Rows past
// the one where fn returns false may be computed (a few batches) but are
// not delivered. The row goroutine
// stops at the next row once ctx is cancelled, and pipeRows then returns
// ctx's error. With one available core it runs in the caller's goroutine.
// The Row and densities passed to fn are only valid during the call.
func pipeRows(ctx context.Context, src RowSource, from, to int64, tr *shiftTracker,
	fn func(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) bool) error {
	if rowsInline(ctx) {
		return serialRows(src, from, to, tr, fn)
	}
	return runPipe(ctx, func(p *pipe[pieceBatch]) error {
		b := p.take()
		b.reset()
		err := src.Rows(from, to, func(r sanitize.Row) bool {
			if !p.next() {
				return false
			}
			if tr != nil {
				b.marks = append(b.marks, track(tr, r))
			}
			b.errs = append(b.errs, checkRow(r))
			b.pieces = append(b.pieces, r.Pieces...)
			b.dens = appendDens(b.dens, r.Pieces)
			b.end = append(b.end, len(b.pieces))
			r.Pieces = nil
			b.rows = append(b.rows, r)
			if len(b.rows) == pipeBatchRows || len(b.pieces) >= pipeBatchCells {
				p.send(b)
				b = p.take()
				b.reset()
			}
			return true
		})
		if len(b.rows) > 0 {
			p.send(b)
		}
		return err
	}, func(b *pieceBatch, stopped bool) bool {
		start := 0
		for k := 0; k < len(b.rows) && !stopped; k++ {
			r := b.rows[k]
			r.Pieces = b.pieces[start:b.end[k]:b.end[k]]
			var mark *shiftMark
			if len(b.marks) > 0 {
				mark = &b.marks[k]
			}
			stopped = !fn(r, b.dens[start:b.end[k]:b.end[k]], b.errs[k], mark)
			start = b.end[k]
		}
		return !stopped
	})
}

// serialRows is pipeRows on the calling goroutine: for one core, and for
// short reads (a chunk) whose pipe would cost more than it saves.
func serialRows(src RowSource, from, to int64, tr *shiftTracker,
	fn func(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) bool) error {
	var dens []float64
	return src.Rows(from, to, func(r sanitize.Row) bool {
		dens = appendDens(dens[:0], r.Pieces)
		var mark *shiftMark
		if tr != nil {
			m := track(tr, r)
			mark = &m
		}
		return fn(r, dens, checkRow(r), mark)
	})
}
