package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// errNotUnit reports rows the unit-cell biased-down builder cannot take
// (pieces that are not unit cells (j-1, j], a row without mass on its top
// cell, or mass below a finalised token); the caller falls back to the
// general builder.
var errNotUnit = errors.New("estimate: rows are not on unit cells")

// unitRow is one active row of the unit-cell builder: dense masses m and
// suffix sums s on cells lo+1 .. freq (s[k] = s[k+1] + m[k], the general
// builder's suffix sums with zero cells added, which are exact).
type unitRow struct {
	freq    int64
	lo      int64
	last    int64 // the row retires once token last is final (freq on unit cells)
	g       float64
	pi      float64
	gOverPi float64
	m, s    []float64
	// copied: the row is the previous one shifted up by one cell, bit
	// for bit (same reporting probability, masses and width, lo one
	// higher); set for MLE builders only (markCopy).
	copied bool
	// Buffers: bufM and bufS are the row's own; m and s are views of
	// them, or of an earlier row's (aliased) when the row was prepared as
	// a copy of the row before it (prepDense's like), which is then lent:
	// its buffers are never written again (prepDense drops them on
	// reuse), since rows still active may read them.
	bufM, bufS    []float64
	aliased, lent bool
	// needStats: retired by a builder that defers statistics
	// (unitBD.deferStats); whoever recycles the row computes them first
	// (statsOwed).
	needStats bool
	// e, hasE: E_i from the biased-down loop's running sum (statsJob).
	e    float64
	hasE bool
}

// ownBuffers makes r.m and r.s views of r's own buffers, w and w+1 long
// (contents unspecified). Buffers r lent stay with the rows reading them.
func (r *unitRow) ownBuffers(w int) {
	if r.lent { // rows still active may read the old buffers
		r.bufM, r.bufS, r.lent = nil, nil, false
	}
	r.aliased = false
	if cap(r.bufM) < w || cap(r.bufS) < w+1 {
		r.bufM, r.bufS = make([]float64, w, w+w/4+8), make([]float64, w+1, w+w/4+9)
	}
	r.m, r.s = r.bufM[:w], r.bufS[:w+1]
}

// share makes r's masses and suffix sums like's (r is like shifted up one
// cell, bit for bit), marking the owner of the buffers as lent. r's own
// buffers stay as they are (lent ones are dropped by ownBuffers).
func (r *unitRow) share(like *unitRow) {
	r.m, r.s, r.aliased = like.m, like.s, true
	if !like.aliased {
		like.lent = true
	}
}

// mleMemo is the MLE argmax scan's outcome on token j: the position best
// among the n active rows (found: some row has mass there) and the first
// active row's frequency head.
type mleMemo struct {
	j, head int64
	best, n int
	found   bool
}

// unitActive is an active row as the token loop sees it: its first cell,
// running sum sa, g and g/pi, and views of its masses and suffix sums.
type unitActive struct {
	lo          int64
	sa, g, gOPi float64
	m, s        []float64
}

// bdStep is one row's part of the biased-down token loop at token j: it
// adds the previous token's a m to sa (pend is that a, or 0 when nothing
// is pending: adding 0 m leaves sa as it is, since sa is never -0;
// deferred, the same additions in the same order) and returns (g - sa) /
// S on the token, or inf (+Inf) when the row has no mass there. Every
// quotient is formed (S >= m > 0, so it is finite) and the caller's min
// keeps the smallest, without branches: the minimum the general builder
// finds by forming only the quotients that can win.
func (r *unitActive) bdStep(j int64, pend, inf float64) float64 {
	q := inf
	if k := j - 1 - r.lo; k >= 0 {
		if k >= 1 {
			if m := r.m[k-1]; m > 0 {
				r.sa += pend * m
			}
		}
		if m := r.m[k]; m > 0 {
			q = (r.g - r.sa) / r.s[k]
		}
	}
	return q
}

// unitBD is the biased-down builder (eq. 41) for Algorithm 4's unit cells:
// token j is the cell (j-1, j], dense bands, no pieces, no tolerances. It
// computes bit for bit what the general builder computes for such rows
// (the same operations on the same values, in the same order per row):
//
//	a_j = min over rows i with m_{i,j} > 0 of (g(i) - sa_i) / S_i(j),
//	sa_i += a_j m_{i,j},
//
// S_i(j) the row's mass on cells >= j and a_j = a_{j-1} when no row
// produces token j. It stores a_j for j > keepBelow only.
//
// With est = MLE it computes eq. 11 instead (the first row, in ascending
// frequency, whose mass on the token exceeds every earlier one's by more
// than tieTol relative; a_j = g(i*)/pi_{i*}), and with stats set it records
// every frequency's statistics at retirement (rowStats of the dense masses,
// which are the general builder's per-token masses, zeros included), so
// that it computes a whole estimator table (keepBelow must then be 0).
type unitBD struct {
	ctx       context.Context // nil: never cancelled
	est       Estimator       // BiasedDown (zero value treated so) or MLE
	stats     []FrequencyStats
	g         G
	n         int64 // finalise tokens 1..n
	keepBelow int64
	rows      []*unitRow // active rows, ascending frequency, from head
	// act[x] is rows[x]'s state the token loop reads and writes, in one
	// contiguous slice (the loop streams through it instead of visiting
	// every row's struct): same indices, same head.
	act     []unitActive
	head    int
	pool    []*unitRow
	next    int64 // next expected row
	lastLo  int64 // largest row support start read
	pos     int64 // tokens 1..pos are final
	last    float64
	pending bool // biased-down: rows' sa still lack last times their mass on token pos
	// MLE on shifted copies (see advance): memo[j % copyP] is the argmax
	// scan's outcome on token j, kept for the copyP tokens after it;
	// lastOriginal is the frequency of the last row linked that is not a
	// copy of the row before it with its first token copyP tokens higher
	// (copyP is 1 on unit cells; buildGrid's rows set it from the first
	// copy of a run).
	memo         []mleMemo
	copyP        int64
	lastOriginal int64
	scanAlways   bool      // never take the shortcut (the reference the tests compare with)
	shortcuts    int       // tokens whose argmax the shortcut took
	bounds       []float64 // keepBelow, keepBelow+1, ..., pos (once pos > keepBelow)
	a            []float64
	done         bool
	// gridded: tokens are not unit cells but those of the dense Algorithm
	// 5 builder (buildGrid), whose upper ends the caller appends to bounds
	// ahead of the rows; tokens is how many tokens to finalise (n on unit
	// cells).
	gridded bool
	tokens  int64
	// Rows retired whose statistics wait for a full batch (flushStats).
	statQ    []statsJob
	statRows []*unitRow
	// deferStats leaves the statistics of retired rows to whoever
	// recycles them (needStats; buildGrid's row goroutine).
	deferStats bool
}

func newUnitBD(g G, n, keepBelow int64) *unitBD {
	u := &unitBD{g: g, n: n, tokens: n, keepBelow: keepBelow, next: 1, bounds: []float64{float64(keepBelow)}}
	u.setPeriod(1)
	return u
}

// add takes the next row and finalises every token it makes final.
func (u *unitBD) add(row sanitize.Row) error {
	if row.Frequency != u.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	u.next++
	ps := row.Pieces
	i := row.Frequency
	if len(ps) == 0 || ps[len(ps)-1].Hi != float64(i) || ps[len(ps)-1].Lo != float64(i-1) {
		return errNotUnit
	}
	lo := int64(ps[0].Lo)
	if float64(lo) != ps[0].Lo || lo < u.pos {
		return errNotUnit
	}
	// Cells above n+1 never meet a token (tokens end at n): keep only
	// their total mass, summed from the top exactly as the suffix sums
	// would, so that a row far above n costs O(1) memory, not O(L).
	w := int(max(min(i, u.n+1)-lo, 0))
	r := takeOrNew(&u.pool)
	r.ownBuffers(w)
	// One pass from the top: masses and suffix sums (s[k] = s[k+1] + m[k],
	// zero cells included, as the general builder's sums over pieces).
	k := int(i - lo) // cells k.. are filled (or summed into the tail)
	tail := 0.0
	idx := len(ps) - 1
	for ; idx >= 0; idx-- {
		p := ps[idx]
		c := int64(p.Lo)
		if float64(c) != p.Lo || p.Hi != p.Lo+1 || c < lo || int(c-lo) >= k {
			return errNotUnit
		}
		if int(c-lo) < w {
			break
		}
		k = int(c - lo)
		tail += p.P
	}
	k = min(k, w)
	r.s[w] = tail
	for ; idx >= 0; idx-- {
		p := ps[idx]
		c := int64(p.Lo)
		if float64(c) != p.Lo || p.Hi != p.Lo+1 || c < lo || int(c-lo) >= k {
			return errNotUnit
		}
		for pos := int(c - lo); k > pos+1; {
			k--
			r.m[k] = 0
			r.s[k] = r.s[k+1]
		}
		k--
		r.m[k] = p.P
		r.s[k] = r.s[k+1] + p.P
	}
	if k != 0 {
		return errNotUnit // the first piece starts the row
	}
	r.freq, r.lo, r.last, r.g, r.pi = i, lo, i, u.g.at(i), row.Pi
	r.gOverPi = 0
	if row.Pi > 0 {
		r.gOverPi = r.g / row.Pi
	}
	u.markCopy(r)
	return u.activate(r)
}

// activate appends a checked row to the active rows (recording it as the
// last original row unless it is a copy) and finalises every token it
// makes final.
func (u *unitBD) activate(r *unitRow) error {
	isCopy := r.copied
	if isCopy && u.gridded {
		// A copy is one for the shortcut when its tokens step by the
		// run's period: a new step starts a new period.
		isCopy = false
		if k := len(u.rows); k > u.head && u.rows[k-1].freq == r.freq-1 {
			if step := r.lo - u.rows[k-1].lo; step == u.copyP {
				isCopy = true
			} else if step > 0 && step <= maxCopyPeriod {
				u.setPeriod(step)
			}
		}
	}
	if !isCopy {
		u.lastOriginal = r.freq
	}
	u.rows = append(u.rows, r)
	u.act = append(u.act, unitActive{lo: r.lo, g: r.g, gOPi: r.gOverPi, m: r.m, s: r.s})
	u.lastLo = max(u.lastLo, r.lo)
	return u.advance(u.lastLo)
}

// markCopy sets r.copied for a row about to be appended to the active
// rows (MLE builders only): whether it is the row linked before it shifted
// up by one cell, bit for bit. Rows prepared on the row goroutine get the
// flag from the shift tracker instead (buildUnit), which compares the rows
// before their cells above n+1 are cut; both verdicts give the same masses
// on every token up to n.
func (u *unitBD) markCopy(r *unitRow) {
	r.copied = false
	if u.est == MLE && len(u.rows) > u.head {
		p := u.rows[len(u.rows)-1]
		r.copied = p.freq == r.freq-1 && r.lo == p.lo+1 && r.pi == p.pi && slices.Equal(r.m, p.m)
	}
}

// maxCopyPeriod bounds the period (tokens per unit) the MLE shortcut
// follows.
const maxCopyPeriod = 64

// setPeriod makes the MLE shortcut compare token j with token j-P.
func (u *unitBD) setPeriod(P int64) {
	u.copyP = P
	u.memo = slices.Grow(u.memo[:0], int(P))[:P]
	for k := range u.memo {
		u.memo[k] = mleMemo{j: -1}
	}
}

// cancelled reports the context's error every ctxEvery rows and on every
// row of at least ctxWide cells.
func (u *unitBD) cancelled(freq int64, cells int) error {
	return checkCancelled(u.ctx, freq, cells)
}

// advance finalises tokens up to min(upTo, tokens), checking the context every
// ctxTokens tokens when rows are wide.
func (u *unitBD) advance(upTo int64) error {
	upTo = min(upTo, u.tokens)
	for j := u.pos + 1; j <= upTo; j++ {
		act := u.act[u.head:]
		if u.ctx != nil && j%ctxTokens == 0 && len(act) >= ctxWide {
			if err := u.ctx.Err(); err != nil {
				return fmt.Errorf("estimate: %w", err)
			}
		}
		var a float64
		if u.est == MLE {
			// When the active rows are those of token j-P (P = copyP:
			// 1 on unit cells, the period of a stationary run's tokens
			// otherwise) shifted up by one row and every one of them is
			// a bit-for-bit copy of the row before it with its tokens P
			// higher (the stationary rows, q_i = 1), each row's mass on
			// this token is its predecessor's on token j-P, so the scan
			// below would pick the same position: take it without
			// scanning.
			head := int64(-1)
			if len(act) > 0 {
				head = u.rows[u.head].freq
			}
			best, found := -1, false
			mm := &u.memo[j%u.copyP]
			if len(act) > 0 && mm.j == j-u.copyP && len(act) == mm.n && head == mm.head+1 && u.lastOriginal < head && !u.scanAlways {
				best, found = mm.best, mm.found
				u.shortcuts++
			} else {
				bestM := 0.0
				for x := range act {
					r := &act[x]
					if k := j - 1 - r.lo; k >= 0 {
						if m := r.m[k]; m > 0 && (!found || m > bestM*(1+tieTol)) {
							best, bestM, found = x, m, true
						}
					}
				}
			}
			*mm = mleMemo{j: j, head: head, best: best, n: len(act), found: found}
			a = u.last
			if found {
				a = act[best].gOPi
			}
		} else {
			// a = min of (g - sa) / S over the rows with mass on the
			// token, in one pass that first adds the previous token's
			// a_{j-1} m_{i,j-1} to each row's sa (bdStep; a row retired
			// meanwhile no longer needs its sa). Two running minima (even and odd rows) halve the chain of
			// dependent min operations; min is exact, so the minimum of
			// the two is the same value.
			inf := math.Inf(1)
			a0, a1 := inf, inf
			pend := 0.0
			if u.pending {
				pend = u.last
			}
			x := 0
			for ; x+1 < len(act); x += 2 {
				a0 = min(a0, act[x].bdStep(j, pend, inf))
				a1 = min(a1, act[x+1].bdStep(j, pend, inf))
			}
			if x < len(act) {
				a0 = min(a0, act[x].bdStep(j, pend, inf))
			}
			a = min(a0, a1)
			if math.IsInf(a, 1) {
				a = u.last
			}
			u.pending = true
		}
		u.last = a
		if j > u.keepBelow {
			u.a = append(u.a, a)
			if !u.gridded {
				u.bounds = append(u.bounds, float64(j))
			}
		}
		u.pos = j
		for u.head < len(u.rows) && u.rows[u.head].last <= j {
			if r := u.rows[u.head]; u.stats != nil && r.freq <= u.n {
				// E_i is the biased-down running sum sa plus the last
				// token's a m, which the next token would have added:
				// rowStats' sum, the same additions in the same order
				// (zero masses add nothing).
				r.hasE, r.e = u.est != MLE, 0
				if w := len(r.m); r.hasE && w > 0 {
					r.e = u.act[u.head].sa
					if m := r.m[w-1]; m > 0 {
						r.e += a * m
					}
				}
				if u.deferStats {
					r.needStats = true
					u.pool = append(u.pool, r)
				} else {
					// Statistics in batches (rowStatsBatch); the row is
					// recycled once they are computed.
					u.statQ = append(u.statQ, statsJob{freq: r.freq, g: r.g, pi: r.pi, masses: r.m, a: u.a[r.lo:], e: r.e, hasE: r.hasE, out: &u.stats[r.freq-1]})
					u.statRows = append(u.statRows, r)
					if len(u.statQ) == statsBatch {
						u.flushStats()
					}
				}
			} else {
				u.pool = append(u.pool, r)
			}
			u.rows[u.head] = nil
			u.act[u.head] = unitActive{}
			u.head++
		}
		if u.head > 64 && 2*u.head > len(u.rows) {
			n := copy(u.rows, u.rows[u.head:])
			clear(u.rows[n:])
			copy(u.act, u.act[u.head:])
			clear(u.act[n:])
			u.rows, u.act, u.head = u.rows[:n], u.act[:n], 0
		}
	}
	if u.pos >= u.tokens {
		u.done = true
		u.flushStats()
	}
	return nil
}

// statsOwed computes the statistics of the rows flagged needStats (in
// batches, rowStatsBatch) into stats, reading the estimates from a (the
// retiring builder's estimates when it retired them), and clears the flag.
func statsOwed(rows []*unitRow, a []float64, stats []FrequencyStats) {
	if stats == nil {
		return // no row owes any
	}
	var jobs [statsBatch]statsJob
	n := 0
	for _, r := range rows {
		if !r.needStats {
			continue
		}
		r.needStats = false
		jobs[n] = statsJob{freq: r.freq, g: r.g, pi: r.pi, masses: r.m, a: a[r.lo:], e: r.e, hasE: r.hasE, out: &stats[r.freq-1]}
		if n++; n == statsBatch {
			rowStatsBatch(jobs[:n])
			n = 0
		}
	}
	rowStatsBatch(jobs[:n])
}

// flushStats computes the queued rows' statistics and recycles the rows.
func (u *unitBD) flushStats() {
	rowStatsBatch(u.statQ)
	clear(u.statQ)
	u.statQ = u.statQ[:0]
	u.pool = append(u.pool, u.statRows...)
	clear(u.statRows)
	u.statRows = u.statRows[:0]
}

// table returns the stored tokens as a (partial) estimator table.
func (u *unitBD) table() *Table {
	est := u.est
	if est == "" {
		est = BiasedDown
	}
	return &Table{G: u.g, Estimator: est, MaxFrequency: u.n, Bounds: u.bounds, A: u.a, Frequencies: u.stats}
}

// addDense is add for a row given in dense form (sanitize.Table.UnitRows):
// masses m on cells lo+1 .. i, zeros included. The sums are the same
// operations as add's on the row's pieces (adding a zero cell is exact).
func (u *unitBD) addDense(i int64, pi, lof float64, m []float64) error {
	if i != u.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	r := takeOrNew(&u.pool)
	if err := u.prepDense(r, nil, i, pi, lof, m); err != nil {
		u.next++
		u.pool = append(u.pool, r)
		return err
	}
	u.markCopy(r)
	return u.link(r)
}

// prepDense fills r with dense row i (see addDense). It reads only u's
// fixed parameters (n, est, g), so it may run on another goroutine than
// the one that links the rows.
//
// like, when not nil, is the row prepared just before r, which the caller
// knows r to be a bit-for-bit copy of shifted up one cell (the shift
// tracker's verdict, unitItem.copied): when the prepared widths agree, r's
// masses and suffix sums are then like's, and r shares like's buffers
// instead of filling its own (the same values: the same cells, the same
// additions). like must stay unchanged until r is retired, which holds for
// the row before r (it retires only after r is linked).
func (u *unitBD) prepDense(r, like *unitRow, i int64, pi, lof float64, m []float64) error {
	lo := int64(lof)
	for len(m) > 0 && !(m[0] > 0) { // pieces start at the first positive mass
		m, lo = m[1:], lo+1
	}
	if float64(int64(lof)) != lof || len(m) == 0 || lo+int64(len(m)) != i || !(m[len(m)-1] > 0) {
		return errNotUnit
	}
	w := int(max(min(i, u.n+1)-lo, 0))
	r.freq, r.lo, r.last, r.g, r.pi, r.copied = i, lo, i, u.g.at(i), pi, false
	r.gOverPi = 0
	if pi > 0 {
		r.gOverPi = r.g / pi
	}
	if like != nil && like.freq == i-1 && like.lo == lo-1 && len(like.m) == w && like.pi == pi {
		r.share(like)
		return nil
	}
	r.ownBuffers(w)
	tail := 0.0
	for k := len(m) - 1; k >= w; k-- {
		if m[k] > 0 {
			tail += m[k]
		}
	}
	r.s[w] = tail
	if u.est == MLE { // the MLE reads no suffix sums
		for k, v := range m[:w] {
			if !(v > 0) {
				v = 0
			}
			r.m[k] = v
		}
	} else {
		// The running sum stays in a register (no store-to-load round
		// trip through r.s): the same additions in the same order.
		acc := tail
		for k := w - 1; k >= 0; k-- {
			v := m[k]
			if !(v > 0) {
				v = 0
			}
			r.m[k] = v
			acc += v
			r.s[k] = acc
		}
	}
	return nil
}

// link takes the prepared next row and finalises every token it makes
// final.
func (u *unitBD) link(r *unitRow) error {
	if r.freq != u.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	u.next++
	if r.lo < u.pos {
		u.pool = append(u.pool, r)
		return errNotUnit
	}
	return u.activate(r)
}

// buildUnit is BuildContext for MLE and biased-down tables of rows on unit
// cells (Algorithm 4): the unit-cell engine replaces the general token
// loop, the general builder's shift tracking, stationarity check and tail
// analysis are reused, and the table is bit for bit the general builder's.
// It returns errNotUnit (and the caller falls back) when a row is not on
// unit cells.
func buildUnit(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	b := newBuilder(spec)
	b.ctx = ctx
	u := newUnitBD(spec.G, spec.MaxFrequency, 0)
	u.ctx, u.est, u.stats = ctx, spec.Estimator, b.t.Frequencies
	u.bounds, u.a = b.t.Bounds[:1], b.t.A[:0]
	var err error
	fn := func(row sanitize.Row) bool {
		if err = b.cancelled(row.Frequency, len(row.Pieces)); err != nil {
			return false
		}
		if !(row.Pi >= 0 && row.Pi <= 1+1e-9) {
			err = errors.New("estimate: row reporting probability must lie in [0, 1]")
			return false
		}
		sum := 0.0
		for _, p := range row.Pieces {
			sum += p.P
		}
		if math.Abs(sum-row.Pi) > 1e-9 {
			err = errors.New("estimate: row pieces do not sum to the reporting probability")
			return false
		}
		b.trackShift(row)
		if err = u.add(row); err != nil {
			return false
		}
		return !u.done
	}
	last := min(spec.MaxFrequency+maxLookahead, sanitize.MaxFrequency)
	if us, ok := src.(unitSource); ok && float64(last) < denseShiftLimit {
		// Dense rows: no pieces are built or parsed. The checks and the
		// shift tracking are the ones above on the row's positive cells.
		// The row goroutine checks the rows and tracks shifted copies
		// with its own tracker (it may read rows past the last one the
		// build takes); each row carries the tracker's state after it,
		// which the build adopts row by row.
		tr := &shiftTracker{}
		pre := func(it *unitItem, m []float64) error {
			if !(it.pi >= 0 && it.pi <= 1+1e-9) {
				return errors.New("estimate: row reporting probability must lie in [0, 1]")
			}
			sum := 0.0
			for _, v := range m {
				if v > 0 {
					sum += v
				}
			}
			if math.Abs(sum-it.pi) > 1e-9 {
				return errors.New("estimate: row pieces do not sum to the reporting probability")
			}
			if float64(int64(it.lo)) != it.lo {
				return errNotUnit
			}
			before := tr.shiftSince
			it.copied = tr.trackShiftDense(it.i, it.pi, int64(it.lo), m)
			it.mark = tr.markSince(before)
			return nil
		}
		dense := func(it *unitItem) bool {
			if err = b.cancelled(it.i, it.cells); err != nil {
				return false
			}
			if it.err != nil {
				err = it.err
				return false
			}
			b.adopt(&it.mark)
			it.r.copied = it.copied
			if err = u.link(it.r); err != nil {
				return false
			}
			return !u.done
		}
		if e := u.pipeDense(ctx, us, 1, last, math.MaxInt64, pre, dense); e != nil {
			return nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
		}
	} else if e := src.Rows(1, last, fn); e != nil {
		return nil, fmt.Errorf("estimate: reading sanitizer rows: %w", e)
	}
	if err != nil {
		return nil, err
	}
	if !u.done {
		if u.next <= last { // the source has no more rows
			if u.next <= u.n {
				return nil, errors.New("estimate: the sanitizer table ended before the max frequency")
			}
			if err := u.advance(u.n); err != nil {
				return nil, err
			}
		}
		if !u.done {
			return nil, errors.New("estimate: row supports do not move past the max frequency")
		}
	}
	b.t.Bounds, b.t.A = u.bounds, u.a
	for _, a := range b.t.A {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, errors.New("estimate: an estimate is not finite (the unbiased system is ill-conditioned or the last unit is incomplete)")
		}
	}
	if err := b.stationarity(src); err != nil {
		return nil, err
	}
	b.t.Tail = b.analyzeTail()
	return b.t, nil
}
