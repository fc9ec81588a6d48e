package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// The dense Algorithm 5 builder (docs/algorithms.md, "How the estimator
// tables are built").
//
// Algorithm 5 puts every break point on the grid 2^-20 (sanitize), so
// positions, their differences and their shifts by whole frequencies are
// exact in float64 below 2^33. The general builder compares positions with
// a tolerance (tol) because it takes any row source; on grid positions
// whose neighbours are all farther apart than that tolerance, each of its
// comparisons has the exact comparison's outcome, so its tokens are the
// exact union of the rows' break points and each row's mass on a token is
// one piece's P or density times the token's length. The row goroutine
// (gridProducer) computes exactly that: the tokens, and each row's masses
// and remaining masses on its tokens as dense arrays, checking the
// condition as it goes (errNotGrid, and the caller falls back to the
// general builder, when it fails). The token loop is a dense one (denseMLE
// or denseBD, dense.go) on token indices. The table is bit for bit the
// reference builder's (buildGeneralRef; griddense_test.go).
//
// Stationary rows (the same stored row of a cycle of period 1, shifted by
// one per frequency) are not rebuilt: their break points that can be new
// are known from the pattern, and a row whose tokens are the previous
// row's shifted by one shares the previous row's masses.

// errNotGrid reports rows the dense Algorithm 5 builder does not take
// (positions off the grid or too close together for the general builder's
// tolerance to be moot, mass below the finalised tokens); the caller falls
// back to the general builder.
var errNotGrid = errors.New("estimate: rows are not on a well-separated grid")

// pieceSource is implemented by *sanitize.Table (PieceRows).
type pieceSource interface {
	PieceRows(from, to int64, fn func(i int64, pi float64, x, m []float64, d int64, copied bool) bool) error
}

// gridMax bounds the positions on Algorithm 5's grid whose integer shifts
// are exact (sanitize.GridScale).
const gridMax = float64(sanitize.MaxFrequency)

// onGrid reports whether x is a grid position in [0, gridMax).
func onGrid(x float64) bool {
	v := x * sanitize.GridScale
	return x >= 0 && x < gridMax && v == math.Trunc(v)
}

// gridRun holds the pieces of a row read as pieces (not a copy); the rows
// that copy it (a stationary run) share it, shifted.
type gridRun struct {
	pieces       []sanitize.Piece // those with Lo <= n+1
	dens, suffix []float64        // suffix has len(pieces)+1 entries; suffix[len] is the mass above
	any          bool             // the row has pieces (lo0 is the first one's Lo)
	lo0          float64
	// The run's break points, ascending and distinct, and for each the
	// smallest k >= 1 with point+k also a break point (0: none): the row
	// shifted by s repeats point+s from the row shifted by s-k when k <= s.
	// Computed for the first copy (kmin nil until then).
	points []float64
	kmin   []int64
	// maxK is the largest kmin and front the points with kmin 0: from
	// shift maxK on, a copy's only new break points are front shifted.
	maxK  int64
	front []float64
	refs  int // rows held that use the run
}

// copyPoints computes the run's points and kmin.
func (run *gridRun) copyPoints() {
	run.points = run.points[:0]
	for _, q := range run.pieces {
		if len(run.points) == 0 || run.points[len(run.points)-1] != q.Lo {
			run.points = append(run.points, q.Lo)
		}
		run.points = append(run.points, q.Hi)
	}
	run.kmin = slices.Grow(run.kmin[:0], len(run.points))[:len(run.points)]
	// point+s (s a whole number) has point's fractional part: within each
	// class of equal fractional parts (exact on the grid), kmin is the gap
	// to the next point of the class. O(P log P), not O(P * span).
	order := make([]int, len(run.points))
	for k := range order {
		order[k] = k
	}
	frac := func(k int) float64 { v := run.points[k]; return v - math.Floor(v) }
	slices.SortFunc(order, func(x, y int) int {
		if fx, fy := frac(x), frac(y); fx != fy {
			if fx < fy {
				return -1
			}
			return 1
		}
		return x - y // points ascend with their index
	})
	run.maxK, run.front = 0, run.front[:0]
	for o, k := range order {
		run.kmin[k] = 0
		if o+1 < len(order) && frac(order[o+1]) == frac(k) {
			run.kmin[k] = int64(run.points[order[o+1]] - run.points[k])
		}
		run.maxK = max(run.maxK, run.kmin[k])
	}
	for k, v := range run.points {
		if run.kmin[k] == 0 {
			run.front = append(run.front, v)
		}
	}
}

// gridRow is a row the producer has read and not yet handed over.
type gridRow struct {
	freq    int64
	pi      float64
	lo, top float64 // support (lo, top]; top = 0 for a row with no pieces kept
	run     *gridRun
	sh      float64 // the row's pieces are run.pieces shifted by sh
	keep    int     // pieces of the run with Lo + sh <= n+1 (the general builder's kept pieces)
	copied  bool    // the row read before it shifted by one, bit for bit
}

// gridProducer computes, on the row goroutine, what the general builder
// computes from the rows before its estimator loop: the tokens and each
// row's mass and remaining mass on each of them (window.go's advance).
type gridProducer struct {
	n  int64
	nf float64
	u  *denseRows // fixed parameters (g, noSums) for the prepared rows

	// bounds[k-boff] is the upper end of token k (1-based; token 0's is
	// 0), kept from token boff on: trim drops the tokens nothing reads
	// any more.
	bounds  []float64
	boff    int
	slack   int       // trim's slack (trimSlack; small in tests)
	sent    int       // tokens 1..sent were handed over
	pending []float64 // break points above pos not yet tokens, ascending, from ph
	ph      int
	pos     float64
	lastLo  float64
	rows    []*gridRow
	head    int
	free    []*gridRow

	runs     []*gridRun // free list
	scratch  []sanitize.Piece
	tr       *shiftTracker // the shift tracker (trackShift), as the general builder's
	trShift  float64       // tr.prev lags the last row by this shift (copies)
	last     *gridRow      // the row read last
	lastSent *denseRow     // the row handed over last (the previous frequency) and its
	lastLo0  int64         // first token
	done     bool
	next     int64
	shared   int // rows handed over sharing the previous row's masses (tests)
	// bounds[k] = bounds[k-perP] + 1 for every k >= perStart (shifted).
	perP, perStart int
}

func newGridProducer(u *denseRows, n int64) *gridProducer {
	bounds := hugepages.Make[float64](1, int(min(3*n+65, maxReservedTokens)))
	return &gridProducer{n: n, nf: float64(n), u: u, bounds: bounds, tr: &shiftTracker{}, next: 1}
}

// read takes the next row (see pieceSource) and finalises the tokens it
// makes final; emit gets every row whose tokens are all final, in order.
func (p *gridProducer) read(i int64, pi float64, x, m []float64, d int64, copied bool,
	spare *[]*denseRow, emit func(*denseRow)) error {
	if i != p.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	p.next++
	r := takeOrNew(&p.free)
	*r = gridRow{freq: i, pi: pi}
	// A copy of a row with pieces (the tracker, like trackShift, finds
	// no shift between rows without pieces).
	if copied && p.last != nil && p.last.run.any && p.last.freq == i-1 && p.last.top+1 < gridMax {
		q := p.last
		r.run, r.sh, r.copied = q.run, q.sh+1, true
		r.run.refs++
		if r.run.kmin == nil {
			r.run.copyPoints()
		}
		p.trackCopy(i)
	} else {
		if err := p.readPieces(r, x, m, float64(d)); err != nil {
			return err
		}
	}
	if err := p.place(r); err != nil {
		return err
	}
	p.last = r
	p.rows = append(p.rows, r)
	if err := p.advance(); err != nil {
		return err
	}
	return p.retire(spare, emit)
}

// readPieces builds row r's pieces from the sanitizer's form, checks them
// as the general builder does (checkRow, the same error) and runs the
// shift tracker on them.
func (p *gridProducer) readPieces(r *gridRow, x, m []float64, fd float64) error {
	full := p.scratch[:0]
	for k, v := range m {
		if v > 0 {
			full = append(full, sanitize.Piece{Lo: x[k] + fd, Hi: x[k+1] + fd, P: v})
		}
	}
	p.scratch = full
	row := sanitize.Row{Frequency: r.freq, Pi: r.pi, Pieces: full}
	if err := checkRow(row); err != nil {
		return err
	}
	p.flushTracker()
	p.tr.trackShift(row)
	run := takeOrNew(&p.runs)
	r.run = run
	run.refs++
	run.points, run.kmin, run.front = run.points[:0], nil, run.front[:0]
	run.any = len(full) > 0
	if run.any {
		run.lo0 = full[0].Lo
	}
	// Only the pieces that can meet a token (Lo <= n+1) are kept, the
	// mass above folded into the last suffix sum from the top, as the
	// general builder does: a wide row far above n costs O(n - lo).
	keep, tail := len(full), 0.0
	for keep > 0 && full[keep-1].Lo > p.nf+1 {
		keep--
		tail += full[keep].P
	}
	run.pieces = append(run.pieces[:0], full[:keep]...)
	if run.any && !onGrid(run.lo0) {
		return errNotGrid
	}
	for _, q := range run.pieces {
		if !onGrid(q.Lo) || !onGrid(q.Hi) || q.Hi == q.Lo {
			return errNotGrid
		}
	}
	run.dens = appendDens(run.dens[:0], run.pieces)
	run.suffix = slices.Grow(run.suffix[:0], keep+1)[:keep+1]
	run.suffix[keep] = tail
	acc := tail
	for k := keep - 1; k >= 0; k-- {
		acc += run.pieces[k].P
		run.suffix[k] = acc
	}
	return nil
}

// trackCopy is tr.trackShift for a row that is the previous one shifted up
// by one, bit for bit: trackShift would find it a shifted copy. The
// tracker's previous row is shifted lazily (flushTracker).
func (p *gridProducer) trackCopy(i int64) {
	tr := p.tr
	if tr.shiftSince == 0 {
		p.flushTracker()
		f := i - 1
		tr.shiftSince = f
		tr.pattern = tr.pattern[:0]
		for _, q := range tr.prev {
			tr.pattern = append(tr.pattern, sanitize.Piece{Lo: q.Lo - float64(f), Hi: q.Hi - float64(f), P: q.P})
		}
		tr.patternPi = tr.prevPi
	}
	p.trShift++
}

// flushTracker applies the pending shift to the tracker's previous row.
func (p *gridProducer) flushTracker() {
	if p.trShift == 0 {
		return
	}
	for k := range p.tr.prev {
		p.tr.prev[k].Lo += p.trShift
		p.tr.prev[k].Hi += p.trShift
	}
	p.trShift = 0
}

// place sets row r's support and kept pieces as the general builder's
// addChecked would, and adds its break points to the pending ones.
func (p *gridProducer) place(r *gridRow) error {
	ps := r.run.pieces
	if !r.run.any {
		r.lo = p.lastLo
		return nil
	}
	lim := p.nf + 1 - r.sh
	r.keep = len(ps)
	for r.keep > 0 && ps[r.keep-1].Lo > lim {
		r.keep--
	}
	if r.run.lo0+r.sh < p.pos {
		return errNotGrid // the general builder would cut the row
	}
	r.lo = r.run.lo0 + r.sh
	p.lastLo = max(p.lastLo, r.lo)
	if r.keep == 0 {
		return nil
	}
	r.top = ps[r.keep-1].Hi + r.sh
	if !r.copied {
		p.mergePoints(ps[:r.keep])
		return nil
	}
	// A copy (the run's row shifted by sh): its point+sh is already
	// pending or final when kmin(point) = k <= sh, since the run's row
	// shifted by sh-k, read before, had point+k there.
	s := int64(r.sh)
	if s >= r.run.maxK {
		for _, v := range r.run.front {
			if x := v + r.sh; x <= p.nf+1 {
				p.addPoint(x)
			}
		}
		return nil
	}
	for k, v := range r.run.points {
		if km := r.run.kmin[k]; km == 0 || km > s {
			if x := v + r.sh; x <= p.nf+1 {
				p.addPoint(x)
			}
		}
	}
	return nil
}

// addPoint inserts break point x into the pending ones unless it is final
// or already there (exact comparisons).
func (p *gridProducer) addPoint(x float64) {
	if x <= p.pos {
		return
	}
	pend := p.pending[p.ph:]
	k, found := slices.BinarySearch(pend, x)
	if found {
		return
	}
	switch {
	case k == len(pend): // the common case: above every pending point
		p.pending = append(p.pending, x)
	case p.ph > 0 && k < len(pend)/2:
		// Near the bottom (a copy's new lowest point): move the points
		// below x down into the slot of a finalised one.
		copy(p.pending[p.ph-1:], pend[:k])
		p.ph--
		p.pending[p.ph+k] = x
	default:
		p.pending = slices.Insert(p.pending, p.ph+k, x)
	}
	p.compactPending()
}

// compactPending moves the pending break points to the front of their
// slice once the finalised ones before them are the larger part.
func (p *gridProducer) compactPending() {
	if p.ph > 1024 && 2*p.ph > len(p.pending) {
		p.pending = p.pending[:copy(p.pending, p.pending[p.ph:])]
		p.ph = 0
	}
}

// mergePoints adds the pieces' end points (sorted, as in a row) to the
// pending break points in one walk over both: consecutive rows share
// almost all their break points, so most are found, in order, and the few
// new ones (Algorithm 5 adds at most three per row) are inserted.
func (p *gridProducer) mergePoints(ps []sanitize.Piece) {
	i := p.ph
	add := func(x float64) {
		if x <= p.pos {
			return
		}
		for i < len(p.pending) && p.pending[i] < x {
			i++
		}
		if i < len(p.pending) && p.pending[i] == x {
			return
		}
		p.pending = slices.Insert(p.pending, i, x) // i stays on x: the next piece's Lo may repeat it
	}
	for _, q := range ps {
		add(q.Lo)
		add(q.Hi)
	}
	p.compactPending()
}

// advance finalises the pending tokens up to lastLo and at most n,
// checking that consecutive tokens lie farther apart than the general
// builder's tolerance. (A source that ends early is left to the general
// builder: buildGrid then returns errNotGrid.)
func (p *gridProducer) advance() error {
	nTol := p.nf + tol(p.nf)
	for p.ph < len(p.pending) {
		t := p.pending[p.ph]
		if t > p.nf {
			if t <= nTol {
				return errNotGrid
			}
			break
		}
		if t > p.lastLo {
			break
		}
		if t-p.pos <= tol(t) {
			return errNotGrid
		}
		p.bounds = append(p.bounds, t)
		if k := p.lastTok(); k-p.perP < p.boff || t != p.bound(k-p.perP)+1 {
			p.perStart = k + 1
		}
		p.pos = t
		p.ph++
	}
	if p.lastLo >= p.nf-tol(p.nf) && (p.ph == len(p.pending) || p.pending[p.ph] > nTol) {
		p.done = true
	}
	return nil
}

// lastTok is the index of the last final token (0: none yet).
func (p *gridProducer) lastTok() int { return p.boff + len(p.bounds) - 1 }

// bound is token k's upper end (k >= boff).
func (p *gridProducer) bound(k int) float64 { return p.bounds[k-p.boff] }

// trimSlack is how many unread tokens trim lets accumulate before it
// moves the kept ones down.
const trimSlack = 1 << 14

// trim drops the tokens below every one still read: the token whose upper
// end is the oldest held row's lower end (fill reads from there), the
// same for the row handed over last (shifted compares with it), the
// first token not yet sent, and the period's look-back.
func (p *gridProducer) trim() {
	need := min(p.sent+1, p.lastTok()-p.perP)
	if p.lastSent != nil {
		need = min(need, int(p.lastLo0))
	}
	if p.head < len(p.rows) {
		need = min(need, sort.SearchFloat64s(p.bounds, p.rows[p.head].lo)+p.boff)
	}
	if d := need - p.boff; d > p.slack && 2*d > len(p.bounds) {
		p.bounds = p.bounds[:copy(p.bounds, p.bounds[d:])]
		p.boff = need
	}
}

// retire hands over, in order, the rows whose tokens are all final.
func (p *gridProducer) retire(spare *[]*denseRow, emit func(*denseRow)) error {
	for p.head < len(p.rows) {
		r := p.rows[p.head]
		if r.top > p.pos {
			break
		}
		if err := p.handOver(r, p.lastTok(), spare, emit); err != nil {
			return err
		}
		p.rows[p.head] = nil
		p.head++
		if r.run.refs--; r.run.refs == 0 && r.run != p.last.run {
			p.runs = append(p.runs, r.run)
		}
		p.free = append(p.free, r)
	}
	if p.head > 64 && 2*p.head > len(p.rows) {
		n := copy(p.rows, p.rows[p.head:])
		clear(p.rows[n:])
		p.rows, p.head = p.rows[:n], 0
	}
	return nil
}

// finish hands over the rows still held (those with mass on the last
// tokens and above n), their masses up to the last token.
func (p *gridProducer) finish(spare *[]*denseRow, emit func(*denseRow)) error {
	for _, r := range p.rows[p.head:] {
		if err := p.handOver(r, p.lastTok(), spare, emit); err != nil {
			return err
		}
	}
	p.rows, p.head = p.rows[:0], 0
	return nil
}

// handOver prepares row r's dense masses and remaining masses on its
// tokens up to token T and emits it (rows with no mass on those tokens
// and above n are dropped).
func (p *gridProducer) handOver(r *gridRow, T int, spare *[]*denseRow, emit func(*denseRow)) error {
	u := takeOrNew(spare)
	g := p.u.g.at(r.freq)
	*u = denseRow{freq: r.freq, g: g, pi: r.pi, bufM: u.bufM, bufS: u.bufS, lent: u.lent}
	if r.pi > 0 {
		u.gOverPi = g / r.pi
	}
	u.last = math.MaxInt64
	k0, w := 0, 0
	if r.keep > 0 {
		// The first token is the one starting at lo (a final break point).
		k0 = sort.SearchFloat64s(p.bounds, r.lo) + p.boff
		if k0 < T && p.bound(k0) == r.lo {
			w = T - k0
			if r.top <= p.bound(T) {
				k1 := sort.SearchFloat64s(p.bounds[k0-p.boff:T-p.boff+1], r.top) + k0 // bound(k1) == top
				w = k1 - k0
				u.last = int64(k1)
			}
		}
	}
	if w == 0 && r.freq > p.n {
		*spare = append(*spare, u)
		return nil
	}
	if w == 0 && r.keep > 0 {
		// Every row up to n ends at or below n, on a final token, and
		// its support starts on one.
		return errors.New("estimate: internal error: a row's support does not start on a token")
	}
	u.lo = int64(k0)
	if w == 0 {
		u.last = 0
		u.m, u.s = nil, nil
		emit(u)
		p.lastSent = nil
		return nil
	}
	if l := p.lastSent; l != nil && r.copied && l.freq == r.freq-1 && len(l.m) == w && p.lastLo0+1 <= int64(k0) &&
		p.shifted(int(p.lastLo0), k0) {
		u.share(l)
		u.copied = true // for the MLE shortcut (denseMLE.activate)
		p.shared++
	} else {
		u.ownBuffers(w)
		rem := u.s[:w]
		if p.u.noSums {
			rem = nil // the MLE reads no remaining masses
		}
		p.fill(r, k0, u.m, rem)
	}
	p.lastSent, p.lastLo0 = u, int64(k0)
	emit(u)
	return nil
}

// shifted reports whether every token from b+1 on (up to the last final
// one) is token a+1.. shifted up by one, bit for bit (so are their lower
// ends). It keeps, for the period perP = b-a, an index perStart from
// which bounds[k] = bounds[k-perP] + 1 holds for every final k (advance
// maintains it token by token), so a run of such rows costs O(1) each.
func (p *gridProducer) shifted(a, b int) bool {
	if b-a != p.perP {
		// A new period: find where the relation starts, looking back
		// from the last token no further than b.
		p.perP = b - a
		k := p.lastTok()
		for k >= b && k-p.perP >= p.boff && p.bound(k) == p.bound(k-p.perP)+1 {
			k--
		}
		p.perStart = k + 1
	}
	return a >= 0 && b >= p.perStart
}

// fill computes row r's mass m[k] and remaining mass s[k] (when s is not
// nil) on token k0+1+k ((bounds[k0+k], bounds[k0+k+1]]) for k < len(m),
// exactly as the general builder's rowState.advance does (same operations,
// same order) on well-separated grid tokens.
func (p *gridProducer) fill(r *gridRow, k0 int, m, s []float64) {
	ps, dens, suf := r.run.pieces[:r.keep], r.run.dens, r.run.suffix
	// The general builder's suffix sums fold the pieces above n+1 into
	// its last entry from the top: the same additions as the run's.
	cur := 0
	for k := range m {
		pos, t := p.bounds[k0-p.boff+k]-r.sh, p.bounds[k0-p.boff+k+1]-r.sh // exact
		for cur < len(ps) && ps[cur].Hi <= pos {
			cur++
		}
		if cur == len(ps) {
			m[k] = 0
			if s != nil {
				s[k] = 0
			}
			continue
		}
		q := ps[cur]
		if s != nil {
			if q.Lo >= pos {
				s[k] = q.P + suf[cur+1]
			} else {
				s[k] = dens[cur]*(q.Hi-pos) + suf[cur+1]
			}
		}
		switch {
		case q.Lo >= t:
			m[k] = 0
		case q.Lo >= pos && q.Hi <= t:
			m[k] = q.P
		default:
			m[k] = dens[cur] * (min(q.Hi, t) - max(q.Lo, pos))
		}
	}
}

// gridBatch carries the producer's output to the estimator loop: new
// tokens' upper ends, then rows; on the way back, rows the loop retired.
type gridBatch struct {
	bounds []float64
	rows   []*denseRow
	rowReturn
	pp *pipe[gridBatch]
}

// buildGrid is the 2^-20 grid builder: BuildContext for MLE and
// biased-down tables of Algorithm 5 rows (see the top of this file). It returns errNotGrid, and the caller
// falls back to the general builder, when the rows are not on a
// well-separated grid.
func buildGrid(ctx context.Context, src RowSource, ps pieceSource, spec Spec) (*Table, error) {
	t, _, _, err := buildGridProducer(ctx, src, ps, spec, trimSlack)
	return t, err
}

// buildGridProducer is buildGrid that also returns its producer and token
// loop (for the tests' counts), with trim's slack given.
func buildGridProducer(ctx context.Context, src RowSource, ps pieceSource, spec Spec, slack int) (*Table, *gridProducer, denseLoop, error) {
	b := newBuilder(spec)
	b.ctx = ctx
	b.reserveTokens(3*spec.MaxFrequency + 64)
	loop := newTableLoop(ctx, &b, spec)
	u := loop.window()
	p := newGridProducer(u, spec.MaxFrequency)
	p.slack = slack
	bounds := b.t.Bounds[:1]
	if err := runGrid(ctx, ps, loop, p, &bounds); err != nil {
		return nil, nil, nil, err
	}
	b.t.Bounds, b.t.A = bounds, u.a
	for _, a := range b.t.A {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, nil, nil, ErrNotFinite
		}
	}
	p.flushTracker()
	b.adopt(&shiftMark{since: p.tr.shiftSince, pattern: p.tr.pattern, pi: p.tr.patternPi})
	if err := b.stationarity(src); err != nil {
		return nil, nil, nil, err
	}
	b.t.Tail = b.analyzeTail()
	return b.t, p, loop, nil
}

// runGrid runs the dense Algorithm 5 builder: p reads the rows of ps (on
// a second goroutine when there are two cores) and the token loop
// finalises every token up to p's n; bounds gets the tokens' upper ends.
func runGrid(ctx context.Context, ps pieceSource, loop denseLoop, p *gridProducer, bounds *[]float64) error {
	u := loop.window()
	u.tokens = math.MaxInt64 // the producer's tokens: known once it ends
	last := min(p.n+maxLookahead, sanitize.MaxFrequency)
	var perr error // the producer's error (row goroutine until the pipe ends)
	var err error  // the estimator loop's
	link := func(r *denseRow) bool {
		if r.last == 0 { // no mass on any token: statistics now
			if u.stats != nil && r.freq <= u.n {
				u.stats[r.freq-1] = rowStats(r.freq, r.g, r.pi, nil, nil)
			}
			u.pool = append(u.pool, r)
			u.next++
			return true
		}
		u.next = r.freq // rows without mass above n were dropped
		if err = linkDense(loop, r); err != nil {
			if errors.Is(err, errNotUnit) {
				err = errNotGrid
			}
			return false
		}
		return true
	}
	produce := func(send func(bounds []float64, rows []*denseRow, flush bool) bool, spare *[]*denseRow) {
		var out []*denseRow
		emit := func(r *denseRow) { out = append(out, r) }
		e := ps.PieceRows(1, last, func(i int64, pi float64, x, m []float64, d int64, copied bool) bool {
			if i%ctxEvery == 0 && ctx.Err() != nil {
				perr = fmt.Errorf("estimate: %w", ctx.Err())
				return false
			}
			if perr = p.read(i, pi, x, m, d, copied, spare, emit); perr != nil {
				return false
			}
			if !send(p.bounds[p.sent+1-p.boff:], out, false) {
				return false
			}
			p.sent = p.lastTok()
			out = out[:0]
			p.trim()
			return !p.done
		})
		if perr == nil && e != nil {
			perr = fmt.Errorf("estimate: reading sanitizer rows: %w", e)
		}
		if perr == nil && !p.done {
			perr = errNotGrid // the source ended or supports stopped: the general builder says which
		}
		if perr == nil {
			perr = p.finish(spare, emit)
		}
		if perr == nil {
			send(p.bounds[p.sent+1-p.boff:], out, true)
			p.sent = p.lastTok()
		}
	}
	consume := func(bs []float64, rows []*denseRow) bool {
		*bounds = append(*bounds, bs...)
		for _, r := range rows {
			if !link(r) {
				return false
			}
		}
		return true
	}
	if rowsInline(ctx) {
		var spare []*denseRow
		var back rowReturn // in line: nothing deferred, the rows go straight back
		produce(func(bounds []float64, rows []*denseRow, _ bool) bool {
			ok := consume(bounds, rows)
			back.giveBack(u, false)
			back.takeBack(u.stats, &spare)
			return ok
		}, &spare)
	} else {
		// The retired rows' statistics are computed by the token loop
		// when no rows wait for it, otherwise by the row goroutine when
		// the rows come back for reuse: the two goroutines share the work
		// (shareStats, rowReturn).
		end := u.shareStats()
		e := runPipeDrain(ctx, func(pp *pipe[gridBatch]) error {
			var spare []*denseRow
			take := func() *gridBatch {
				gb := pp.take()
				gb.pp = pp
				gb.takeBack(u.stats, &spare)
				clear(gb.rows)
				gb.bounds, gb.rows = gb.bounds[:0], gb.rows[:0]
				return gb
			}
			gb := take()
			produce(func(bounds []float64, rows []*denseRow, flush bool) bool {
				if !pp.next() {
					return false
				}
				gb.bounds = append(gb.bounds, bounds...)
				gb.rows = append(gb.rows, rows...)
				if flush || len(gb.rows) >= pipeBatchRows || len(gb.bounds) >= pipeBatchCells {
					pp.send(gb)
					gb = take()
				}
				return true
			}, &spare)
			if len(gb.rows) > 0 || len(gb.bounds) > 0 {
				pp.send(gb)
			}
			return nil
		}, func(gb *gridBatch, stopped bool) bool {
			if stopped {
				gb.recycled = append(gb.recycled, gb.rows...)
				return false
			}
			ok := consume(gb.bounds, gb.rows)
			gb.giveBack(u, gb.pp.backlog() == 0)
			return ok
		}, func(gb *gridBatch) { statsOwed(gb.recycled, gb.a, u.stats) })
		end()
		if e != nil && perr == nil && err == nil {
			return fmt.Errorf("estimate: reading sanitizer rows: %w", e)
		}
	}
	if perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	u.tokens = int64(len(*bounds) - 1)
	if err := loop.advance(u.tokens); err != nil {
		return err
	}
	if u.pos != u.tokens || u.next <= u.n {
		return errors.New("estimate: internal error: the dense Algorithm 5 builder did not finalise every token")
	}
	return nil
}
