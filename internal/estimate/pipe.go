package estimate

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// pipeBatchRows is how many dense rows travel together from the sanitizer
// goroutine to the estimator in pipeUnitRows.
const pipeBatchRows = 256

// pipeBatchCells bounds the cells (dense masses or pieces) of one batch, so
// that wide rows (small epsilon) travel in small batches: memory in flight
// and rows computed past the consumer's last are bounded.
const pipeBatchCells = 1 << 16

// pipeBatches is how many batches are in flight (being filled, queued,
// being consumed).
const pipeBatches = 4

// rowBatch holds dense rows: row k is frequency i[k], reporting
// probability pi[k], cells lo[k]+1 .. with masses m[end[k-1]:end[k]].
type rowBatch struct {
	i      []int64
	pi, lo []float64
	end    []int
	m      []float64
}

func (b *rowBatch) reset() {
	b.i, b.pi, b.lo, b.end, b.m = b.i[:0], b.pi[:0], b.lo[:0], b.end[:0], b.m[:0]
}

func (b *rowBatch) add(i int64, pi, lo float64, m []float64) {
	b.i = append(b.i, i)
	b.pi = append(b.pi, pi)
	b.lo = append(b.lo, lo)
	b.m = append(b.m, m...)
	b.end = append(b.end, len(b.m))
}

// pipeUnitRows is us.UnitRows(from, to, fn) with the rows computed on
// another goroutine, so that computing the sanitizer rows and consuming
// them (the estimator passes) overlap on two cores. fn is called in the
// caller's goroutine with the same rows in the same order, so the results
// are those of the direct call; rows past the one where fn returns false
// may be computed (a few batches) but are not delivered. The row goroutine
// stops at the next row once ctx is cancelled, and pipeUnitRows then returns
// ctx's error. With one available core it is the direct call.
func pipeUnitRows(ctx context.Context, us unitSource, from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return us.UnitRows(from, to, fn)
	}
	free := make(chan *rowBatch, pipeBatches)
	full := make(chan *rowBatch, pipeBatches)
	for range pipeBatches {
		free <- &rowBatch{}
	}
	var stop, cancelled atomic.Bool
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("estimate: computing sanitizer rows: panic: %v", p)
			}
			close(full)
			errc <- err
		}()
		b := <-free
		b.reset()
		err = us.UnitRows(from, to, func(i int64, pi, lo float64, m []float64) bool {
			if stop.Load() {
				return false
			}
			if ctx.Err() != nil {
				cancelled.Store(true)
				return false
			}
			b.add(i, pi, lo, m)
			if len(b.i) == pipeBatchRows || len(b.m) >= pipeBatchCells {
				full <- b
				b = <-free
				b.reset()
			}
			return true
		})
		if len(b.i) > 0 {
			full <- b
		}
	}()
	drained := false
	defer func() {
		if !drained { // fn panicked: let the producer finish and exit
			stop.Store(true)
			go func() {
				for b := range full {
					free <- b
				}
				<-errc
			}()
		}
	}()
	stopped := false
	for b := range full {
		start := 0
		for k := 0; k < len(b.i) && !stopped; k++ {
			if !fn(b.i[k], b.pi[k], b.lo[k], b.m[start:b.end[k]]) {
				stopped = true
				stop.Store(true)
			}
			start = b.end[k]
		}
		free <- b
	}
	drained = true
	if err := <-errc; err != nil {
		return err
	}
	if cancelled.Load() && !stopped {
		// The rows stopped for the context, not because the source ended.
		return fmt.Errorf("estimate: %w", ctx.Err())
	}
	return nil
}

// pieceBatch holds rows as pieces: row k is rows[k] with its pieces
// pieces[end[k-1]:end[k]].
type pieceBatch struct {
	rows   []sanitize.Row
	end    []int
	pieces []sanitize.Piece
}

func (b *pieceBatch) reset() {
	clear(b.rows)
	b.rows, b.end, b.pieces = b.rows[:0], b.end[:0], b.pieces[:0]
}

// pipeRows is src.Rows(from, to, fn) with the rows computed on another
// goroutine (see pipeUnitRows): fn gets the same rows in the same order in
// the caller's goroutine. The Row passed to fn is only valid during the
// call.
func pipeRows(ctx context.Context, src RowSource, from, to int64, fn func(sanitize.Row) bool) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return src.Rows(from, to, fn)
	}
	free := make(chan *pieceBatch, pipeBatches)
	full := make(chan *pieceBatch, pipeBatches)
	for range pipeBatches {
		free <- &pieceBatch{}
	}
	var stop, cancelled atomic.Bool
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("estimate: computing sanitizer rows: panic: %v", p)
			}
			close(full)
			errc <- err
		}()
		b := <-free
		b.reset()
		err = src.Rows(from, to, func(r sanitize.Row) bool {
			if stop.Load() {
				return false
			}
			if ctx.Err() != nil {
				cancelled.Store(true)
				return false
			}
			b.pieces = append(b.pieces, r.Pieces...)
			b.end = append(b.end, len(b.pieces))
			r.Pieces = nil
			b.rows = append(b.rows, r)
			if len(b.rows) == pipeBatchRows || len(b.pieces) >= pipeBatchCells {
				full <- b
				b = <-free
				b.reset()
			}
			return true
		})
		if len(b.rows) > 0 {
			full <- b
		}
	}()
	drained := false
	defer func() {
		if !drained { // fn panicked: let the producer finish and exit
			stop.Store(true)
			go func() {
				for b := range full {
					free <- b
				}
				<-errc
			}()
		}
	}()
	stopped := false
	for b := range full {
		start := 0
		for k := 0; k < len(b.rows) && !stopped; k++ {
			r := b.rows[k]
			r.Pieces = b.pieces[start:b.end[k]:b.end[k]]
			if !fn(r) {
				stopped = true
				stop.Store(true)
			}
			start = b.end[k]
		}
		free <- b
	}
	drained = true
	if err := <-errc; err != nil {
		return err
	}
	if cancelled.Load() && !stopped {
		// The rows stopped for the context, not because the source ended.
		return fmt.Errorf("estimate: %w", ctx.Err())
	}
	return nil
}
