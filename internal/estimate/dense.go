package estimate

import (
	"context"
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// The dense builders: rows as dense arrays of masses on consecutive tokens
// (denseRow), in a window of active rows (denseRows) that one of three token
// loops (denseLoop) finalises token by token:
//
//   - denseBD, the biased-down estimator (eq. 41);
//   - denseMLE, the MLE (eq. 11) with the copy shortcut on stationary rows;
//   - denseMLERef, the MLE scanning every token (the shortcut's reference).
//
// Tokens are token indices: the unit cells (j-1, j] of Algorithm 4
// (buildUnit, rowBand), or the tokens of Algorithm 5 rows on the 2^-20
// grid (buildGrid), whose bounds the caller keeps. Each loop computes bit
// for bit what the reference builder (generalBuilderRef) computes for such rows:
// the same operations on the same values, in the same order per row
// (docs/estimator-builders.md).

// errNotUnit reports rows the dense builders cannot take as unit cells
// (pieces that are not unit cells (j-1, j], a row without mass on its top
// cell, or mass below a finalised token); the caller falls back to the
// general builder.
var errNotUnit = errors.New("estimate: rows are not on unit cells")

// denseRow is one active row of a dense builder: dense masses m and suffix
// sums s on tokens lo+1 .. last (on unit cells: cells lo+1 .. freq; s[k] =
// s[k+1] + m[k], the reference builder's suffix sums with zero cells
// added, which are exact).
type denseRow struct {
	freq    int64
	lo      int64
	last    int64 // the row retires once token last is final (freq on unit cells)
	g       float64
	pi      float64
	gOverPi float64
	m, s    []float64
	// copied: the row is the previous one shifted up by one cell, bit
	// for bit (same reporting probability, masses and width, lo one
	// higher); read by the MLE shortcut only (denseMLE.activate).
	copied bool
	// Buffers: bufM and bufS are the row's own; m and s are views of
	// them, or of an earlier row's (aliased) when the row was prepared as
	// a copy of the row before it (prepDense's like), which is then lent:
	// its buffers are never written again (prepDense drops them on
	// reuse), since rows still active may read them.
	bufM, bufS    []float64
	aliased, lent bool
	// needStats: retired by a window that leaves statistics to the
	// recycler (denseRows.statsToRecycler); whoever recycles the row
	// computes them first (statsOwed).
	needStats bool
	// e, hasE: E_i from the biased-down loop's running sum (statsJob).
	e    float64
	hasE bool
}

// ownBuffers makes r.m and r.s views of r's own buffers, w and w+1 long
// (contents unspecified). Buffers r lent stay with the rows reading them.
func (r *denseRow) ownBuffers(w int) {
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
func (r *denseRow) share(like *denseRow) {
	r.m, r.s, r.aliased = like.m, like.s, true
	if !like.aliased {
		like.lent = true
	}
}

// denseActive is an active row as the token loop sees it: its first cell,
// running sum sa, g and g/pi, and views of its masses and suffix sums.
type denseActive struct {
	lo          int64
	sa, g, gOPi float64
	m, s        []float64
}

// denseRows is the window of active dense rows the token loops share: it
// prepares and checks rows, stores the estimates of the tokens above
// storeAbove, and at retirement computes each frequency's statistics when
// stats is set (rowStats of the dense masses, which are the reference
// builder's per-token masses, zeros included).
type denseRows struct {
	ctx        context.Context // nil: never cancelled
	stats      []FrequencyStats
	g          G
	n          int64 // the table's max frequency: rows above it have no statistics
	storeAbove int64 // estimates are stored for tokens j > storeAbove (a[j-storeAbove-1])
	// noSums: the token loop reads no suffix sums (the MLE), so prepared
	// rows leave them unset.
	noSums bool
	rows   []*denseRow // active rows, ascending frequency, from head
	// act[x] is rows[x]'s state the token loop reads and writes, in one
	// contiguous slice (the loop streams through it instead of visiting
	// every row's struct): same indices, same head.
	act    []denseActive
	head   int
	pool   []*denseRow
	next   int64   // next expected row
	lastLo int64   // largest row support start read
	pos    int64   // tokens 1..pos are final
	last   float64 // the estimate of token pos
	a      []float64
	done   bool
	tokens int64 // how many tokens to finalise (n on unit cells)
	// Rows retired whose statistics wait for a full batch (flushStats).
	statQ    []statsJob
	statRows []*denseRow
	// statsToRecycler leaves the statistics of retired rows to whoever
	// recycles them (needStats; the row goroutine, shareStats): where the
	// work is done, not what is computed.
	statsToRecycler bool
}

// newDenseRows returns the window of a loop over dense rows of g that
// finalises tokens 1..n (unit cells) and stores those above storeAbove.
func newDenseRows(g G, n, storeAbove int64) denseRows {
	return denseRows{g: g, n: n, tokens: n, storeAbove: storeAbove, next: 1}
}

// denseLoop is a token loop over a window of dense rows: denseBD, denseMLE
// or denseMLERef.
type denseLoop interface {
	// window returns the loop's rows, parameters and estimates.
	window() *denseRows
	// activate appends a prepared, accepted row to the active rows and
	// finalises every token it makes final. fresh: the row was prepared
	// from the source's row here (fromPieces, fromDense), not handed over
	// with the shift tracker's copy verdict (the MLE then compares it
	// with the row before it).
	activate(r *denseRow, fresh bool) error
	// advance finalises tokens up to min(upTo, tokens).
	advance(upTo int64) error
}

// newTableLoop returns the dense token loop of spec's whole table (MLE:
// denseMLE, or its reference denseMLERef under pwsd_reference; biased-down:
// denseBD) filling b's table: the estimates and every frequency's
// statistics.
func newTableLoop(ctx context.Context, b *builder, spec Spec) denseLoop {
	var loop denseLoop
	switch {
	case spec.Estimator == MLE && referenceOnly:
		loop = newDenseMLERef(spec.G, spec.MaxFrequency)
	case spec.Estimator == MLE:
		loop = newDenseMLE(spec.G, spec.MaxFrequency)
	default:
		loop = newDenseBD(spec.G, spec.MaxFrequency, 0)
	}
	u := loop.window()
	u.ctx, u.stats, u.a = ctx, b.t.Frequencies, b.t.A[:0]
	return loop
}

// addPieces takes the next row as pieces and finalises every token it
// makes final.
func addPieces(l denseLoop, row sanitize.Row) error {
	r, err := l.window().fromPieces(row)
	if err != nil {
		return err
	}
	return l.activate(r, true)
}

// addDense takes the next row in dense form (fromDense) and finalises every
// token it makes final.
func addDense(l denseLoop, i int64, pi, lo float64, m []float64) error {
	u := l.window()
	r, err := u.fromDense(i, pi, lo, m)
	if err != nil {
		return err
	}
	if err := u.accept(r); err != nil {
		return err
	}
	return l.activate(r, true)
}

// linkDense takes the prepared next row (prepDense, or the grid producer's)
// and finalises every token it makes final.
func linkDense(l denseLoop, r *denseRow) error {
	if err := l.window().accept(r); err != nil {
		return err
	}
	return l.activate(r, false)
}

// push appends an accepted row to the active rows.
func (u *denseRows) push(r *denseRow) {
	u.rows = append(u.rows, r)
	u.act = append(u.act, denseActive{lo: r.lo, g: r.g, gOPi: r.gOverPi, m: r.m, s: r.s})
	u.lastLo = max(u.lastLo, r.lo)
}

// cancelled reports the context's error every ctxEvery rows and on every
// row of at least ctxWide cells.
func (u *denseRows) cancelled(freq int64, cells int) error {
	return checkCancelled(u.ctx, freq, cells)
}

// tokenCancelled reports the context's error every ctxTokens tokens when
// the active rows are wide (active of them).
func (u *denseRows) tokenCancelled(j int64, active int) error {
	if u.ctx == nil || j%ctxTokens != 0 || active < ctxWide {
		return nil
	}
	return u.ctxErr()
}

// ctxErr is the context's error, wrapped.
func (u *denseRows) ctxErr() error {
	if err := u.ctx.Err(); err != nil {
		return fmt.Errorf("estimate: %w", err)
	}
	return nil
}

// finish records token j's estimate a (stored when j > storeAbove) and
// retires the rows whose last token j is (retire). hasE: the rows' running
// sums sa are the biased-down loop's, so E_i needs no second pass.
func (u *denseRows) finish(j int64, a float64, hasE bool) {
	u.last, u.pos = a, j
	if j > u.storeAbove {
		u.a = append(u.a, a)
	}
	if u.head < len(u.rows) && u.rows[u.head].last <= j {
		u.retire(j, a, hasE)
	}
}

// retire retires the rows whose last token j is, computing or deferring
// their statistics, a being token j's estimate (see finish).
func (u *denseRows) retire(j int64, a float64, hasE bool) {
	for u.head < len(u.rows) && u.rows[u.head].last <= j {
		if r := u.rows[u.head]; u.stats != nil && r.freq <= u.n {
			// E_i is the biased-down running sum sa plus the last
			// token's a m, which the next token would have added:
			// rowStats' sum, the same additions in the same order
			// (zero masses add nothing).
			r.hasE, r.e = hasE, 0
			if w := len(r.m); r.hasE && w > 0 {
				r.e = u.act[u.head].sa
				if m := r.m[w-1]; m > 0 {
					r.e += a * m
				}
			}
			if u.statsToRecycler {
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
		u.act[u.head] = denseActive{}
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

// checkDone marks the window done once every token is final.
func (u *denseRows) checkDone() {
	if u.pos >= u.tokens {
		u.done = true
		u.flushStats()
	}
}

// unitBounds appends the unit-cell bounds from, from+1, ..., to to dst.
func unitBounds(dst []float64, from, to int64) []float64 {
	for j := from; j <= to; j++ {
		dst = append(dst, float64(j))
	}
	return dst
}

// storedTable returns the stored unit-cell tokens as a (partial) estimator
// table of est.
func (u *denseRows) storedTable(est Estimator) *Table {
	bounds := unitBounds([]float64{float64(u.storeAbove)}, u.storeAbove+1, u.pos)
	return &Table{G: u.g, Estimator: est, MaxFrequency: u.n, Bounds: bounds, A: u.a, Frequencies: u.stats}
}

// fromPieces prepares the next row from its pieces (the source's Rows),
// checking that they are unit cells; the caller's token loop then
// activates it (addPieces).
func (u *denseRows) fromPieces(row sanitize.Row) (*denseRow, error) {
	if row.Frequency != u.next {
		return nil, errors.New("estimate: row source delivered rows out of order")
	}
	u.next++
	ps := row.Pieces
	i := row.Frequency
	if len(ps) == 0 || ps[len(ps)-1].Hi != float64(i) || ps[len(ps)-1].Lo != float64(i-1) {
		return nil, errNotUnit
	}
	lo := int64(ps[0].Lo)
	if float64(lo) != ps[0].Lo || lo < u.pos {
		return nil, errNotUnit
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
			return nil, errNotUnit
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
			return nil, errNotUnit
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
		return nil, errNotUnit // the first piece starts the row
	}
	r.freq, r.lo, r.last, r.g, r.pi = i, lo, i, u.g.at(i), row.Pi
	r.gOverPi = 0
	if row.Pi > 0 {
		r.gOverPi = r.g / row.Pi
	}
	return r, nil
}

// fromDense is fromPieces for a row given in dense form
// (sanitize.Table.UnitRows): masses m on cells lo+1 .. i, zeros included.
// The sums are the same operations as on the row's pieces (adding a zero
// cell is exact). The caller accepts and activates the row (addDense).
func (u *denseRows) fromDense(i int64, pi, lof float64, m []float64) (*denseRow, error) {
	if i != u.next {
		return nil, errors.New("estimate: row source delivered rows out of order")
	}
	r := takeOrNew(&u.pool)
	if err := u.prepDense(r, nil, i, pi, lof, m); err != nil {
		u.next++
		u.pool = append(u.pool, r)
		return nil, err
	}
	return r, nil
}

// prepDense fills r with dense row i (see fromDense). It reads only u's
// fixed parameters (n, g, noSums), so it may run on another goroutine than
// the one that links the rows.
//
// like, when not nil, is the row prepared just before r, which the caller
// knows r to be a bit-for-bit copy of shifted up one cell (the shift
// tracker's verdict, denseItem.copied): when the prepared widths agree, r's
// masses and suffix sums are then like's, and r shares like's buffers
// instead of filling its own (the same values: the same cells, the same
// additions). like must stay unchanged until r is retired, which holds for
// the row before r (it retires only after r is linked).
func (u *denseRows) prepDense(r, like *denseRow, i int64, pi, lof float64, m []float64) error {
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
	if u.noSums { // the MLE reads no suffix sums
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

// accept checks that the prepared row r is the next one and starts at or
// above the final tokens (errNotUnit otherwise: it would put mass below
// them); the caller's token loop then activates it (linkDense).
func (u *denseRows) accept(r *denseRow) error {
	if r.freq != u.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	u.next++
	if r.lo < u.pos {
		u.pool = append(u.pool, r)
		return errNotUnit
	}
	return nil
}

// statsOwed computes the statistics of the rows flagged needStats (in
// batches, rowStatsBatch) into stats, reading the estimates from a (the
// retiring builder's estimates when it retired them), and clears the flag.
func statsOwed(rows []*denseRow, a []float64, stats []FrequencyStats) {
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
func (u *denseRows) flushStats() {
	rowStatsBatch(u.statQ)
	clear(u.statQ)
	u.statQ = u.statQ[:0]
	u.pool = append(u.pool, u.statRows...)
	clear(u.statRows)
	u.statRows = u.statRows[:0]
}
