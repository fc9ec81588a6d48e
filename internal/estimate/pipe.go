package estimate

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// pipeBatchRows is how many rows travel together from the sanitizer
// goroutine to the estimator (pipeRows, unitBD.pipeDense).
const pipeBatchRows = 256

// pipeBatchCells bounds the cells (dense masses or pieces) of one batch, so
// that wide rows (small epsilon) travel in small batches: memory in flight
// and rows computed past the consumer's last are bounded.
const pipeBatchCells = 1 << 16

// pipeBatches is how many batches are in flight (being filled, queued,
// being consumed).
const pipeBatches = 4

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

// shiftMark is a shift tracker's state after one row (trackShift run on the
// row goroutine): since is its shiftSince, and pattern and pi are set
// (pattern non-nil) on the row where a run of shifted copies begins.
type shiftMark struct {
	since   int64
	pattern []sanitize.Piece
	pi      float64
}

// track runs tr.trackShift on row and returns the mark the builder adopts.
func track(tr *builder, row sanitize.Row) shiftMark {
	before := tr.shiftSince
	tr.trackShift(row)
	return tr.markSince(before)
}

// markSince is the tracker's state after a row as a shiftMark, given its
// shiftSince before the row (the pattern is copied when the row began a
// run of shifted copies).
func (b *builder) markSince(before int64) shiftMark {
	m := shiftMark{since: b.shiftSince}
	if b.shiftSince != 0 && before == 0 {
		m.pattern, m.pi = slices.Clone(b.pattern), b.patternPi
	}
	return m
}

// adopt takes over the tracker's state after a row (see shiftMark).
func (b *builder) adopt(m *shiftMark) {
	b.shiftSince = m.since
	if m.pattern != nil {
		b.pattern, b.patternPi = m.pattern, m.pi
	}
}

// pipeRows is src.Rows(from, to, ...) with the rows computed, checked
// (checkRow) and their pieces' densities formed (appendDens) on another
// goroutine, so that the sanitizer rows and the estimator passes overlap on
// two cores: fn gets the same rows in the same order in the caller's
// goroutine with the densities and the check's error, so the results are
// those of the direct calls. With a tracker tr (a builder of its own: it
// may see rows past the last one fn takes), the row goroutine also runs
// the shift tracking (trackShift) and fn gets tr's state after each row
// (nil without). Successive calls reading successive ranges of rows must
// share one tracker, which carries the previous row across them. Rows past
// the one where fn returns false may be computed (a few batches) but are
// not delivered. The row goroutine
// stops at the next row once ctx is cancelled, and pipeRows then returns
// ctx's error. With one available core it runs in the caller's goroutine.
// The Row and densities passed to fn are only valid during the call.
func pipeRows(ctx context.Context, src RowSource, from, to int64, tr *builder,
	fn func(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) bool) error {
	if runtime.GOMAXPROCS(0) < 2 {
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
func serialRows(src RowSource, from, to int64, tr *builder,
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

// unitItem is one dense row prepared for a unit-cell builder by pipeDense.
type unitItem struct {
	i      int64
	pi, lo float64
	cells  int       // len of the dense row as given
	r      *unitRow  // the row prepared by prepDense, nil when err is set
	err    error     // the row's pre or prepDense error
	raw    []float64 // the dense masses as given, for i >= rawFrom; valid during fn
	// Shift tracking done by pre on the row goroutine (buildUnit): the
	// tracker's state after this row, and its verdict that the row is the
	// previous one shifted up by a cell, bit for bit.
	mark   shiftMark
	copied bool
}

// unitBatch carries prepared rows to the builder and, on the way back,
// rows the builder has retired.
type unitBatch struct {
	items []unitItem
	raw   []float64
	rowReturn
	pp *pipe[unitBatch]
}

// rowReturn is what a batch carries back to the row goroutine: the rows
// the token loop retired, and the estimates that the statistics they may
// still owe read (needStats, statsOwed).
type rowReturn struct {
	recycled []*unitRow
	a        []float64
}

// giveBack, in the token loop, puts u's retired rows in the batch going
// back, first computing the statistics they owe when behind (the row
// goroutine has no batch waiting: better than waiting for it).
func (rr *rowReturn) giveBack(u *unitBD, behind bool) {
	if behind {
		statsOwed(u.pool, u.a, u.stats)
	}
	rr.recycled = append(rr.recycled, u.pool...)
	rr.a = u.a
	clear(u.pool)
	u.pool = u.pool[:0]
}

// takeBack, on the row goroutine, computes the statistics the returned
// rows owe into stats and moves the rows to spare.
func (rr *rowReturn) takeBack(stats []FrequencyStats, spare *[]*unitRow) {
	statsOwed(rr.recycled, rr.a, stats)
	*spare = append(*spare, rr.recycled...)
	clear(rr.recycled)
	rr.recycled = rr.recycled[:0]
}

// shareStats makes u leave the statistics of the rows it retires to
// whoever recycles them (deferStats) when it computes statistics at all,
// until the returned function, which computes those still owed by the
// rows u holds.
func (u *unitBD) shareStats() (end func()) {
	u.deferStats = u.stats != nil
	return func() {
		u.deferStats = false
		statsOwed(u.pool, u.a, u.stats)
	}
}

// pipeDense reads the dense rows from..to of us, runs pre (the checks that
// need only the rows, in row order; nil for none) and u.prepDense on each,
// and calls fn
// with the rows in order in the caller's goroutine until fn returns false.
// fn links it.r (u.link) or gives it back (u.pool). With two or more
// cores, reading and preparing run on a second goroutine, so that the
// sanitizer rows and their preparation overlap the estimator's token
// loop; the results are the same (prepDense depends on u's fixed
// parameters only, pre on the rows only; pre may run on rows past the one
// where fn stops, so it must not change state fn's caller reads, only
// record in the item what the caller applies). A pre error stops the rows
// after that row. Cancelling ctx stops the rows at the next one and
// pipeDense then returns ctx's error.
func (u *unitBD) pipeDense(ctx context.Context, us unitSource, from, to, rawFrom int64,
	pre func(it *unitItem, m []float64) error, fn func(it *unitItem) bool) error {
	// prepare fills it; it reports false when pre failed. prev is the row
	// it prepared last (nil after an error): a row pre flags as its copy
	// shares its buffers (prepDense's like).
	var prev *unitRow
	prepare := func(it *unitItem, spare *[]*unitRow, i int64, pi, lo float64, m []float64) bool {
		*it = unitItem{i: i, pi: pi, lo: lo, cells: len(m)}
		like := prev
		prev = nil
		if pre != nil {
			it.err = pre(it, m)
		}
		if it.err != nil {
			return false
		}
		if !it.copied {
			like = nil
		}
		r := takeOrNew(spare)
		if err := u.prepDense(r, like, i, pi, lo, m); err != nil {
			it.err = err
			*spare = append(*spare, r)
			return true
		}
		it.r, prev = r, r
		return true
	}
	if runtime.GOMAXPROCS(0) < 2 {
		var it unitItem
		return us.UnitRows(from, to, func(i int64, pi, lo float64, m []float64) bool {
			prepare(&it, &u.pool, i, pi, lo, m)
			if i >= rawFrom {
				it.raw = m
			}
			return fn(&it)
		})
	}
	// A builder with statistics shares them with the row goroutine
	// (shareStats, rowReturn).
	defer u.shareStats()()
	return runPipeDrain(ctx, func(p *pipe[unitBatch]) error {
		var spare []*unitRow
		take := func() *unitBatch {
			b := p.take()
			b.pp = p
			b.takeBack(u.stats, &spare)
			b.items, b.raw = b.items[:0], b.raw[:0]
			return b
		}
		b := take()
		cells := 0
		err := us.UnitRows(from, to, func(i int64, pi, lo float64, m []float64) bool {
			if !p.next() {
				return false
			}
			b.items = append(b.items, unitItem{})
			it := &b.items[len(b.items)-1]
			more := prepare(it, &spare, i, pi, lo, m)
			if i >= rawFrom {
				b.raw = append(b.raw, m...)
			}
			cells += len(m)
			if len(b.items) == pipeBatchRows || cells >= pipeBatchCells || !more {
				p.send(b)
				b, cells = take(), 0
			}
			return more
		})
		if len(b.items) > 0 {
			p.send(b)
		}
		return err
	}, func(b *unitBatch, stopped bool) bool {
		off := 0
		for k := range b.items {
			it := &b.items[k]
			if it.i >= rawFrom {
				it.raw = b.raw[off : off+it.cells]
				off += it.cells
			}
			if stopped {
				if it.r != nil {
					u.pool = append(u.pool, it.r)
				}
				continue
			}
			stopped = !fn(it)
		}
		clear(b.items)
		b.giveBack(u, b.pp.backlog() == 0)
		return !stopped
	}, func(b *unitBatch) { statsOwed(b.recycled, b.a, u.stats) })
}

// takeOrNew pops the last element of *pool (a free list of recycled
// values), or returns a new T when the pool is empty.
func takeOrNew[T any](pool *[]*T) *T {
	if k := len(*pool); k > 0 {
		v := (*pool)[k-1]
		(*pool)[k-1] = nil
		*pool = (*pool)[:k-1]
		return v
	}
	return new(T)
}

// pipe is the hand-over between runPipe's producer goroutine and its
// consumer: batches of type B circulate from free (empty) to full and back.
type pipe[B any] struct {
	ctx             context.Context
	free, full      chan *B
	stop, cancelled atomic.Bool
}

// next reports whether the producer should compute another row: false once
// the consumer wants no more, or ctx is done (then it records that the rows
// stopped for the context).
func (p *pipe[B]) next() bool {
	if p.stop.Load() {
		return false
	}
	if p.ctx.Err() != nil {
		p.cancelled.Store(true)
		return false
	}
	return true
}

// backlog is how many filled batches wait for the consumer.
func (p *pipe[B]) backlog() int { return len(p.full) }

// take waits for an empty batch (the producer clears it).
func (p *pipe[B]) take() *B { return <-p.free }

// send hands a filled batch to the consumer.
func (p *pipe[B]) send(b *B) { p.full <- b }

// runPipe runs produce on a second goroutine, filling at most pipeBatches
// batches ahead, and calls consume with each batch in order in the
// caller's goroutine. consume gets stopped = true once an earlier call
// returned false (it may still recycle what the batch holds) and returns
// false when it wants no more rows; the producer then stops at its next row.
// A panic in produce becomes runPipe's error; a panic in consume leaves the
// producer to finish and exit on its own. runPipe returns produce's error,
// or ctx's error when the rows stopped for the context before consume
// stopped them.
func runPipe[B any](ctx context.Context, produce func(p *pipe[B]) error, consume func(b *B, stopped bool) bool) error {
	return runPipeDrain(ctx, produce, consume, nil)
}

// runPipeDrain is runPipe that, once the producer has ended and every batch
// is consumed, calls leftover (when not nil) with each batch back in the
// free list that the producer did not take again (what the consumer put in
// them for the producer).
func runPipeDrain[B any](ctx context.Context, produce func(p *pipe[B]) error, consume func(b *B, stopped bool) bool, leftover func(b *B)) error {
	p := &pipe[B]{ctx: ctx, free: make(chan *B, pipeBatches), full: make(chan *B, pipeBatches)}
	for range pipeBatches {
		p.free <- new(B)
	}
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("estimate: computing sanitizer rows: panic: %v", r)
			}
			close(p.full)
			errc <- err
		}()
		err = produce(p)
	}()
	drained := false
	defer func() {
		if !drained { // consume panicked: let the producer finish and exit
			p.stop.Store(true)
			go func() {
				for b := range p.full {
					p.free <- b
				}
				<-errc
			}()
		}
	}()
	stopped := false
	for b := range p.full {
		if !consume(b, stopped) && !stopped {
			stopped = true
			p.stop.Store(true)
		}
		p.free <- b
	}
	drained = true
	err := <-errc
	for leftover != nil {
		select {
		case b := <-p.free:
			leftover(b)
			continue
		default:
		}
		break
	}
	if err != nil {
		return err
	}
	if p.cancelled.Load() && !stopped {
		// The rows stopped for the context, not because the source ended.
		return fmt.Errorf("estimate: %w", ctx.Err())
	}
	return nil
}
