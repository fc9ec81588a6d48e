package sanitize

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Junction warm-ups ahead of a long walk, on a second goroutine.
//
// A walk across many blocks checks every junction on its way, and each
// check reads the last row of the new chain's warm-up (warmRow): about as
// many rows again as the walk steps. Those warm-ups depend on the
// parameters and the junction only, not on the walk's rows, so a second
// goroutine can compute them ahead of the walk while the walk steps its
// own rows (the machine has a second core). The walk takes them in
// ascending order of junction (prewarm.take) and checks each junction
// exactly as before: the warm-up row is warmRow's, bit for bit (the same
// guess row, the same steps), only computed elsewhere. No row of the table
// depends on which goroutine computed a warm-up, or on timing.
//
// A walk with a prewarm runs no warm-up beside its rows (stepLock), whose
// early stop needs the walk's rows; on one core, under pwsd_reference, for
// short walks and for Table.WarmUp (its budget of rows stepped must not
// depend on timing), warm-ups stay on the walk's goroutine.

// prewarmAhead is how many finished warm-ups may wait for the walk.
const prewarmAhead = 2

// prewarmMinJunctions is the fewest junctions a walk must cross for a
// prewarm to start (a goroutine is not worth fewer).
const prewarmMinJunctions = 4

// prewarm computes the warm-up rows of the junctions first, first+block,
// ..., last, in order, on its own goroutine (run).
type prewarm struct {
	ch          *rowChain
	first, last int64
	out         chan *warmed // finished warm-ups, ascending
	free        chan *warmed // buffers back from the walk
	stopped     atomic.Bool
	done        sync.WaitGroup
	held        *warmed // taken from out but for a later junction than asked
	inUse       *warmed // the last one take returned
}

// warmed is junction a's warm-up, its last row (row a-1 of chain a) in
// buf.a.
type warmed struct {
	a   int64
	buf warmBuffers
}

// startPrewarm returns a running prewarm for the walk of cu up to row to,
// or nil when the walk crosses too few junctions to check or a second
// goroutine would not help.
func (ch *rowChain) startPrewarm(cu *cursor, to int64) *prewarm {
	pl := ch.plan
	if referenceOnly || ch.plainJunctions || ch.noPrewarm || !pl.enabled() || runtime.GOMAXPROCS(0) < 2 || cu.inOrder || cu.hitStationary {
		return nil
	}
	last := min(to+1, pl.final)
	if last < pl.from || last <= cu.cur.i {
		return nil
	}
	last = pl.junctionBelow(last)
	first := pl.from // the first junction above the cursor's row
	if c := cu.cur.i; c >= pl.from {
		first = pl.junctionBelow(c) + pl.block
	}
	if own := cu.own(); own == first {
		first += pl.block // a fresh start is its own junction's chain
	}
	if last < first || (last-first)/pl.block+1 < prewarmMinJunctions {
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

// run computes the warm-ups in ascending order of junction, skipping those
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
		if !pw.warm(w) {
			return
		}
		pw.out <- w // waits while prewarmAhead wait for the walk
	}
}

// warm computes w's warm-up row as warmRow does, and reports false when
// the prewarm was stopped on the way.
func (pw *prewarm) warm(w *warmed) bool {
	ch := pw.ch
	b := &w.buf
	if b.a == nil {
		b.a, b.b = &rowState{}, &rowState{}
	}
	cur, nxt := ch.guessRow(b.a, w.a-ch.plan.warm), b.b
	for cur.i < w.a-1 {
		if cur.i%64 == 0 && pw.stopped.Load() {
			return false
		}
		ch.stepRow(cur, nxt, &b.sc)
		cur, nxt = nxt, cur
	}
	b.a, b.b = cur, nxt
	return true
}

// take returns junction a's warm-up row, waiting for it, or nil when the
// prewarm does not compute it (not in its range, or skipped because the
// chain kept a row for it). The row stays valid until the next take.
func (pw *prewarm) take(a int64) *rowState {
	if a < pw.first || a > pw.last || (a-pw.first)%pw.ch.plan.block != 0 {
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
