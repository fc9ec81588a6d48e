package sanitize

import (
	"errors"
	"math"
)

// Rows by verified restart (docs/algorithms.md, "Rows by verified restart").
//
// A Table's row i is not always the chain from row 0. Past restartFrom the
// frequencies are cut into blocks of restartBlock rows; the rows of the
// block that starts at junction a are the chain started from a crude guess
// (all of pi on the token just below) restartWarm rows below a. The block
// that holds the first frequency with constant q (and every row above it)
// is one chain, so the stationary rows past it are found as before. Which
// chain defines a row depends on the parameters and the row's index only,
// never on data.
//
// Inside a block every consecutive pair of rows is one step of the
// algorithm, (eps, delta)-DP by the same argument as the chain from row 0.
// At a junction a the pair (row a-1, row a) joins two chains. It is
// verified before any row next to it is handed out: when the new chain's
// warm-up row a-1 equals the old chain's row a-1 bit for bit (every field
// the step reads), row a is the step applied to row a-1 and the pair is a
// step like any other ("coalesced"); otherwise the pair is audited exactly
// (AuditRows, both directions) and accepted only within delta (1 + 1e-9),
// the tolerance every table's audit is held to. A pair that fails both is
// a JunctionError and the request fails before anything is released.

// restartSlack is the part of delta that tables with restarts hold back:
// their rows are computed with delta (1 - restartSlack), so every pair inside
// a chain is (eps, delta (1 - restartSlack))-DP and a junction whose two
// chains agree to within rounding (total variation well below
// restartSlack delta / e^eps) still passes the exact audit at delta.
const restartSlack = 1.0 / 1024

// rowPrivacy returns the privacy the rows of a table of (p, s) are computed
// with (see restartPlan.rowPrivacy).
func rowPrivacy(p Privacy, s Sampling) Privacy {
	if p.Validate() != nil || s.Validate() != nil {
		return p
	}
	qc, _ := qConstFrom(s)
	return newRestartPlan(p, qc).rowPrivacy(p)
}

// rowPrivacy returns p, with restartSlack of delta held back when the plan
// restarts (a property of the parameters only).
func (pl restartPlan) rowPrivacy(p Privacy) Privacy {
	if pl.enabled() {
		p.Delta *= 1 - restartSlack
	}
	return p
}

// restartPlan fixes, from public parameters only, which chain computes each
// row. The zero value (from = never) means every row comes from the chain
// started at row 0.
type restartPlan struct {
	from  int64 // first junction; rows below come from the chain from row 0
	warm  int64 // a block's chain starts warm rows below its junction
	block int64 // rows per block
	final int64 // the last junction: rows from here on are one chain
}

// Restart plan constants: a block's chain warms up for warmPerL L +
// warmExtra rows. Restarts reach the rounding floor (rows within a total
// variation of about 1e-17 of the chain) within a few L rows on the grid of
// TestRestartGrid; at 3 L + 128 the junctions that did not coalesce use at
// most 0.24% of the held-back delta there (0.21% at 4 L + 128; at 2 L + 128
// the Algorithm 5 rows at eps <= 0.1 stay 3e-9 in total variation from the
// chain, more than the test allows), and an audit failure is refused, never
// served. A cold row costs about the warm-up and half a block.
const (
	warmPerL       = 3
	warmExtra      = 128
	minRestartFrom = 1 << 16 // rows below are cheap enough along the chain
)

// newRestartPlan returns the plan for privacy p when q is constant from
// qConst on (never: q never becomes constant). Tables whose q settles
// within a few blocks of minRestartFrom need no restarts.
func newRestartPlan(p Privacy, qConst int64) restartPlan {
	l := L(p)
	if math.IsNaN(l) || l > 1e9 {
		return restartPlan{from: never}
	}
	warm := warmPerL*int64(math.Ceil(l)) + warmExtra
	return makeRestartPlan(max(minRestartFrom, 4*warm), warm, warm, qConst)
}

// makeRestartPlan lays out blocks of the given length from junction from
// on, warm rows of warm-up each, the final block being the one holding
// qConst.
func makeRestartPlan(from, warm, block, qConst int64) restartPlan {
	if from >= MaxFrequency || from < warm+1 || block < 1 || warm < 1 {
		return restartPlan{from: never}
	}
	final := int64(never)
	if qConst != never {
		if qConst < from+2*block {
			return restartPlan{from: never} // the chain reaches the stationary rows soon
		}
		final = from + (qConst-from)/block*block
	}
	return restartPlan{from: from, warm: warm, block: block, final: final}
}

// enabled reports whether any row is computed by restart.
func (pl restartPlan) enabled() bool { return pl.from != never }

// isJunction reports whether a is a junction: row a starts a new chain.
func (pl restartPlan) isJunction(a int64) bool {
	return pl.from != never && a >= pl.from && a <= pl.final && (a-pl.from)%pl.block == 0
}

// junctionBelow returns the junction at or below i (i >= from): the first
// row of the chain that computes row i.
func (pl restartPlan) junctionBelow(i int64) int64 {
	a := pl.from + (i-pl.from)/pl.block*pl.block
	return min(a, pl.final)
}

// JunctionError is returned (wrapped) when a junction of restarted rows can
// be neither verified as a step nor accepted by the exact audit. No row
// next to it is handed out.
type JunctionError struct {
	At       int64   // the junction: the pair is (At-1, At)
	Up, Down float64 // the audit's excess sums (to compare with delta)
}

// Error says what failed, never where: the junction lies near the
// frequencies of the request that met it, so its place stays out of
// messages and logs (At, Up and Down are there for tests).
func (e *JunctionError) Error() string {
	return "sanitize: restarted rows did not coalesce at a junction and fail the exact audit"
}

// ErrJunction matches every *JunctionError with errors.Is.
var ErrJunction = errors.New("sanitize: unverified junction")

// Is makes errors.Is(err, ErrJunction) true for a *JunctionError.
func (e *JunctionError) Is(target error) bool { return target == ErrJunction }

// JunctionStats counts the junctions a Table has verified.
type JunctionStats struct {
	Coalesced int64 // the restarted row equalled the previous chain's, bit for bit
	Audited   int64 // accepted by the exact audit
	Failed    int64 // neither (a JunctionError)
}

// Junctions returns how the table's junctions were verified so far.
func (t *Table) Junctions() JunctionStats {
	return JunctionStats{Coalesced: t.coalesced.Load(), Audited: t.audited.Load(), Failed: t.failed.Load()}
}

// RestartFrom returns the first frequency whose row may come from a
// restarted chain, and false when every row is the chain from row 0.
func (t *Table) RestartFrom() (int64, bool) { return t.plan.from, t.plan.enabled() }

// guessRow returns the crude start of a restarted chain at frequency s:
// all of q_s on the token (s-1, s].
func (t *Table) guessRow(dst *rowState, s int64) *rowState {
	q := t.s.Q(s)
	dst.i, dst.pi, dst.total = s, q, ddFrom(q)
	dst.x = append(dst.x[:0], float64(s-1), float64(s))
	dst.m = append(dst.m[:0], q)
	dst.stable, dst.frozen, dst.bOff, dst.radj = 0, false, 0, 0
	dst.adj = dst.adj[:0]
	return dst
}

// stepRow computes row prev.i+1 from prev into dst.
func (t *Table) stepRow(prev, dst *rowState, sc *scratch5) {
	q := t.s.Q(prev.i + 1)
	if t.m == MethodDiscrete {
		t.c.step4(prev, q, dst, t.qConst)
	} else {
		t.c.step5(prev, q, dst, sc, t.qConst)
	}
}

// warmRow returns row a-1 of the chain that starts warm rows below
// junction a, computed in the buffers of w.
func (t *Table) warmRow(a int64, w *warmBuffers) *rowState {
	if w.a == nil {
		w.a, w.b = &rowState{}, &rowState{}
	}
	cur, nxt := t.guessRow(w.a, a-t.plan.warm), w.b
	for cur.i < a-1 {
		t.stepRow(cur, nxt, &w.sc)
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

// rowsEqual reports whether a and b are the same row in every field the
// next step reads, bit for bit: shiftEqual at shift 0, plus the exact sum.
func rowsEqual(a, b *rowState) bool {
	return a.i == b.i && a.total == b.total && shiftEqual(a, b)
}

// maxBlockStarts bounds the verified junction rows a Table keeps.
const maxBlockStarts = 1024

// keptRows is a bounded map of rows kept by a Table, keyed by an index
// the caller chooses; the caller holds the Table's mutex.
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

// blockStart returns the verified first row of the chain at junction a, or
// nil.
func (t *Table) blockStart(a int64) *rowState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.starts[a]
}

// keepBlockStart remembers the verified row at junction a.
func (t *Table) keepBlockStart(r *rowState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.starts = t.starts.keep(r.i, r, maxBlockStarts)
}

// innerSpacing is the spacing of the rows inside blocks that a Table keeps
// (keepInner): a row inside a block is then reached from a kept row at most
// that far below it, once any request walked past.
const innerSpacing = 32

// keptBreakPoints bounds the rows a Table keeps inside blocks (keepInner)
// and at the ends of warm-ups (keepWarm): each map holds at most about this
// many break points in all (16 bytes each with its mass, so 4 MiB), and at
// least 16 rows.
const keptBreakPoints = 1 << 18

// keptRowsOf returns how many rows like r a map of kept inner or warm-up
// rows holds.
func keptRowsOf(r *rowState) int { return max(16, keptBreakPoints/(len(r.x)+1)) }

// innerRow returns the kept row inside the block of junction a nearest at
// or below i (a usable start for rows inside that block only: junction a
// may be unchecked), or nil.
func (t *Table) innerRow(a, i int64) *rowState {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner == nil {
		return nil
	}
	for r := a + 1 + (i-a-1)/innerSpacing*innerSpacing; r > a; r -= innerSpacing {
		if s := t.inner[r]; s != nil {
			return s
		}
	}
	return nil
}

// keepInner remembers r, a row inside its block (restartPlan.inside) at a
// multiple of innerSpacing above the block's second row, so that later
// rows inside the block start from it rather than from the warm-up.
func (t *Table) keepInner(r *rowState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inner = t.inner.keep(r.i, r, keptRowsOf(r))
}

// keptWarm returns row a-1 of the chain of junction a (the last row of its
// warm-up, not a row of the table), kept by a cursor that warmed up that
// chain, or nil.
func (t *Table) keptWarm(a int64) *rowState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.warms[a]
}

// keepWarm remembers r, row a-1 of the chain of junction a, so that
// checking junction a later does not warm that chain up again.
func (t *Table) keepWarm(a int64, r *rowState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.warms = t.warms.keep(a, r, keptRowsOf(r))
}

// keepsInner reports whether row i is one keepInner keeps.
func (pl restartPlan) keepsInner(i int64) bool {
	if !pl.enabled() || i <= pl.from {
		return false
	}
	a := pl.junctionBelow(i)
	return (i-a)%innerSpacing == 1 && pl.inside(i, a)
}

// junction is called by cursor.step when the row just computed into cu.nxt
// (from cu.cur, row a-1) is junction a: it makes cu.nxt the row of the new
// chain and verifies the pair (row a-1, row a).
func (cu *cursor) junction(a int64) {
	t := cu.t
	if !cu.trusted && cu.warmFrom == a-t.plan.warm {
		return // the cursor is the new chain itself (a fresh start)
	}
	if s := t.blockStart(a); s != nil {
		cu.nxt.copyFrom(s)
		cu.trusted = true
		return
	}
	w := t.keptWarm(a)
	if w == nil || w.i != a-1 {
		w = t.warmRow(a, &cu.warm)
	}
	if rowsEqual(w, cu.cur) {
		t.coalesced.Add(1)
	} else {
		t.stepRow(w, cu.nxt, &cu.sc)
		// Row a's pieces come from the new chain: all its break points are
		// new to the table (Table.breakPoints).
		cu.sc.newPts = append(cu.sc.newPts, cu.nxt.x...)
		up, down := AuditRows(cu.cur.row(0, nil), cu.nxt.row(0, nil), t.p)
		if lim := t.p.Delta; up > lim || down > lim {
			t.failed.Add(1)
			if cu.err == nil {
				cu.err = &JunctionError{At: a, Up: up, Down: down}
			}
			return
		}
		t.audited.Add(1)
	}
	cu.trusted = true
	t.keepBlockStart(cu.nxt)
}

// inside reports whether row i lies strictly inside the block of junction
// a = junctionBelow(i), in a block that ends: both pairs next to row i are
// then steps of the block's own chain, so using row i needs no junction
// check at all, and a fresh start of that chain (its warm-up alone) reaches
// it.
func (pl restartPlan) inside(i, a int64) bool {
	return a < i && a < pl.final && i+1 < a+pl.block
}

// startCost is the number of rows a fresh start for row i computes before
// it, or never when rows below the first junction must come from the
// chain: for a row inside its block (restartPlan.inside), the warm-up of
// the row's own chain; for the first or last row of a block, the warm-up
// and the block below, whose last row the junction is checked against, and
// that check's warm-up.
func (t *Table) startCost(i int64) int64 {
	pl := t.plan
	if !pl.enabled() || i < pl.from {
		return never
	}
	a := pl.junctionBelow(i)
	if t.blockStart(a) != nil {
		return i - a
	}
	if pl.inside(i, a) {
		if s := t.innerRow(a, i); s != nil {
			return i - s.i
		}
		return pl.warm + (i - a)
	}
	if a == pl.from {
		return never
	}
	return 2*pl.warm + pl.block + (i - a)
}

// cursorFor returns a cursor from which stepping reaches row i along the
// rows that define it, verifying every junction it passes, at the least
// cost among: the nearest checkpoint, the verified start of row i's block,
// and a fresh start: of row i's own chain when row i is inside its block
// (a cursor whose rows from the block's second on may be used), else one
// block below (a cursor that is not trusted until it has verified the
// junction of row i's block).
func (t *Table) cursorFor(i int64) *cursor {
	cp := t.checkpointBelow(i)
	walk := i - cp.i
	if t.plan.enabled() && cp.i < t.plan.from && i >= t.plan.from {
		walk = never // walking through every block: estimated as worse
		if i < t.plan.from+t.plan.block {
			walk = i - cp.i
		}
	}
	pl := t.plan
	if c := t.startCost(i); c < walk {
		a := pl.junctionBelow(i)
		if s := t.blockStart(a); s != nil {
			return t.cursorAt(s)
		}
		if pl.inside(i, a) {
			g := a - pl.warm
			cur := t.guessRow(&rowState{}, g)
			if s := t.innerRow(a, i); s != nil {
				cur = s.clone()
			}
			return &cursor{t: t, cur: cur, nxt: &rowState{}, detect: true, warmFrom: g, insideFrom: a + 1}
		}
		g := a - pl.block - pl.warm
		return &cursor{t: t, cur: t.guessRow(&rowState{}, g), nxt: &rowState{}, detect: true, warmFrom: g}
	}
	return t.cursorAt(cp)
}

// finish verifies the junction above the cursor's row, if there is one, so
// that both pairs next to the row are checked before it is used; the
// cursor's row is unchanged. It returns the cursor's error.
func (cu *cursor) finish() error {
	t := cu.t
	a := cu.cur.i + 1
	if cu.err == nil && t.plan.isJunction(a) && t.blockStart(a) == nil {
		probe := &cursor{t: t, cur: cu.cur.clone(), nxt: &rowState{}, trusted: cu.trusted}
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

// RestartCost returns about how many rows a Table computes to reach a row
// that no earlier request brought near, under privacy p: the warm-up of
// the chain below the row's block, that block, and the warm-up of the row's
// own chain. It depends on p only; callers use it to bound their work.
func RestartCost(p Privacy) int64 {
	pl := newRestartPlan(p, never)
	if !pl.enabled() {
		return minRestartFrom
	}
	return 2*pl.warm + pl.block
}
