package estimate

import (
	"context"
)

// denseItem is one dense row prepared for a dense builder by pipeDense.
type denseItem struct {
	i      int64
	pi, lo float64
	cells  int       // len of the dense row as given
	r      *denseRow // the row prepared by prepDense, nil when err is set
	err    error     // the row's pre or prepDense error
	raw    []float64 // the dense masses as given, for i >= rawFrom; valid during fn
	// Shift tracking done by pre on the row goroutine (buildUnit): the
	// tracker's state after this row, and its verdict that the row is the
	// previous one shifted up by a cell, bit for bit.
	mark   shiftMark
	copied bool
}

// denseBatch carries prepared rows to the builder and, on the way back,
// rows the builder has retired.
type denseBatch struct {
	items []denseItem
	raw   []float64
	rowReturn
	pp *pipe[denseBatch]
}

// rowReturn is what a batch carries back to the row goroutine: the rows
// the token loop retired, and the estimates that the statistics they may
// still owe read (needStats, statsOwed).
type rowReturn struct {
	recycled []*denseRow
	a        []float64
}

// giveBack, in the token loop, puts u's retired rows in the batch going
// back, first computing the statistics they owe when behind (the row
// goroutine has no batch waiting: better than waiting for it).
func (rr *rowReturn) giveBack(u *denseRows, behind bool) {
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
func (rr *rowReturn) takeBack(stats []FrequencyStats, spare *[]*denseRow) {
	statsOwed(rr.recycled, rr.a, stats)
	*spare = append(*spare, rr.recycled...)
	clear(rr.recycled)
	rr.recycled = rr.recycled[:0]
}

// shareStats makes u leave the statistics of the rows it retires to
// whoever recycles them (statsToRecycler) when it computes statistics at all,
// until the returned function, which computes those still owed by the
// rows u holds.
func (u *denseRows) shareStats() (end func()) {
	u.statsToRecycler = u.stats != nil
	return func() {
		u.statsToRecycler = false
		statsOwed(u.pool, u.a, u.stats)
	}
}

// pipeDense reads the dense rows from..to of us, runs pre (the checks that
// need only the rows, in row order; nil for none) and u.prepDense on each,
// and calls fn
// with the rows in order in the caller's goroutine until fn returns false.
// fn links it.r (linkDense) or gives it back (u.pool). With two or more
// cores, reading and preparing run on a second goroutine, so that the
// sanitizer rows and their preparation overlap the estimator's token
// loop; the results are the same (prepDense depends on u's fixed
// parameters only, pre on the rows only; pre may run on rows past the one
// where fn stops, so it must not change state fn's caller reads, only
// record in the item what the caller applies). A pre error stops the rows
// after that row. Cancelling ctx stops the rows at the next one and
// pipeDense then returns ctx's error.
func (u *denseRows) pipeDense(ctx context.Context, us unitSource, from, to, rawFrom int64,
	pre func(it *denseItem, m []float64) error, fn func(it *denseItem) bool) error {
	// prepare fills it; it reports false when pre failed. prev is the row
	// it prepared last (nil after an error): a row pre flags as its copy
	// shares its buffers (prepDense's like).
	var prev *denseRow
	prepare := func(it *denseItem, spare *[]*denseRow, i int64, pi, lo float64, m []float64) bool {
		*it = denseItem{i: i, pi: pi, lo: lo, cells: len(m)}
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
	if rowsInline(ctx) {
		var it denseItem
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
	return runPipeDrain(ctx, func(p *pipe[denseBatch]) error {
		var spare []*denseRow
		take := func() *denseBatch {
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
			b.items = append(b.items, denseItem{})
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
	}, func(b *denseBatch, stopped bool) bool {
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
	}, func(b *denseBatch) { statsOwed(b.recycled, b.a, u.stats) })
}
