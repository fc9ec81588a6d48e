package sanitize

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The heads of junction warm-ups, ahead of a long walk, on a second
// goroutine.
//
// A walk across many blocks checks every junction on its way, and each
// check reads the last row of the new chain's warm-up. The walk runs each
// warm-up beside its own rows and stops it where the two meet bit for bit
// (cursor.stepLock); they meet after 173-280 of the 338 warm-up rows of the
// tables route's cold case (eps 0.2, delta 1e-7, ppswor tau 2e-5), never
// in the first half. A warm-up depends on the parameters and the junction
// only, not on the walk's rows, so a second goroutine computes the first
// half of each (its head: the guess row stepped prewarmHead rows) ahead of
// the walk while the walk steps its own rows (the machine has a second
// core). The walk takes each head in ascending order of junction
// (prewarm.take) and runs the rest of that warm-up beside its rows as
// before. A head is the rows warmRow steps, bit for bit (the same guess
// row, the same steps), only computed elsewhere: no row of the table and
// no junction's verdict depends on which goroutine computed it, or on
// timing. On one core and for Table.WarmUp (its budget of rows stepped
// must not depend on timing) the walk computes its warm-ups alone, beside
// its rows; under pwsd_reference and on short walks (longWalk) it warms
// each junction up when it reaches it, as before.

// prewarmAhead is how many finished heads may wait for the walk.
const prewarmAhead = 2

// prewarmMinJunctions is the fewest junctions a walk must check for its
// warm-ups to run beside it and ahead (longWalk).
const prewarmMinJunctions = 4

// prewarmHead returns how many rows of a warm-up of warm rows its head
// steps: half of them, below where warm-ups meet the chain they check.
func prewarmHead(warm int64) int64 { return warm / 2 }

// prewarm computes the heads of the warm-ups of the junctions first,
// first+block, ..., last, in order, on its own goroutine (run).
type prewarm struct {
	ch          *rowChain
	first, last int64
	out         chan *warmed // finished heads, ascending
	free        chan *warmed // buffers back from the walk
	stopped     atomic.Bool
	done        sync.WaitGroup
	held        *warmed // taken from out but for a later junction than asked
	inUse       *warmed // the last one take returned
}

// warmed is the head of junction a's warm-up, in buf.a.
type warmed struct {
	a   int64
	buf warmBuffers
}

// startPrewarm returns a running prewarm for the walk of cu up to row to,
// or nil when the walk crosses too few junctions to check or a second
// goroutine would not help.
func (ch *rowChain) startPrewarm(cu *cursor, to int64) *prewarm {
	first, last, long := ch.longWalk(cu, to)
	if !long || ch.noPrewarm || runtime.GOMAXPROCS(0) < 2 || cu.inOrder {
		return nil
	}
	pw := &prewarm{
		ch: ch, first: first, last: last,
		out:  make(chan *warmed, prewarmAhead),
		free: make(chan *warmed, prewarmAhead+2),
	}
	pw.done.Add(1)
	go pw.run()
	return pw
}

// longWalk returns the first and last junction that the walk of cu up to
// row to checks (but its own), and whether they are at least
// prewarmMinJunctions: only such a walk runs warm-ups beside its rows
// (stepLock) or ahead. A walk that ends early (its caller wants no more
// rows) wastes at most the warm-ups under way, little beside a long walk;
// short walks (a chunk's rows, a draw's) warm up at the junctions they
// reach, as the plain check does.
func (ch *rowChain) longWalk(cu *cursor, to int64) (first, last int64, long bool) {
	pl := ch.plan
	if referenceOnly || ch.plainJunctions || !pl.enabled() || cu.hitStationary {
		return 0, 0, false
	}
	last = min(to+1, pl.final)
	if last < pl.from || last <= cu.cur.i {
		return 0, 0, false
	}
	last = pl.junctionBelow(last)
	first = pl.from // the first junction above the cursor's row
	if c := cu.cur.i; c >= pl.from {
		first = pl.junctionBelow(c) + pl.block
	}
	if own := cu.own(); own == first {
		first += pl.block // a fresh start is its own junction's chain
	}
	return first, last, last >= first && (last-first)/pl.block+1 >= prewarmMinJunctions
}

// run computes the heads in ascending order of junction, skipping those
// the chain keeps a verified row or warm-up row for, until the last or
// stop; it closes out when done.
func (pw *prewarm) run() {
	defer pw.done.Done()
	defer close(pw.out)
	ch := pw.ch
	for a := pw.first; a <= pw.last; a += ch.plan.block {
		if pw.stopped.Load() {
			return
		}
		if ch.blockStart(a) != nil || ch.keptWarm(a) != nil {
			continue
		}
		var w *warmed
		select {
		case w = <-pw.free:
		default:
			w = &warmed{}
		}
		w.a = a
		if !pw.head(w) {
			return
		}
		pw.out <- w // waits while prewarmAhead wait for the walk
	}
}

// head steps w's warm-up from the guess row prewarmHead rows, as warmRow
// does, and reports false when the prewarm was stopped on the way.
func (pw *prewarm) head(w *warmed) bool {
	ch := pw.ch
	b := &w.buf
	cur, nxt := b.start(ch, w.a, nil), b.b
	end := min(cur.i+prewarmHead(ch.plan.warm), w.a-1)
	for cur.i < end {
		if cur.i%64 == 0 && pw.stopped.Load() {
			return false
		}
		ch.stepRow(cur, nxt, &b.sc)
		cur, nxt = nxt, cur
	}
	b.a, b.b = cur, nxt
	return true
}

// take returns the head of junction a's warm-up, waiting for it, or nil
// when the prewarm does not compute it (pw nil, a not in its range, or
// skipped because the chain kept a row for it). The row stays valid until
// the next take; the caller copies it (warmBuffers.start).
func (pw *prewarm) take(a int64) *rowState {
	if pw == nil || a < pw.first || a > pw.last || (a-pw.first)%pw.ch.plan.block != 0 {
		return nil
	}
	for {
		w := pw.held
		pw.held = nil
		if w == nil {
			var ok bool
			if w, ok = <-pw.out; !ok {
				return nil
			}
		}
		switch {
		case w.a == a:
			if pw.inUse != nil {
				pw.recycle(pw.inUse)
			}
			pw.inUse = w
			return w.buf.a
		case w.a > a:
			pw.held = w
			return nil
		}
		pw.recycle(w)
	}
}

// recycle hands w's buffers back to run (or drops them when run has
// enough).
func (pw *prewarm) recycle(w *warmed) {
	select {
	case pw.free <- w:
	default:
	}
}

// stop stops the goroutine and waits for it, so that no row is stepped for
// the walk once it has returned.
func (pw *prewarm) stop() {
	pw.stopped.Store(true)
	for range pw.out { // unblock a send
	}
	pw.done.Wait()
}
