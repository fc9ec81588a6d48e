package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// RowSource streams the rows of a frequency sanitizer (Algorithm 4 or 5) in
// ascending frequency order: fn receives rows from, from+1, ..., to and may
// stop the stream by returning false. Row i's pieces must lie in (0, i], be
// sorted and disjoint, and sum to Pi; the lower end of the support must be
// non-decreasing in i (true for both algorithms: a row never puts mass below
// the previous row's support). fn must not retain row.Pieces. A source that
// delivers fewer rows than asked for (and no error) is treated as complete:
// no higher frequencies exist. *sanitize.Table satisfies RowSource.
type RowSource interface {
	Rows(from, to int64, fn func(sanitize.Row) bool) error
}

// Stationary is implemented by sources that know where their rows become
// shifted copies (q_i = 1): row i = row s shifted by i - s for all i >= s.
// Build then records a Tail so that estimates continue beyond MaxFrequency.
// Build asks only when the rows it read end in a run of shifted copies that
// starts at or below MaxFrequency, and fails if the claim contradicts them.
type Stationary interface {
	StationaryFrom() (int64, bool)
}

// maxLookahead bounds how many rows beyond MaxFrequency Build reads while
// waiting for row supports to move past MaxFrequency.
const maxLookahead = 1 << 22

// relTol is the relative tolerance on token positions: break points closer
// than relTol*max(1,|x|) are the same break point (rounding of the same
// point computed along different routes), and overlaps shorter than that
// are empty.
const relTol = 1e-12

func tol(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return relTol
	}
	return relTol * x
}

// tieTol is the relative tolerance under which two row probabilities of the
// same token count as tied in the MLE argmax (the smallest frequency wins).
const tieTol = 1e-10

// Build computes the estimator table of spec from a row source, streaming:
// rows are read once, in order, with a sliding window of the rows whose
// support contains the current token; each row touches only its own window
// of tokens, and per row only running prefix sums are kept (eq. 41's
// sum_{h<j} a_h pi_{i,h} and the remaining mass). Time O(n L), memory O(n)
// for the tokens, estimates and statistics plus O(L^2) for the window.
//
// Estimates for tokens near n depend on rows above n (eq. 11's argmax and
// eq. 41's minimum run over every frequency that can produce the token), so
// Build reads rows until their supports start beyond n.
//
// The unbiased estimator is the triangular solve on unit cells: it is
// constant on each (k-1, k] and row k's equation fixes cell k. For
// Algorithm 4 cells are tokens; for Algorithm 5 it is one unbiased choice
// among many (Algorithm 5 has more tokens than frequencies).
func Build(src RowSource, spec Spec) (*Table, error) {
	return BuildContext(context.Background(), src, spec)
}

// BuildContext is Build that stops, with ctx's error, soon after ctx is
// cancelled (it checks every ctxEvery rows).
func BuildContext(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("estimate: nil row source")
	}
	if ms, ok := src.(interface{ Method() sanitize.Method }); ok && ms.Method() == sanitize.MethodDiscrete &&
		(spec.Estimator == MLE || spec.Estimator == BiasedDown) {
		t, err := buildUnit(ctx, src, spec)
		if !errors.Is(err, errNotUnit) {
			return t, err
		}
	}
	b := newBuilder(spec)
	b.ctx = ctx
	if err := b.run(src); err != nil {
		return nil, err
	}
	if err := b.stationarity(src); err != nil {
		return nil, err
	}
	b.t.Tail = b.analyzeTail()
	return b.t, nil
}

type rowState struct {
	freq    int64
	pi      float64
	g       float64
	gOverPi float64
	lo, top float64
	pieces  []sanitize.Piece
	dens    []float64
	suffix  []float64 // suffix[k] = sum of P over pieces k.. (len(pieces)+1 entries)
	cur     int       // first piece that may still overlap the current token
	first   int       // 0-based index of the first token recorded in masses, -1 if none
	masses  []float64 // the row's probability of tokens first, first+1, ...
	sa      float64   // sum_{h<j} a_h pi_{i,h} over finalised tokens
	cell    float64   // unbiased: mass in the open unit cell
	sabs    float64   // unbiased: sum_{h<j} |a_h| pi_{i,h}, the cancellation in E_i
}

// advance returns the row's probability of token (pos, t] and its mass above
// pos, moving the cursor past pieces that end at or below pos; tp and tt are
// tol(pos) and tol(t).
func (r *rowState) advance(pos, t, tp, tt float64) (m, rem float64) {
	for r.cur < len(r.pieces) && r.pieces[r.cur].Hi <= pos+tp {
		r.cur++
	}
	if r.cur == len(r.pieces) {
		return 0, 0
	}
	p := r.pieces[r.cur]
	if p.Lo >= pos-tp {
		rem = p.P + r.suffix[r.cur+1]
	} else {
		rem = r.dens[r.cur]*(p.Hi-pos) + r.suffix[r.cur+1]
	}
	for k := r.cur; k < len(r.pieces) && r.pieces[k].Lo < t-tt; k++ {
		q := r.pieces[k]
		if q.Lo >= pos-tp && q.Hi <= t+tt {
			m += q.P
		} else if ov := min(q.Hi, t) - max(q.Lo, pos); ov > tt {
			m += r.dens[k] * ov
		}
		if q.Hi > t+tt {
			break
		}
	}
	return m, rem
}

type builder struct {
	spec Spec
	n    int64
	nf   float64
	t    *Table
	ctx  context.Context // nil: never cancelled

	// lean builders keep no per-frequency statistics (and no per-row token
	// masses), and store tokens only from the moment row keepFrom has been
	// read (0: all): t.A[0] is then token dropped+1 and t.Bounds[0] its
	// lower end. lastA is the estimate of the last finalised token.
	lean     bool
	keepFrom int64
	dropped  int
	lastA    float64

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

	mass, rem []float64 // per-token scratch, one entry per active row
	cellStart int       // unbiased: first token of the open unit cell

	statFrom   int64
	statOK     bool
	shiftSince int64            // rows shiftSince.. (read so far) are shifted copies; 0 = none
	pattern    []sanitize.Piece // row shiftSince relative to shiftSince
	patternPi  float64
	patternSet bool
	prev       []sanitize.Piece // previous row, for trackShift
	prevPi     float64
	prevSet    bool

	err error
}

func newBuilder(spec Spec) *builder {
	n := spec.MaxFrequency
	capTokens := n + 1
	if capTokens > 1<<20 {
		capTokens = 1 << 20 // grow beyond by append; Algorithm 5 has up to 3n tokens
	}
	t := &Table{
		G:            spec.G,
		Estimator:    spec.Estimator,
		MaxFrequency: n,
		Bounds:       make([]float64, 1, capTokens+1),
		A:            make([]float64, 0, capTokens),
		Frequencies:  make([]FrequencyStats, n),
	}
	return &builder{spec: spec, n: n, nf: float64(n), t: t, nextFreq: 1}
}

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
	if b.ctx == nil || (freq%ctxEvery != 0 && pieces < ctxWide) {
		return nil
	}
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("estimate: %w", err)
	}
	return nil
}

func (b *builder) run(src RowSource) error {
	fn := func(row sanitize.Row) bool {
		if b.err = b.cancelled(row.Frequency, len(row.Pieces)); b.err != nil {
			return false
		}
		if b.err = b.addRow(row); b.err != nil {
			return false
		}
		if b.err = b.advance(); b.err != nil {
			return false
		}
		return !b.done
	}
	chunk := b.n
	if chunk < 4096 {
		chunk = 4096
	}
	from := int64(1)
	for !b.done {
		if from > b.n+maxLookahead {
			return errors.New("estimate: row supports do not move past the max frequency")
		}
		to := from + chunk
		if err := src.Rows(from, to, fn); err != nil {
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
			if err := b.advance(); err != nil {
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
	if row.Frequency != b.nextFreq {
		return errors.New("estimate: row source delivered rows out of order")
	}
	b.nextFreq++
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
	if !b.lean { // lean builders have no tail
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
	for _, p := range row.Pieces[:keep] {
		dens := p.P / (p.Hi - p.Lo)
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
	for k := keep - 1; k >= 0; k-- {
		r.suffix[k] = r.suffix[k+1] + r.pieces[k].P
	}
	b.buf = append(b.buf, r)
	b.mergeEndpoints(r.pieces)
	return nil
}

// droppedTol is the most probability a row may put below the already
// finalised tokens or on empty pieces (rounding crumbs only).
const droppedTol = 1e-12

func (b *builder) newRow() *rowState {
	var r *rowState
	if k := len(b.pool); k > 0 {
		r = b.pool[k-1]
		b.pool = b.pool[:k-1]
		*r = rowState{pieces: r.pieces[:0], dens: r.dens[:0], suffix: r.suffix[:0], masses: r.masses[:0]}
	} else {
		r = &rowState{}
	}
	r.first = -1
	return r
}

// trackShift maintains shiftSince, the first frequency from which every row
// read so far is the previous one shifted by 1 (to rounding: 1e-12 relative
// on probabilities, 1e-9 on positions), with a copy of that row relative to
// its frequency.
func (b *builder) trackShift(row sanitize.Row) {
	isShift := b.prevSet && len(row.Pieces) == len(b.prev) && math.Abs(row.Pi-b.prevPi) <= 1e-12 && len(row.Pieces) > 0
	for k := 0; isShift && k < len(row.Pieces); k++ {
		p, q := row.Pieces[k], b.prev[k]
		isShift = math.Abs(p.P-q.P) <= 1e-12*q.P && math.Abs(p.Lo-q.Lo-1) <= 1e-9*max(1, p.Lo) && math.Abs(p.Hi-q.Hi-1) <= 1e-9*max(1, p.Hi)
	}
	switch {
	case !isShift:
		b.shiftSince = 0
	case b.shiftSince == 0:
		f := row.Frequency - 1
		b.shiftSince = f
		b.pattern = b.pattern[:0]
		for _, p := range b.prev {
			b.pattern = append(b.pattern, sanitize.Piece{Lo: p.Lo - float64(f), Hi: p.Hi - float64(f), P: p.P})
		}
		b.patternPi = b.prevPi
	}
	b.prev = append(b.prev[:0], row.Pieces...)
	b.prevPi = row.Pi
	b.prevSet = true
}

// stationarity asks a Stationary source where its rows become shifted
// copies, but only when the rows read end in such a run that starts at or
// below n (asking can be expensive for sources that would have to compute
// far ahead). A claim contradicted by the rows read is an error.
func (b *builder) stationarity(src RowSource) error {
	st, ok := src.(Stationary)
	if !ok || b.shiftSince == 0 || b.shiftSince > b.n {
		return nil
	}
	s, ok := st.StationaryFrom()
	if !ok || s < 1 || s > b.n {
		return nil
	}
	if s < b.shiftSince {
		return errors.New("estimate: the source claims stationary rows but a row is not a shifted copy")
	}
	b.statFrom, b.statOK, b.patternSet = s, true, true
	return nil
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

// advance finalises every token whose producing rows have all been read.
func (b *builder) advance() error {
	nTol := b.nf + tol(b.nf)
	for b.ph < len(b.pending) {
		t := b.pending[b.ph]
		if t > nTol || (!b.exhausted && t > b.lastLo+tol(t)) {
			break
		}
		if err := b.processToken(t); err != nil {
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

func (b *builder) processToken(t float64) error {
	pos := b.pos
	j := len(b.t.A)
	j += b.dropped
	if b.spec.Estimator == Unbiased {
		if k := math.Floor(pos+tol(pos)) + 1; k < t-tol(t) {
			return errors.New("estimate: the unbiased estimator needs every integer to be a token boundary")
		}
	}
	b.mass, b.rem = b.mass[:0], b.rem[:0]
	active := b.buf[b.head:]
	tp, tt := tol(pos), tol(t)
	for _, r := range active {
		if r.first < 0 && r.lo >= t-tt {
			// Not active yet (read ahead). Supports start in non-decreasing
			// order up to rounding crumbs, so few rows are skipped here;
			// once active, a row records every token until it retires.
			b.mass = append(b.mass, 0)
			b.rem = append(b.rem, 0)
			continue
		}
		m, rem := r.advance(pos, t, tp, tt)
		if r.first < 0 {
			r.first = j
		}
		if !b.lean {
			r.masses = append(r.masses, m)
		}
		b.mass = append(b.mass, m)
		b.rem = append(b.rem, rem)
	}
	prev := b.lastA
	var a float64
	switch b.spec.Estimator {
	case BiasedDown:
		a = math.Inf(1)
		for k, r := range active {
			if m := b.mass[k]; m > 0 {
				if v := (r.g - r.sa) / b.rem[k]; v < a {
					a = v
				}
			}
		}
		if math.IsInf(a, 1) {
			a = prev // no frequency produces this token
		}
	case MLE:
		best, bestM := -1, 0.0
		for k := range active {
			if m := b.mass[k]; m > 0 && (best < 0 || m > bestM*(1+tieTol)) {
				best, bestM = k, m
			}
		}
		a = prev
		if best >= 0 {
			a = active[best].gOverPi
		}
	case Unbiased:
		a = math.NaN() // set when the unit cell closes
		for k, r := range active {
			r.cell += b.mass[k]
		}
	}
	if b.keepFrom == 0 || b.nextFreq > b.keepFrom {
		b.t.A = append(b.t.A, a)
		b.t.Bounds = append(b.t.Bounds, t)
	} else {
		b.dropped++
		b.t.Bounds[0] = t
	}
	b.lastA = a
	b.pos = t
	if b.spec.Estimator != Unbiased {
		for k, r := range active {
			if m := b.mass[k]; m > 0 {
				r.sa += a * m
			}
		}
		b.finalPos = t
	} else if k := math.Round(t); k >= 1 && math.Abs(t-k) <= tt {
		if err := b.closeCell(int64(k)); err != nil {
			return err
		}
		b.finalPos = t
	}
	for b.head < len(b.buf) && b.buf[b.head].top <= b.finalPos+tol(b.finalPos) {
		b.retireHead()
	}
	return nil
}

// maxCancellation bounds sum_j pi_{i,j} |a_j| / |g(i)| for the unbiased
// estimator: beyond it float64 rounding (about 1e-16 per term) can no longer
// keep E_i = g(i) to 1e-9 relative.
const maxCancellation = 1e5

// UnstableError reports that the unbiased estimator cannot be computed to
// the requested max frequency: its estimates alternate in sign and grow
// exponentially with the frequency (Appendix F: privacy forbids nonnegative
// unbiased estimators), and from Frequency on E_i = sum_j pi_{i,j} a_j
// cancels so much that float64 cannot keep it equal to g(i). Frequency is a
// property of the parameters (eps, delta, q, g), not of any data. Build a
// table up to Frequency-1 or use biased_down or mle.
type UnstableError struct {
	Frequency int64
}

func (e *UnstableError) Error() string {
	return fmt.Sprintf("estimate: the unbiased estimator is numerically unstable from frequency %d on; use a smaller max frequency or the biased_down or mle estimator", e.Frequency)
}

// closeCell solves row k's unbiasedness equation for the estimate of unit
// cell (k-1, k].
func (b *builder) closeCell(k int64) error {
	if b.head == len(b.buf) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	idx := k - b.buf[b.head].freq
	if idx < 0 || idx >= int64(len(b.buf)-b.head) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	row := b.buf[b.head+int(idx)]
	if !(row.cell > 0) {
		return errors.New("estimate: unbiased estimator undefined: a frequency has no probability in its top unit")
	}
	a := (row.g - row.sa) / row.cell
	if cond := row.sabs + math.Abs(a)*row.cell; !(cond <= maxCancellation*math.Abs(row.g)) {
		return &UnstableError{Frequency: k}
	}
	for _, r := range b.buf[b.head:] {
		if r.cell != 0 {
			r.sa += a * r.cell
			r.sabs += math.Abs(a) * r.cell
			r.cell = 0
		}
	}
	for tok := b.cellStart; tok < len(b.t.A); tok++ {
		b.t.A[tok] = a
	}
	b.cellStart = len(b.t.A)
	return nil
}

// retireHead computes the statistics of the oldest row (all its tokens are
// final) and recycles it.
func (b *builder) retireHead() {
	r := b.buf[b.head]
	b.buf[b.head] = nil
	b.head++
	if r.freq <= b.n && !b.lean {
		b.t.Frequencies[r.freq-1] = rowStats(r.freq, r.g, r.pi, r.masses, b.t.A[max(r.first, 0):])
	}
	b.pool = append(b.pool, r)
	if b.head > 64 && b.head*2 > len(b.buf) {
		n := copy(b.buf, b.buf[b.head:])
		clear(b.buf[n:])
		b.buf = b.buf[:n]
		b.head = 0
	}
}

// rowStats returns the Section 7.1 statistics of a row with probabilities
// masses on consecutive tokens whose estimates are a.
func rowStats(freq int64, g, pi float64, masses, a []float64) FrequencyStats {
	e := 0.0
	for k, m := range masses {
		e += m * a[k]
	}
	notRep := math.Max(0, 1-pi) // pi may exceed 1 by rounding
	mse := notRep * g * g
	v := notRep * e * e
	for k, m := range masses {
		d, c := a[k]-g, a[k]-e
		mse += m * d * d
		v += m * c * c
	}
	return FrequencyStats{Frequency: freq, G: g, Reported: pi, Expected: e, Bias: e - g, Variance: v, MSE: mse}
}
