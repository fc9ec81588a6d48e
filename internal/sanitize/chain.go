package sanitize

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// The row chain: how a Table computes, keeps and verifies its rows.
//
// A rowChain owns everything that decides which rows a request computes
// and whether it may use them: the rows it keeps (checkpoints of the chains
// that run on, verified junction rows, rows inside blocks, the last rows of
// warm-ups, the stationary cycle), the cursor that steps rows, the junction
// checks (restart.go lays the junctions out), and one cost model. Its only
// output is a verified row: walk (and rows, built on it) hands a row to its
// caller only once both pairs next to it are known to be (eps, delta)-DP
// (a step of one chain, or a junction that coalesced or passed the exact
// audit). Every reader of rows (Row, Rows, UnitRows, PieceRows, Draw,
// DrawAll, Drawer, the stationarity detection and the break points) goes
// through walk; nothing else steps a cursor.
//
// # The cost model
//
// Where a walk starts is decided by one cost model, the rows it computes
// (cost, startFor); docs/algorithms.md, "One row chain, one cost model",
// states it.

// Checkpoint spacing (rowChain.record).
const (
	initialSpacing = 256 // rows between checkpoints, doubled as needed
	maxCheckpoints = 512 // then the spacing doubles and half are dropped
)

// maxBlockStarts bounds the verified junction rows a chain keeps.
const maxBlockStarts = 1024

// innerSpacing is the spacing of the rows inside blocks that a chain keeps
// (keepInner): a row inside a block is then reached from a kept row at most
// that far below it, once any request walked past.
const innerSpacing = 32

// keptBreakPoints bounds the rows a chain keeps inside blocks (keepInner)
// and at the ends of warm-ups (keepWarm): each map holds at most about this
// many break points in all (16 bytes each with its mass, so 4 MiB), and at
// least 16 rows.
const keptBreakPoints = 1 << 18

// rowChain is the rows of one (privacy, sampling, method) and what is kept
// of them (see the comment at the top of this file). A Table embeds it.
type rowChain struct {
	p      Privacy
	s      Sampling
	m      Method
	c      consts
	qConst int64 // q_j is the same for all j >= qConst (never if not)

	plan restartPlan // which chain computes each row (restart.go)
	// Tests only. plainJunctions: every junction check warms its chain up
	// on its own (warmRow), as under pwsd_reference: no warm-up beside the
	// cursor (stepLock), none ahead (prewarm.go). noPrewarm: none ahead.
	plainJunctions, noPrewarm bool

	// The kept rows. Every one is a copy that is never modified once kept.
	mu      sync.Mutex
	spacing int64                 // checkpoints are the rows i with i % spacing == 0
	cps     []*rowState           // checkpoints, ascending; cps[0] is row 0
	starts  keptRows              // verified rows at junctions, by junction
	inner   keptRows              // rows inside blocks, every innerSpacing, by row
	mids    keptRows              // by row: blocks' middle rows a warm-up keeps (midRow, persist.go)
	warms   keptRows              // by junction a: row a-1 of chain a, its warm-up's last row
	anchors []*anchored           // anchored rows, ascending (Table.Anchor, anchor.go); never stored
	stat    atomic.Pointer[cycle] // stationary rows, nil until detected

	coalesced, audited, failed atomic.Int64 // junctions verified (Table.Junctions)
	stepped                    atomic.Int64 // rows computed by stepRow (Table.RowsStepped, persist.go)
}

// newRowChain returns the chain of validated parameters (s already copied)
// whose rows are laid out by plan, holding row 0 only.
func newRowChain(p Privacy, s Sampling, m Method, plan func(Privacy, int64) restartPlan) rowChain {
	qc, _ := qConstFrom(s)
	pl := plan(p, qc)
	return rowChain{
		p: p, s: s, m: m,
		c:       newConsts(pl.rowPrivacy(p)),
		qConst:  qc,
		plan:    pl,
		spacing: initialSpacing,
		cps:     []*rowState{rowZero()},
	}
}

// cycle holds the stationary rows s, s+1, ..., s+p-1.
type cycle struct{ rows []*rowState }

func (c *cycle) from() int64 { return c.rows[0].i }

// at returns the row state and shift for frequency n >= from().
func (c *cycle) at(n int64) (*rowState, int64) {
	r := c.rows[(n-c.from())%int64(len(c.rows))]
	return r, n - r.i
}

// stationary returns the detected stationary cycle, or nil.
func (ch *rowChain) stationary() *cycle { return ch.stat.Load() }

// setStationary keeps copies of rows as the stationary cycle unless one
// starting no later is known.
func (ch *rowChain) setStationary(rows []*rowState) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if old := ch.stat.Load(); old == nil || rows[0].i < old.from() {
		c := &cycle{}
		for _, r := range rows {
			c.rows = append(c.rows, r.clone())
		}
		ch.stat.Store(c)
	}
}

// rows calls fn with the verified rows (and shifts) of frequencies
// from..to in ascending order until fn returns false, from the cheapest
// start (cursorFor), or from the stationary cycle alone when it covers
// from. See walk.
func (ch *rowChain) rows(ctx context.Context, from, to int64, fn func(r *rowState, d int64) bool) error {
	if st := ch.stationary(); st != nil && from >= st.from() {
		return ch.walk(ctx, nil, from, to, fn)
	}
	return ch.walk(ctx, ch.cursorFor(from), from, to, fn)
}

// walk is the protocol every reader of rows follows. It steps cu (at or
// below from) up to row to and calls fn with the rows from..to in
// ascending order until fn returns false, each only after both pairs next
// to it are verified (cursor.finish): fn never sees a row next to a
// junction that failed, and can stop anywhere. Once cu has detected the
// stationary cycle (cu nil: it is known and covers from), the rows come
// from the cycle, shifted by d; else d is 0. r is only valid during the
// call (a row of the cycle stays valid). walk returns the cursor's error
// (a JunctionError) or ctx's, which it checks every 64 rows stepped; cu
// may be stepped on afterwards, by a later walk above to.
func (ch *rowChain) walk(ctx context.Context, cu *cursor, from, to int64, fn func(r *rowState, d int64) bool) error {
	j := from
	if cu != nil {
		cu.to = to
		_, _, cu.long = ch.longWalk(cu, to)
		if pw := ch.startPrewarm(cu, to); pw != nil {
			cu.pre = pw
			defer func() { pw.stop(); cu.pre = nil }()
		}
		cu.startLock()
		for n := 0; !cu.hitStationary; n++ {
			if n%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if cu.cur.i >= from {
				if err := cu.finish(); err != nil {
					return err
				}
				if !fn(cu.cur, 0) || cu.cur.i >= to {
					return nil
				}
			} else if cu.err != nil {
				return cu.err
			}
			cu.step()
		}
		// The rows below cu.cur.i (the first row past the detected
		// cycle) were handed out.
		j = max(from, cu.cur.i)
	}
	st := ch.stationary()
	for ; j <= to; j++ {
		if !fn(st.at(j)) {
			return nil
		}
	}
	return nil
}

// checkpointBelow returns the latest checkpoint at or below i.
func (ch *rowChain) checkpointBelow(i int64) *rowState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	k := sort.Search(len(ch.cps), func(k int) bool { return ch.cps[k].i > i })
	return ch.cps[k-1]
}

// currentSpacing returns the spacing of the checkpoints.
func (ch *rowChain) currentSpacing() int64 {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.spacing
}

// record stores r as a checkpoint if it is one the chain lacks. Only rows
// of the chains that run on (the one from row 0 below the first junction,
// the final one from the last junction) are checkpoints; the restarted
// blocks keep their verified first rows instead (keepBlockStart).
func (ch *rowChain) record(r *rowState) {
	if pl := ch.plan; pl.enabled() && r.i >= pl.from && r.i < pl.final {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if r.i%ch.spacing != 0 {
		return
	}
	// In place, not only above the last one: walks of the chain from row 0
	// and of the final chain run side by side (Prepare's clusters).
	k := sort.Search(len(ch.cps), func(k int) bool { return ch.cps[k].i >= r.i })
	if k < len(ch.cps) && ch.cps[k].i == r.i {
		return
	}
	ch.cps = slices.Insert(ch.cps, k, r.clone())
	if len(ch.cps) > maxCheckpoints {
		ch.spacing *= 2
		kept := ch.cps[:0]
		for _, c := range ch.cps {
			if c.i%ch.spacing == 0 {
				kept = append(kept, c)
			}
		}
		clear(ch.cps[len(kept):])
		ch.cps = kept
	}
}

// keptRows is a bounded map of rows kept by a chain, keyed by an index the
// caller chooses; the caller holds the chain's mutex.
type keptRows map[int64]*rowState

// keep stores a copy of r under k unless k is there, first dropping
// arbitrary rows until fewer than limit remain; it returns the map (made
// when nil).
func (m keptRows) keep(k int64, r *rowState, limit int) keptRows {
	if m == nil {
		m = make(keptRows)
	}
	if _, ok := m[k]; ok {
		return m
	}
	for d := range m {
		if len(m) < limit {
			break
		}
		delete(m, d)
	}
	m[k] = r.clone()
	return m
}

// keptRowsOf returns how many rows like r a map of kept inner or warm-up
// rows holds.
func keptRowsOf(r *rowState) int { return max(16, keptBreakPoints/(len(r.x)+1)) }

// blockStart returns the verified first row of the chain at junction a, or
// nil.
func (ch *rowChain) blockStart(a int64) *rowState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.starts[a]
}

// keepBlockStart remembers the verified row at junction a.
func (ch *rowChain) keepBlockStart(r *rowState) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.starts = ch.starts.keep(r.i, r, maxBlockStarts)
}

// innerRow returns the kept row inside the block of junction a nearest at
// or below i (a usable start for rows inside that block only: junction a
// may be unchecked), or nil: one of inner, or the block's middle row.
func (ch *rowChain) innerRow(a, i int64) *rowState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	mid := ch.mids[ch.plan.midRow(a)]
	if mid != nil && mid.i > i {
		mid = nil
	}
	for r := a + 1 + (i-a-1)/innerSpacing*innerSpacing; r > a && ch.inner != nil; r -= innerSpacing {
		if mid != nil && r <= mid.i {
			break
		}
		if s := ch.inner[r]; s != nil {
			return s
		}
	}
	return mid
}

// keepInner remembers r, a row inside its block (restartPlan.inside) at a
// multiple of innerSpacing above the block's second row, so that later
// rows inside the block start from it rather than from the warm-up.
func (ch *rowChain) keepInner(r *rowState) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.inner = ch.inner.keep(r.i, r, keptRowsOf(r))
}

// keptWarm returns row a-1 of the chain of junction a (the last row of its
// warm-up, not a row of the table), kept by a cursor that warmed up that
// chain, or nil.
func (ch *rowChain) keptWarm(a int64) *rowState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.warms[a]
}

// keepWarm remembers r, row a-1 of the chain of junction a, so that
// checking junction a later does not warm that chain up again.
func (ch *rowChain) keepWarm(a int64, r *rowState) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.warms = ch.warms.keep(a, r, keptRowsOf(r))
}

// guessRow returns the crude start of a restarted chain at frequency s:
// all of q_s on the token (s-1, s].
func (ch *rowChain) guessRow(dst *rowState, s int64) *rowState {
	q := ch.s.Q(s)
	dst.i, dst.pi, dst.total = s, q, ddFrom(q)
	dst.x = append(dst.x[:0], float64(s-1), float64(s))
	dst.m = append(dst.m[:0], q)
	dst.stable, dst.frozen, dst.bOff, dst.radj = 0, false, 0, 0
	dst.adj = dst.adj[:0]
	return dst
}

// stepRow computes row prev.i+1 from prev into dst.
func (ch *rowChain) stepRow(prev, dst *rowState, sc *scratch5) {
	ch.stepped.Add(1)
	q := ch.s.Q(prev.i + 1)
	if ch.m == MethodDiscrete {
		ch.c.step4(prev, q, dst, ch.qConst)
	} else {
		ch.c.step5(prev, q, dst, sc, ch.qConst)
	}
}

// warmRow returns row a-1 of the chain that starts warm rows below
// junction a, computed in the buffers of w from the guess row, or from
// head, a row of that chain below a (computed ahead: prewarm.go) when not
// nil.
func (ch *rowChain) warmRow(a int64, w *warmBuffers, head *rowState) *rowState {
	cur, nxt := w.start(ch, a, head), w.b
	for cur.i < a-1 {
		ch.stepRow(cur, nxt, &w.sc)
		cur, nxt = nxt, cur
	}
	w.a, w.b = cur, nxt
	return cur
}

// warmBuffers are the buffers of a warm-up chain.
type warmBuffers struct {
	a, b *rowState
	sc   scratch5
}

// start sets w.a to the first row of junction a's warm-up, the guess row,
// or to a copy of head, a later row of it, when not nil; it returns w.a.
func (w *warmBuffers) start(ch *rowChain, a int64, head *rowState) *rowState {
	if w.a == nil {
		w.a, w.b = &rowState{}, &rowState{}
	}
	if head != nil {
		w.a.copyFrom(head)
		return w.a
	}
	return ch.guessRow(w.a, a-ch.plan.warm)
}

// rowsEqual reports whether a and b are the same row in every field the
// next step reads, bit for bit: shiftEqual at shift 0, plus the exact sum.
func rowsEqual(a, b *rowState) bool {
	return a.i == b.i && a.total == b.total && shiftEqual(a, b)
}

// cost is the cost model: the rows a cursor at row c computes to reach row
// i >= c, own being the junction of the chain a fresh start runs (0 for a
// row of the table): the i - c rows stepped, plus the warm-up of each
// junction in (c, i] the walk must check (not kept yet, not own); never
// for a walk that would check two (the fresh start one block below row i
// checks one and steps fewer rows).
func (ch *rowChain) cost(c, own, i int64) int64 {
	n := i - c
	pl := ch.plan
	if !pl.enabled() || i < pl.from {
		return n
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	checks := 0
	for a := pl.junctionBelow(i); a > c && a >= pl.from; a -= pl.block {
		if a == own || ch.starts[a] != nil {
			continue
		}
		if checks++; checks == 2 {
			return never
		}
		n += pl.warm
	}
	return n
}

// cursorFor returns a cursor from which walk reaches row i along the rows
// that define it, verifying every junction it passes, from the cheapest
// start under the cost model.
func (ch *rowChain) cursorFor(i int64) *cursor { return ch.startFor(i, nil, nil) }

// startFor is cursorFor that also weighs cu, a cursor the caller walks
// with (nil if none): cu unless a start of eachStart computes fewer rows
// (ties go to cu, then to the earlier start). Only the start chosen is
// opened, in the row buffers of cu when it replaces cu, else of spare (a
// cursor the caller has done with, or nil): the caller uses neither
// afterwards. A draw after a restore opens a start for most of its
// frequencies, and a fresh cursor's buffers cost more than its few steps.
func (ch *rowChain) startFor(i int64, cu, spare *cursor) *cursor {
	usable := cu != nil && !cu.hitStationary && cu.err == nil && cu.cur.i <= i
	bestCost := int64(never)
	if usable {
		bestCost = ch.cost(cu.cur.i, cu.own(), i)
	}
	var bestOpen func(buf *cursor) *cursor
	ch.eachStart(i, true, func(c, own int64, open func(buf *cursor) *cursor) {
		if n := ch.cost(c, own, i); (!usable && bestOpen == nil) || n < bestCost {
			bestOpen, bestCost = open, n
		}
	})
	switch {
	case bestOpen == nil && usable:
		return cu
	case bestOpen == nil:
		return nil
	case cu != nil:
		return bestOpen(cu)
	default:
		return bestOpen(spare)
	}
}

// buffers returns the row buffers of buf, a cursor its caller has done
// with, for a new cursor (new ones when buf is nil).
func buffers(buf *cursor) (cur, nxt *rowState, sc scratch5) {
	if buf == nil {
		return &rowState{}, &rowState{}, scratch5{}
	}
	return buf.cur, buf.nxt, scratch5{newPts: buf.sc.newPts[:0]}
}

// startCost returns the rows the cheapest start of row i computes under
// the cost model (startFor without a cursor), 0 once the stationary cycle
// covers i.
func (ch *rowChain) startCost(i int64) int64 { return ch.startCostOver(i, true) }

// skeletonCost is startCost without the anchored rows: what an anchored
// row at i saves a walk to i (Anchor ranks rows by it).
func (ch *rowChain) skeletonCost(i int64) int64 { return ch.startCostOver(i, false) }

// startCostOver is startCost, over the anchored rows too when anchors.
func (ch *rowChain) startCostOver(i int64, anchors bool) int64 {
	if st := ch.stationary(); st != nil && i >= st.from() {
		return 0
	}
	best := int64(never)
	ch.eachStart(i, anchors, func(c, own int64, _ func(*cursor) *cursor) { best = min(best, ch.cost(c, own, i)) })
	return best
}

// eachStart calls consider with each start of row i: the row c it starts
// from, the junction own of the chain a fresh start runs (0 for a row of
// the table) and how to open a cursor there, in the order ties go: the
// checkpoint below i, an anchored row above it (rows of the chain from row
// 0), the verified row of i's junction, a kept row inside i's block, an
// anchored row inside i's block, a fresh start of i's own chain (i inside
// its block), a fresh start one block below; without the anchored rows
// unless anchors.
func (ch *rowChain) eachStart(i int64, anchors bool, consider func(c, own int64, open func(buf *cursor) *cursor)) {
	cp := ch.checkpointBelow(i)
	consider(cp.i, 0, func(buf *cursor) *cursor { return ch.cursorAtIn(cp, buf) })
	pl := ch.plan
	if !pl.enabled() || i < pl.from {
		if s := ch.anchorIn(cp.i, i); anchors && s != nil {
			consider(s.i, 0, func(buf *cursor) *cursor { return ch.cursorAtIn(s, buf) })
		}
		return
	}
	a := pl.junctionBelow(i)
	if s := ch.blockStart(a); s != nil {
		consider(a, 0, func(buf *cursor) *cursor { return ch.cursorAtIn(s, buf) })
	}
	if pl.inside(i, a) {
		g := a - pl.warm
		if s := ch.innerRow(a, i); s != nil {
			consider(s.i, a, func(buf *cursor) *cursor { return ch.insideCursorIn(s, a, buf) })
		}
		if s := ch.anchorIn(a, i); anchors && s != nil {
			consider(s.i, a, func(buf *cursor) *cursor { return ch.insideCursorIn(s, a, buf) })
		}
		consider(g, a, func(buf *cursor) *cursor {
			cur, nxt, sc := buffers(buf)
			return &cursor{ch: ch, cur: ch.guessRow(cur, g), nxt: nxt, sc: sc, detect: true, warmFrom: g, insideFrom: a + 1}
		})
	} else if a > pl.from {
		g := a - pl.block - pl.warm
		consider(g, a-pl.block, func(buf *cursor) *cursor {
			cur, nxt, sc := buffers(buf)
			return &cursor{ch: ch, cur: ch.guessRow(cur, g), nxt: nxt, sc: sc, detect: true, warmFrom: g}
		})
	}
}

// cursorAt returns a cursor at start, a verified row of the table.
func (ch *rowChain) cursorAt(start *rowState) *cursor { return ch.cursorAtIn(start, nil) }

// cursorAtIn is cursorAt in the row buffers of buf (buffers).
func (ch *rowChain) cursorAtIn(start *rowState, buf *cursor) *cursor {
	cur, nxt, sc := buffers(buf)
	cur.copyFrom(start)
	return &cursor{ch: ch, cur: cur, nxt: nxt, sc: sc, detect: true, trusted: true}
}

// insideCursor returns a cursor at cur, the guess row of the chain of
// junction a or a kept row inside that block, whose rows from the block's
// second on may be used.
func (ch *rowChain) insideCursor(cur *rowState, a int64) *cursor {
	return &cursor{ch: ch, cur: cur, nxt: &rowState{}, detect: true, warmFrom: a - ch.plan.warm, insideFrom: a + 1}
}

// insideCursorIn is insideCursor at a copy of start, a kept row inside the
// block of junction a, in the row buffers of buf (buffers).
func (ch *rowChain) insideCursorIn(start *rowState, a int64, buf *cursor) *cursor {
	cur, nxt, sc := buffers(buf)
	cur.copyFrom(start)
	cu := ch.insideCursor(cur, a)
	cu.nxt, cu.sc = nxt, sc
	return cu
}

// cursor computes rows one after the other with two reused buffers,
// switching chains at junctions. Only walk steps it (and finish's probe).
type cursor struct {
	ch            *rowChain
	cur, nxt      *rowState
	sc            scratch5
	detect        bool // look for stationarity (off only for explicit rows)
	hitStationary bool // cur is the first row past the detected cycle
	// ring holds the last rows with index >= qConst, ring[i % maxPeriod];
	// ringN counts the consecutive rows it holds (ending at cur).
	ring  []*rowState
	ringN int
	// trusted: cur is a row of the table whose junction below (if any) was
	// verified. A fresh start (warmFrom: the guess row's frequency) is not
	// trusted until it has passed a junction.
	trusted  bool
	warmFrom int64
	// insideFrom > 0: the cursor is a fresh start of one block's chain
	// whose rows from insideFrom (the block's second row) on are usable
	// untrusted: both pairs next to them are steps of that chain.
	insideFrom int64
	warm       warmBuffers
	err        error // a JunctionError met on the way; sticky
	// The warm-up of the next junction run beside the cursor's rows
	// (stepLock): lock is that junction (0: none), its row is warm.a;
	// lockMet: it equalled the cursor's row bit for bit at some row, so it
	// equals it up to row lock-1. probe: a cursor of finish, which starts
	// none.
	lock    int64
	lockMet bool
	probe   bool
	// to is the highest row the walk that steps the cursor hands out: no
	// warm-up runs beside it for a junction above to+1, and it keeps rows
	// inside blocks only near to (keepsInnerNear).
	to   int64
	long bool     // the walk checks many junctions (longWalk): warm-ups run beside it
	pre  *prewarm // the warm-ups computed ahead of the walk (prewarm.go), or nil
	// inOrder: every row the walk needs is stepped on its goroutine when
	// needed (no warm-ups ahead), for a caller that budgets the rows
	// stepped as it goes (Table.WarmUp).
	inOrder bool
}

// own returns the junction of the chain an untrusted fresh start runs (it
// needs no check), or 0.
func (cu *cursor) own() int64 {
	if cu.trusted {
		return 0
	}
	return cu.warmFrom + cu.ch.plan.warm
}

// step advances the cursor by one row.
func (cu *cursor) step() {
	ch := cu.ch
	if a := cu.cur.i + 1; ch.plan.isJunction(a) {
		cu.junction(a)
	} else {
		ch.stepRow(cu.cur, cu.nxt, &cu.sc)
	}
	cu.cur, cu.nxt = cu.nxt, cu.cur
	j := cu.cur.i
	if cu.err == nil && ch.plan.keepsInner(j) && cu.usable() && cu.keepsInnerNear(j) {
		ch.keepInner(cu.cur)
	}
	if cu.insideFrom > 0 && j == cu.insideFrom-2 && !cu.trusted && cu.warmFrom == j+1-ch.plan.warm {
		ch.keepWarm(j+1, cu.cur) // the warm-up's last row: junction j+1's check reads it
	}
	if cu.err == nil {
		cu.stepLock()
	}
	if !cu.trusted || cu.err != nil {
		return
	}
	if cu.detect && !cu.hitStationary && j >= ch.qConst {
		cu.detectCycle()
	}
	if j%initialSpacing == 0 {
		ch.record(cu.cur)
	}
}

// keepsInnerNear reports whether the cursor keeps row j, a row inside its
// block that keepInner keeps: on a walk of many blocks only the rows within
// innerHorizon kept rows of the walk's last row to. The map of kept inner
// rows holds about limit = keptRowsOf rows and drops an arbitrary one for
// each new one, so a row kept k rows before the walk's end survives it with
// probability about e^(-k/limit): of the rows below the horizon it would
// keep about e^-innerHorizon (14%) of limit (and none, usually, of the
// many it copied). A walk that stops well below to keeps none near where
// it stopped. Table.WarmUp's walk (inOrder) keeps every one, as its rows
// are stored.
func (cu *cursor) keepsInnerNear(j int64) bool {
	return cu.inOrder || cu.to-j < innerHorizon*innerSpacing*int64(keptRowsOf(cu.cur))
}

// innerHorizon is how many times the bound of kept inner rows a walk keeps
// below its last row (keepsInnerNear).
const innerHorizon = 2

// detectCycle compares the new row j with rows j-p, p = 1..maxPeriod, and
// records the first exact match as the stationary cycle j-p .. j-1. Only
// rows j-p >= qConst are compared: every step from row j-p on then uses the
// same constant q and the same freezing rule, so the map from one row to
// the next is the same shift-equivariant function and the match repeats.
func (cu *cursor) detectCycle() {
	ch, r := cu.ch, cu.cur
	j := r.i
	if cu.ring == nil {
		cu.ring = make([]*rowState, maxPeriod)
		for k := range cu.ring {
			cu.ring[k] = &rowState{}
		}
	}
	for p := 1; p <= cu.ringN && p <= maxPeriod; p++ {
		a := cu.ring[(j-int64(p))%maxPeriod]
		if j-int64(p) < ch.qConst || a.i != j-int64(p) {
			break
		}
		if shiftEqual(a, r) {
			rows := make([]*rowState, p)
			for k := range p {
				rows[k] = cu.ring[(j-int64(p)+int64(k))%maxPeriod]
			}
			ch.setStationary(rows)
			cu.hitStationary = true
			return
		}
	}
	cu.ring[j%maxPeriod].copyFrom(r)
	cu.ringN++
}

// junction is called by step to compute row a, a junction, into cu.nxt
// from cu.cur (row a-1): it makes cu.nxt the row of the new chain and
// verifies the pair (row a-1, row a).
func (cu *cursor) junction(a int64) {
	ch := cu.ch
	if !cu.trusted && cu.warmFrom == a-ch.plan.warm {
		ch.stepRow(cu.cur, cu.nxt, &cu.sc) // the cursor is the new chain itself (a fresh start)
		return
	}
	if s := ch.blockStart(a); s != nil {
		cu.nxt.copyFrom(s)
		// Its break points, the new ones among them (breakPoints).
		cu.sc.newPts = append(cu.sc.newPts[:0], s.x...)
		cu.trusted = true
		return
	}
	w, met := ch.keptWarm(a), false
	if w == nil || w.i != a-1 {
		if cu.lock == a && (cu.lockMet || cu.warm.a.i == a-1) {
			w, met = cu.warm.a, cu.lockMet // the warm-up run beside the cursor
		} else {
			cu.lock = 0
			w = ch.warmRow(a, &cu.warm, cu.pre.take(a))
		}
	}
	if met || rowsEqual(w, cu.cur) {
		ch.stepRow(cu.cur, cu.nxt, &cu.sc)
		ch.coalesced.Add(1)
	} else {
		ch.stepRow(w, cu.nxt, &cu.sc)
		// Row a's pieces come from the new chain: all its break points are
		// new to the table (breakPoints).
		cu.sc.newPts = append(cu.sc.newPts, cu.nxt.x...)
		up, down := AuditRows(cu.cur.row(0, nil), cu.nxt.row(0, nil), ch.p)
		if lim := ch.p.Delta; up > lim || down > lim {
			ch.failed.Add(1)
			if cu.err == nil {
				cu.err = &JunctionError{At: a, Up: up, Down: down}
			}
			return
		}
		ch.audited.Add(1)
	}
	cu.trusted = true
	ch.keepBlockStart(cu.nxt)
}

// stepLock is called by step once the cursor's row j is computed: it
// steps the warm-up run beside the cursor (see startLock) to row j, and
// compares the two rows bit for bit, until they are equal once. From a
// row where they are equal they stay equal (each next row is the same
// step of the same row), so the warm-up's row a-1, the one junction a's
// check compares with the cursor's, is the cursor's: the junction
// coalesces, and the warm-up stops there. A warm-up that never meets the
// cursor's rows reaches row a-1 as warmRow would, and the check reads it.
func (cu *cursor) stepLock() {
	if cu.lock != 0 && cu.cur.i < cu.lock {
		cu.compareLock()
		return
	}
	cu.lock = 0
	cu.startLock()
}

// startLock starts, at row j = a - warm of the cursor, the warm-up of the
// junction a above it beside the cursor's rows (stepLock), when the walk
// is long (longWalk), will check junction a and nothing kept spares the
// check its warm-up.
// Blocks are no shorter than warm-ups, so no junction lies between.
func (cu *cursor) startLock() {
	ch, j := cu.ch, cu.cur.i
	pl := ch.plan
	a := j + pl.warm
	if !cu.long || cu.probe || cu.lock != 0 || cu.err != nil || cu.hitStationary || !pl.isJunction(a) || pl.warm > pl.block ||
		a-1 > cu.to || (!cu.trusted && cu.warmFrom == j) || ch.blockStart(a) != nil || ch.keptWarm(a) != nil {
		return
	}
	cu.warm.start(ch, a, cu.pre.take(a))
	cu.lock, cu.lockMet = a, false
	cu.compareLock()
}

// compareLock steps the warm-up beside the cursor to the cursor's row j
// (unless it is there, or above: a head computed ahead) and compares the
// two rows when both are row j.
func (cu *cursor) compareLock() {
	w, j := &cu.warm, cu.cur.i
	if cu.lockMet {
		return
	}
	if w.a.i == j-1 {
		cu.ch.stepRow(w.a, w.b, &w.sc)
		w.a, w.b = w.b, w.a
	}
	if w.a.i == j {
		cu.lockMet = rowsEqual(w.a, cu.cur)
	}
}

// finish verifies the junction above the cursor's row, if there is one, so
// that both pairs next to the row are checked before it is used; the
// cursor's row is unchanged. It returns the cursor's error.
func (cu *cursor) finish() error {
	ch := cu.ch
	a := cu.cur.i + 1
	if cu.err == nil && ch.plan.isJunction(a) && ch.blockStart(a) == nil {
		probe := &cursor{ch: ch, cur: cu.cur.clone(), nxt: &rowState{}, trusted: cu.trusted, probe: true, pre: cu.pre}
		if cu.lock == a {
			probe.lock, probe.lockMet, probe.warm = a, cu.lockMet, cu.warm
		}
		probe.step()
		cu.err = probe.err
	}
	if cu.err == nil && !cu.usable() {
		return errors.New("sanitize: internal error: a restarted row was used before its junction was verified")
	}
	return cu.err
}

// usable reports whether the cursor's row may be used once the junction
// above it (if any) is verified: its junction below was verified, or it is
// a row inside its block reached along its own chain.
func (cu *cursor) usable() bool {
	return cu.trusted || (cu.insideFrom > 0 && cu.cur.i >= cu.insideFrom)
}

// keptSet is what a chain keeps, as (index, row) sets, for storing it
// (persist.go) and restoring it into a fresh chain of the same parameters
// and AlgorithmVersion. Its rows are shared with the chain and must not be
// modified.
type keptSet struct {
	spacing     int64               // checkpoints are the rows i with i % spacing == 0
	checkpoints []*rowState         // ascending; checkpoints[0] is row 0
	starts      map[int64]*rowState // by junction a: the verified row a
	inner       map[int64]*rowState // by row: rows inside blocks (restartPlan.keepsInner)
	mids        map[int64]*rowState // by row: blocks' middle rows (restartPlan.midRow)
	warms       map[int64]*rowState // by junction a: row a-1 of chain a (not a row of the table)
	cycle       []*rowState         // the stationary rows s, s+1, ...; nil until detected
}

// kept returns the rows the chain keeps.
func (ch *rowChain) kept() keptSet {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	k := keptSet{
		spacing:     ch.spacing,
		checkpoints: slices.Clone(ch.cps),
		starts:      maps.Clone(ch.starts),
		inner:       maps.Clone(ch.inner),
		mids:        maps.Clone(ch.mids),
		warms:       maps.Clone(ch.warms),
	}
	if st := ch.stat.Load(); st != nil {
		k.cycle = st.rows
	}
	return k
}

// restore installs k, kept by a chain of the same parameters (kept), into
// ch, which must keep nothing yet but row 0. It checks that every row sits
// where the plan keeps such a row, under its own index, and has the shape
// of a row; it cannot check that the rows are the chain's (the store that
// held them vouches for that).
func (ch *rowChain) restore(k keptSet) error {
	pl := ch.plan
	bad := func(what string, i int64) error {
		return fmt.Errorf("sanitize: restore kept rows: %s %d out of place", what, i)
	}
	if k.spacing < denseSpacing || k.spacing&(k.spacing-1) != 0 || len(k.checkpoints) == 0 || k.checkpoints[0].i != 0 {
		return errors.New("sanitize: restore kept rows: bad checkpoint spacing or no row 0")
	}
	for n, r := range k.checkpoints {
		if !rowShaped(r) || r.i%k.spacing != 0 || (n > 0 && r.i <= k.checkpoints[n-1].i) ||
			(pl.enabled() && r.i >= pl.from && r.i < pl.final) {
			return bad("checkpoint", r.i)
		}
	}
	for a, r := range k.starts {
		if !rowShaped(r) || r.i != a || !pl.isJunction(a) {
			return bad("junction row", a)
		}
	}
	for i, r := range k.inner {
		if !rowShaped(r) || r.i != i || !pl.keepsInner(i) {
			return bad("inner row", i)
		}
	}
	for i, r := range k.mids {
		if !rowShaped(r) || r.i != i || i <= pl.from || pl.midRow(pl.junctionBelow(i)) != i {
			return bad("middle row", i)
		}
	}
	for a, r := range k.warms {
		if !rowShaped(r) || r.i != a-1 || !pl.isJunction(a) {
			return bad("warm-up row", a)
		}
	}
	for n, r := range k.cycle {
		if !rowShaped(r) || r.i < ch.qConst || r.i != k.cycle[0].i+int64(n) || n >= maxPeriod {
			return bad("stationary row", r.i)
		}
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if len(ch.cps) != 1 || ch.starts != nil || ch.inner != nil || ch.mids != nil || ch.warms != nil || ch.stat.Load() != nil {
		return errors.New("sanitize: restore kept rows: the table already keeps rows")
	}
	ch.spacing = k.spacing
	ch.cps = slices.Clone(k.checkpoints)
	ch.starts, ch.inner, ch.mids, ch.warms = maps.Clone(k.starts), maps.Clone(k.inner), maps.Clone(k.mids), maps.Clone(k.warms)
	if len(k.cycle) > 0 {
		ch.stat.Store(&cycle{rows: slices.Clone(k.cycle)})
	}
	return nil
}

// rowShaped reports whether r has the shape of a row (rowState): break
// points ascending up to its frequency, one mass per piece, pi in [0, 1].
func rowShaped(r *rowState) bool {
	if r == nil || len(r.x) != len(r.m)+1 || r.x[len(r.m)] != float64(r.i) || !(r.pi >= 0 && r.pi <= 1) {
		return false
	}
	for k := 1; k < len(r.x); k++ {
		if !(r.x[k] > r.x[k-1]) {
			return false
		}
	}
	return true
}
