package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// builder is the general builder's state, shared by its two token loops:
// generalBuilderRef (the plain reference, token by token: masses first, then the
// estimate, then the sums; also the unbiased estimator's builder) and
// generalBuilder (MLE and biased-down in one pass per token). It takes any
// row source: the window of rows whose support holds the current token
// (rowState), the pending break points, the table being filled, the
// statistics of retired rows and the shift tracking for the tail. It has
// no token loop of its own: runWith and advanceWith take the loop's
// finalise step.
type builder struct {
	spec Spec
	n    int64
	nf   float64
	t    *Table
	ctx  context.Context // nil: never cancelled

	// estimatesOnly builders compute the estimates and nothing else: no
	// per-frequency statistics, no per-row token masses and no shift
	// tracking (hence no tail); rowBand's passes and the general chunk
	// path need no more. They store tokens only from the moment row
	// storeFrom has been read (0: all): t.A[0] is then token dropped+1 and
	// t.Bounds[0] its lower end. lastA is the estimate of the last
	// finalised token.
	estimatesOnly bool
	storeFrom     int64
	dropped       int
	lastA         float64

	buf  []*rowState
	head int
	pool []*rowState

	nextFreq  int64
	lastLo    float64
	exhausted bool
	done      bool

	pending []float64 // break points not yet finalised: pending[ph:], ascending
	ph      int

	pos      float64
	finalPos float64 // estimates are final for tokens up to here

	densBuf []float64 // addRow's scratch for the pieces' densities

	shiftTracker // the rows read (trackShift), for the tail
	statFrom     int64
	statOK       bool
	patternSet   bool

	err error
}

// tokenStep finalises the token (pos, t] of a general builder: one of the
// token loops (generalBuilderRef.processToken, generalBuilder.processToken).
type tokenStep func(t float64) error

// newBuilder returns the state of a general builder of spec's full table.
func newBuilder(spec Spec) builder {
	n := spec.MaxFrequency
	capTokens := n + 1
	if capTokens > 1<<20 {
		capTokens = 1 << 20 // grow beyond by append; Algorithm 5 has up to 3n tokens
	}
	t := &Table{
		G:            spec.G,
		Estimator:    spec.Estimator,
		MaxFrequency: n,
		Bounds:       hugepages.Make[float64](1, int(capTokens+1)),
		A:            hugepages.Make[float64](0, int(capTokens)),
		Frequencies:  hugepages.Make[FrequencyStats](int(n), int(n)),
	}
	return builder{spec: spec, n: n, nf: float64(n), t: t, nextFreq: 1}
}

// reserveTokens makes room for n tokens in the table (its bounds and
// estimates), up to maxReservedTokens.
func (b *builder) reserveTokens(n int64) {
	n = min(n, maxReservedTokens)
	if int64(cap(b.t.A)) >= n {
		return
	}
	b.t.Bounds = append(hugepages.Make[float64](0, int(n+1)), b.t.Bounds...)
	b.t.A = append(hugepages.Make[float64](0, int(n)), b.t.A...)
}

// maxReservedTokens bounds reserveTokens (3 * 2^22 tokens: 200 MB for the
// two slices); larger tables grow by append.
const maxReservedTokens = 3 << 22

// ctxEvery is how many rows a builder reads between two checks of its
// context (a few milliseconds of work at most).
const ctxEvery = 1024

// ctxWide is the row width from which every row, and every ctxTokens-th
// token, checks the context (wide rows make each row and token costly).
const (
	ctxWide   = 256
	ctxTokens = 256
)

// cancelled reports the builder's context error, checked every ctxEvery rows
// and on every row of at least ctxWide pieces.
func (b *builder) cancelled(freq int64, pieces int) error {
	return checkCancelled(b.ctx, freq, pieces)
}

// checkCancelled is ctx's error, wrapped, when row freq of the given width
// is one the builders check on (every ctxEvery rows, every row of at least
// ctxWide cells); nil otherwise and for a nil ctx.
func checkCancelled(ctx context.Context, freq int64, width int) error {
	if ctx == nil || (freq%ctxEvery != 0 && width < ctxWide) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("estimate: %w", err)
	}
	return nil
}

// context returns the builder's context (Background when it has none).
func (b *builder) context() context.Context {
	if b.ctx == nil {
		return context.Background()
	}
	return b.ctx
}

// runWith reads the rows of src and finalises every token up to n with
// the token loop's step.
func (b *builder) runWith(src RowSource, step tokenStep) error {
	fn := func(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) bool {
		if b.err = b.cancelled(row.Frequency, len(row.Pieces)); b.err != nil {
			return false
		}
		if b.err = b.addChecked(row, dens, cerr, mark); b.err != nil {
			return false
		}
		if b.err = b.advanceWith(step); b.err != nil {
			return false
		}
		return !b.done
	}
	chunk := b.n
	if chunk < 4096 {
		chunk = 4096
	}
	from := int64(1)
	var tr *shiftTracker // the row goroutine's shift tracker, across the chunks
	if !b.estimatesOnly {
		tr = &shiftTracker{}
	}
	for !b.done {
		if from > b.n+maxLookahead {
			return errors.New("estimate: row supports do not move past the max frequency")
		}
		to := from + chunk
		if err := pipeRows(b.context(), src, from, to, tr, fn); err != nil {
			return fmt.Errorf("estimate: reading sanitizer rows: %w", err)
		}
		if b.err != nil {
			return b.err
		}
		if b.done {
			break
		}
		if b.nextFreq <= to { // the source has no more rows
			b.exhausted = true
			if err := b.advanceWith(step); err != nil {
				return err
			}
			break
		}
		from = to + 1
	}
	if !b.done || b.nextFreq <= b.n {
		return errors.New("estimate: the sanitizer table ended before the max frequency")
	}
	// Every row up to n has its top at or below n, hence is finished.
	for b.head < len(b.buf) && b.buf[b.head].freq <= b.n {
		r := b.buf[b.head]
		if r.top > b.finalPos+tol(b.finalPos) {
			return errors.New("estimate: internal error: a row ends beyond the last final token")
		}
		b.retireHead()
	}
	for _, a := range b.t.A {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return ErrNotFinite
		}
	}
	return nil
}

func (b *builder) addRow(row sanitize.Row) error {
	err := checkRow(row)
	if err == nil {
		b.densBuf = appendDens(b.densBuf[:0], row.Pieces)
	}
	return b.addChecked(row, b.densBuf, err, nil)
}

// checkRow returns the error of a row that is not a sanitizer row (bad
// reporting probability, pieces out of order or outside (0, frequency],
// not summing to Pi). It depends on the row only, so it may run on the
// goroutine that computes the rows (pipeRows).
func checkRow(row sanitize.Row) error {
	if !(row.Pi >= 0 && row.Pi <= 1+1e-9) {
		return errors.New("estimate: row reporting probability must lie in [0, 1]")
	}
	fi := float64(row.Frequency)
	sum := 0.0
	prevHi := 0.0
	for _, p := range row.Pieces {
		if !(p.Lo >= prevHi-tol(prevHi)) || !(p.Hi >= p.Lo) || p.Hi > fi+tol(fi) || !(p.P > 0) || math.IsInf(p.P, 0) {
			return errors.New("estimate: row pieces must be sorted, disjoint, inside (0, frequency] and carry positive probability")
		}
		if p.Hi == p.Lo && p.P > droppedTol {
			return errors.New("estimate: a row has an empty piece with probability")
		}
		prevHi = p.Hi
		sum += p.P
	}
	if math.Abs(sum-row.Pi) > 1e-9 {
		return errors.New("estimate: row pieces do not sum to the reporting probability")
	}
	return nil
}

// appendDens appends the densities P / (Hi - Lo) of pieces to dst.
func appendDens(dst []float64, pieces []sanitize.Piece) []float64 {
	for _, p := range pieces {
		dst = append(dst, p.P/(p.Hi-p.Lo))
	}
	return dst
}

// addChecked adds the next row, checked by checkRow (with error cerr) and
// with its pieces' densities dens (appendDens). mark is the shift
// tracker's state after the row when another goroutine tracked it
// (pipeRows); with nil, a builder that is not estimatesOnly tracks the row
// itself.
func (b *builder) addChecked(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) error {
	if row.Frequency != b.nextFreq {
		return errors.New("estimate: row source delivered rows out of order")
	}
	b.nextFreq++
	if cerr != nil {
		return cerr
	}
	switch {
	case mark != nil:
		b.adopt(mark)
	case !b.estimatesOnly: // they have no tail
		b.trackShift(row)
	}
	r := b.newRow()
	r.freq = row.Frequency
	r.pi = row.Pi
	r.g = b.spec.G.at(row.Frequency)
	if row.Pi > 0 {
		r.gOverPi = r.g / row.Pi
	}
	// Tokens up to pos are final. Supports never move down (exactly), but
	// rounding can leave crumbs (say 1e-20) below an earlier row's support:
	// drop mass below pos when it is negligible, fail otherwise.
	lim := b.pos + tol(b.pos)
	dropped := 0.0
	// Pieces above n+1 never meet a token (tokens end at n): keep only
	// their total mass, summed from the top exactly as the suffix sums
	// below would, so that a row far above n costs O(n - lo), not O(L).
	tail, keep := 0.0, len(row.Pieces)
	for keep > 0 && row.Pieces[keep-1].Lo > b.nf+1 {
		keep--
		tail += row.Pieces[keep].P
	}
	for k, p := range row.Pieces[:keep] {
		dens := dens[k]
		switch {
		case p.Hi == p.Lo: // an empty piece with a rounding crumb of mass
			dropped += p.P
			continue
		case p.Hi <= lim:
			dropped += p.P
			continue
		case p.Lo < b.pos-tol(b.pos):
			dropped += dens * (b.pos - p.Lo)
			p = sanitize.Piece{Lo: b.pos, Hi: p.Hi, P: dens * (p.Hi - b.pos)}
		}
		r.pieces = append(r.pieces, p)
		r.dens = append(r.dens, dens)
	}
	if dropped > droppedTol {
		return errors.New("estimate: a row puts mass below the support of an earlier row")
	}
	r.lo = b.lastLo
	switch {
	case len(r.pieces) > 0:
		r.lo = r.pieces[0].Lo
		b.lastLo = math.Max(b.lastLo, r.lo)
		r.top = r.pieces[len(r.pieces)-1].Hi
	case keep < len(row.Pieces): // every piece lies above n+1
		r.lo = row.Pieces[keep].Lo
		b.lastLo = math.Max(b.lastLo, r.lo)
	}
	keep = len(r.pieces)
	r.suffix = append(r.suffix, make([]float64, keep+1)...)
	r.suffix[keep] = tail
	acc := tail // in a register: the same additions in the same order
	for k := keep - 1; k >= 0; k-- {
		acc += r.pieces[k].P
		r.suffix[k] = acc
	}
	b.buf = append(b.buf, r)
	b.mergeEndpoints(r.pieces)
	return nil
}

// droppedTol is the most probability a row may put below the already
// finalised tokens or on empty pieces (rounding crumbs only).
const droppedTol = 1e-12

func (b *builder) newRow() *rowState {
	r := takeOrNew(&b.pool)
	*r = rowState{pieces: r.pieces[:0], dens: r.dens[:0], suffix: r.suffix[:0], masses: r.masses[:0], first: -1}
	return r
}

// mergeEndpoints adds the row's piece end points above the current position
// to the sorted pending break points, merging coincident ones. Consecutive
// rows share almost all their break points (Algorithm 5 adds at most three
// per row), so this is a scan with rare insertions.
func (b *builder) mergeEndpoints(pieces []sanitize.Piece) {
	if b.ph > 1024 && 2*b.ph > len(b.pending) {
		b.pending = b.pending[:copy(b.pending, b.pending[b.ph:])]
		b.ph = 0
	}
	lim := b.pos + tol(b.pos)
	i := b.ph
	add := func(x float64) {
		if x <= lim {
			return
		}
		tx := tol(x)
		for i < len(b.pending) && b.pending[i] < x-tx {
			i++
		}
		if i < len(b.pending) && b.pending[i] <= x+tx {
			return // already a break point
		}
		if i > b.ph && x-b.pending[i-1] <= tx {
			return
		}
		b.pending = slices.Insert(b.pending, i, x)
		i++
	}
	for _, p := range pieces {
		add(p.Lo)
		add(p.Hi)
	}
}

// advanceWith finalises, with the token loop's step, every token whose
// producing rows have all been read.
func (b *builder) advanceWith(step tokenStep) error {
	nTol := b.nf + tol(b.nf)
	for b.ph < len(b.pending) {
		t := b.pending[b.ph]
		if t > nTol || (!b.exhausted && t > b.lastLo+tol(t)) {
			break
		}
		if err := step(t); err != nil {
			return err
		}
		b.ph++
		if b.ctx != nil && b.ph%ctxTokens == 0 && len(b.buf)-b.head >= ctxWide {
			if err := b.ctx.Err(); err != nil {
				return fmt.Errorf("estimate: %w", err)
			}
		}
	}
	if (b.exhausted || b.lastLo >= b.nf-tol(b.nf)) && (b.ph == len(b.pending) || b.pending[b.ph] > nTol) {
		b.done = true
	}
	return nil
}

// appendToken records token t's estimate a: appended to the table, or, for
// a token below the part the table keeps (storeFrom), counted as dropped
// with t as the kept part's lower bound.
func (b *builder) appendToken(a, t float64) {
	if b.storeFrom == 0 || b.nextFreq > b.storeFrom {
		b.t.A = append(b.t.A, a)
		b.t.Bounds = append(b.t.Bounds, t)
	} else {
		b.dropped++
		b.t.Bounds[0] = t
	}
	b.lastA = a
	b.pos = t
}

// build runs the builder with the token loop's step over src and completes
// its table: the stationarity check and the tail.
func (b *builder) build(src RowSource, step tokenStep) (*Table, error) {
	if methodOf(src) == sanitize.MethodMaxSeparation {
		// Algorithm 5 adds at most three break points per row (b, c and
		// i): room for them all up front, instead of growing the two
		// slices of 3n entries by copying (each copy touches fresh pages).
		b.reserveTokens(3*b.n + 64)
	}
	if err := b.runWith(src, step); err != nil {
		return nil, err
	}
	if err := b.stationarity(src); err != nil {
		return nil, err
	}
	b.t.Tail = b.analyzeTail()
	return b.t, nil
}
