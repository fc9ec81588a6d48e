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
	// later: the row goroutine left the row to the token loop to prepare
	// (prepSide): r is a recycled row not prepared yet, and the masses
	// travel in the batch's raw. hasRaw: the batch's raw holds the row's
	// masses (later, or i >= rawFrom).
	later, hasRaw bool
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
// and calls fn with the rows in order in the caller's goroutine until fn
// returns false. fn links it.r (linkDense) or gives it back (u.pool). With
// two or more cores, reading runs on a second goroutine, so that the
// sanitizer rows overlap the estimator's token loop, and each row is
// prepared by whichever side has time for it (prepSide). The results are the
// same: prepDense depends on u's fixed parameters only, pre on the rows
// only. pre may run on rows past the one where fn stops, so it must not
// change state fn's caller reads, only record in the item what the caller
// applies. A pre error stops the rows after that row. Cancelling ctx stops
// the rows at the next one and pipeDense then returns ctx's error.
func (u *denseRows) pipeDense(ctx context.Context, us unitSource, from, to, rawFrom int64,
	pre func(it *denseItem, m []float64) error, fn func(it *denseItem) bool) error {
	// check starts it and runs pre on the row; it reports false when pre
	// failed.
	check := func(it *denseItem, i int64, pi, lo float64, m []float64) bool {
		*it = denseItem{i: i, pi: pi, lo: lo, cells: len(m)}
		if pre != nil {
			it.err = pre(it, m)
		}
		return it.err == nil
	}
	// prepInto prepares it's row into r, sharing like's buffers when pre
	// found the row to be like's copy; on an error r goes back to spare.
	prepInto := func(it *denseItem, r, like *denseRow, spare *[]*denseRow, m []float64) {
		if !it.copied {
			like = nil
		}
		if err := u.prepDense(r, like, it.i, it.pi, it.lo, m); err != nil {
			it.err = err
			*spare = append(*spare, r)
			return
		}
		it.r = r
	}
	if rowsInline(ctx) {
		var it denseItem
		var prev *denseRow // the row prepared last (prepDense's like)
		return us.UnitRows(from, to, func(i int64, pi, lo float64, m []float64) bool {
			like := prev
			prev = nil
			if check(&it, i, pi, lo, m) {
				prepInto(&it, takeOrNew(&u.pool), like, &u.pool, m)
				prev = it.r
			}
			if i >= rawFrom {
				it.raw = m
			}
			return fn(&it)
		})
	}
	// A builder with statistics shares them with the row goroutine
	// (shareStats, rowReturn).
	defer u.shareStats()()
	var last *denseRow // the token loop's previous row, prepared on either side
	return runPipeDrain(ctx, func(p *pipe[denseBatch]) error {
		var spare []*denseRow
		var prev *denseRow // the row this goroutine prepared last, if the previous one
		here := true       // this goroutine prepares the batch's rows (prepSide)
		force, _ := ctx.Value(prepKey{}).(prepForce)
		take := func() *denseBatch {
			if force != 0 {
				here = force.next(here)
			} else {
				here = prepSide(here, len(p.free), p.backlog())
			}
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
			like := prev
			prev = nil
			more := check(it, i, pi, lo, m)
			switch {
			case !more:
			case here:
				prepInto(it, takeOrNew(&spare), like, &spare, m)
				prev = it.r
			default:
				// The token loop prepares the row, into a row from
				// spare (it owes no statistics: takeBack computed them).
				it.r, it.later = takeOrNew(&spare), true
			}
			if it.later || i >= rawFrom {
				it.hasRaw = true
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
			var raw []float64
			if it.hasRaw {
				raw = b.raw[off : off+it.cells]
				off += it.cells
			}
			if it.i >= rawFrom {
				it.raw = raw
			}
			if stopped {
				if it.r != nil {
					u.pool = append(u.pool, it.r)
				}
				continue
			}
			if it.later {
				r := it.r
				it.r = nil
				prepInto(it, r, last, &u.pool, raw)
			}
			last = it.r
			stopped = !fn(it)
		}
		clear(b.items)
		b.giveBack(u, b.pp.backlog() == 0)
		return !stopped
	}, func(b *denseBatch) { statsOwed(b.recycled, b.a, u.stats) })
}

// prepSide reports whether the row goroutine prepares the rows of its next
// batch itself (prepDense) rather than leaving them to the token loop, given
// its previous choice, the empty batches ready for it (free) and the filled
// ones waiting for the loop (backlog). A row prepared on one core and read on
// the other moves each cache line of its masses and suffix sums across twice
// (written into a buffer the loop read last, then read by the loop), where
// raw masses cross once each way; on the 2-core VMs this project runs on,
// that traffic cost the tables route's 10^6-row walk more CPU than the
// preparation itself (docs/estimator-builders.md, "Who prepares a dense
// row"). So when no filled batch waits (the loop is idle: the walk is the
// slower side) the loop prepares the rows; when no empty batch is ready (the
// loop is behind: the rows are cheap, from a kept or stationary table) the
// row goroutine does; otherwise the choice stays. Either way each row is the
// same, bit for bit.
func prepSide(here bool, free, backlog int) bool {
	switch {
	case free == 0:
		return true
	case backlog == 0:
		return false
	}
	return here
}

// prepKey is the context key of withPrepForce.
type prepKey struct{}

// prepForce overrides prepSide in tests: every batch's rows prepared by the
// row goroutine (prepByRows), by the token loop (prepByLoop), or by each in
// turn (prepAlternate).
type prepForce int

const (
	prepByRows prepForce = iota + 1
	prepByLoop
	prepAlternate
)

// next is the choice for the next batch, given the previous one.
func (f prepForce) next(here bool) bool {
	switch f {
	case prepByRows:
		return true
	case prepByLoop:
		return false
	}
	return !here
}
