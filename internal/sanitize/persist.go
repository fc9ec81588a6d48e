package sanitize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/pwsd/pwsd/internal/binenc"
)

// Kept rows across processes (issue 37).
//
// A Table keeps, besides the samplers of the rows draws asked for, a few
// rows from which any other row is cheap to reach: the checkpoints cps, the
// verified first rows of restarted blocks (starts), every 32nd row inside
// blocks (inner), after a warm-up the middle row of each block (mids), the
// last warm-up rows of chains (warms) and the stationary cycle (stat). Their values are functions of the public parameters only.
// KeptRows encodes them so that a new Table of the same parameters (after a
// restart, or on another instance) starts from them rather than from row 0:
// RestoreKeptRows checks the encoding (a SHA-256 checksum over all of it,
// the format, AlgorithmVersion and the parameters) and every row (the
// invariants below, and for the stationary cycle that one step of the
// algorithm maps each of its rows to the next, bit for bit) before the table
// uses any of them; an encoding that fails any check changes nothing.
//
// Which rows a table keeps depends on which frequencies were asked for;
// the caller decides what may be stored (the service stores only the kept
// rows of a table that computed a public range: docs/store.md).

// KeptRowsFormat is the version of the KeptRows encoding. It changes
// whenever the layout changes; the encoding also carries AlgorithmVersion,
// so rows of a binary whose maths differ are never restored.
const KeptRowsFormat = 2

// keptMagic starts every KeptRows encoding.
const keptMagic = "PWSKEPT"

// ErrKeptRows is wrapped by every RestoreKeptRows error about the encoding
// or the rows it holds (a corrupted, truncated, foreign or outdated
// encoding).
var ErrKeptRows = errors.New("sanitize: kept rows")

// RowsStepped returns how many rows the table has computed from their
// predecessors (one step of Algorithm 4 or 5 each, warm-ups and the
// stationary cycle's check in RestoreKeptRows included): the work it did,
// for tests and metrics.
func (t *Table) RowsStepped() int64 { return t.stepped.Load() }

// WarmUp walks the table's rows 1, 2, ... in ascending order along the
// chains that define them (rowChain.walk: every junction on the way is
// verified), until the rows are stationary (StationaryFrom) or the table
// has stepped maxSteps more rows (junction checks' warm-ups included), and
// returns the highest frequency reached (MaxFrequency once stationary).
// The table keeps what it keeps on any walk: the checkpoints, every
// junction's verified row, every 32nd row inside blocks (within the bound
// of keepInner) and the stationary cycle, and besides a checkpoint every 64
// rows below 2^16 (keepDense) and the middle row of every block it walked
// through (midRow, keepMids: at most maxBlockStarts). Which rows WarmUp computes depends on the
// parameters and maxSteps only, never on a request: a table that has done
// nothing else keeps rows that may be stored (KeptRows). It stops with
// ctx's error soon after ctx is done.
func (t *Table) WarmUp(ctx context.Context, maxSteps int64) (int64, error) {
	start := t.stepped.Load()
	var dense, mids []*rowState
	reached := int64(0)
	cu := t.cursorFor(1)
	cu.inOrder = true // the budget counts rows as they are stepped
	err := t.walk(ctx, cu, 1, MaxFrequency, func(r *rowState, d int64) bool {
		if d != 0 { // past the detected stationary cycle
			reached = MaxFrequency
			return false
		}
		reached = r.i
		// Rows of the chains that run on are checkpoints (record); below
		// denseTo a warm-up keeps them denser.
		if pl := t.plan; r.i < denseTo && r.i%denseSpacing == 0 && !(pl.enabled() && r.i >= pl.from && r.i < pl.final) {
			dense = append(dense, r.clone())
		}
		if pl := t.plan; pl.enabled() && r.i > pl.from && r.i == pl.midRow(pl.junctionBelow(r.i)) && len(mids) < maxBlockStarts {
			mids = append(mids, r.clone())
		}
		return t.stepped.Load()-start < maxSteps
	})
	if err != nil {
		return 0, fmt.Errorf("sanitize: warm-up: %w", err)
	}
	if t.stationary() != nil {
		reached = MaxFrequency
	}
	t.keepDense(dense)
	t.keepMids(mids)
	return reached, nil
}

// midRow returns the row inside the block of junction a that a warm-up
// keeps besides the block's verified first row (WarmUp, KeptRows): the row
// keepInner would keep nearest the middle of the block, so that every row
// of a restarted block is reached from a kept row at most about half a
// block below it. It returns 0 when the block holds none (too short), or a
// is no junction of a block that ends.
func (pl restartPlan) midRow(a int64) int64 {
	i := a + 1 + pl.block/2/innerSpacing*innerSpacing
	if !pl.isJunction(a) || i == a+1 || !pl.inside(i, a) {
		return 0
	}
	return i
}

// keepMids keeps the rows of mids (midRow of their blocks, from a walk
// along the rows of the table, at most maxBlockStarts) as the table's
// middle rows, which only a warm-up keeps and nothing evicts.
func (t *Table) keepMids(mids []*rowState) {
	if len(mids) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mids = keyedBy(mids, 0)
}

// Below denseTo a warm-up keeps a checkpoint every denseSpacing rows (four
// times the usual density, at most 1024 rows more): those rows come from
// the chain from row 0 (in production restarts begin at 2^16 at the
// earliest; WarmUp skips rows a test plan restarts), and a
// release's keys are densest there, so a draw after a restore walks at most
// 64 rows from a checkpoint rather than 256.
const (
	denseSpacing = initialSpacing / 4
	denseTo      = minRestartFrom
)

// keepDense makes the rows of dense (rows i < denseTo with i a multiple of
// denseSpacing, ascending, from a walk along the chain from row 0) the
// table's checkpoints below denseTo, at spacing denseSpacing, unless the
// table's spacing has grown (it then keeps its own).
func (t *Table) keepDense(dense []*rowState) {
	if len(dense) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spacing != initialSpacing {
		return
	}
	cps := []*rowState{t.cps[0]}
	cps = append(cps, dense...)
	for _, r := range t.cps[1:] {
		if r.i > dense[len(dense)-1].i {
			cps = append(cps, r)
		}
	}
	t.cps, t.spacing = cps, denseSpacing
}

// KeptRows returns the table's kept rows (checkpoints, verified junction
// rows, blocks' middle rows, rows inside blocks, warm-up ends, the
// stationary cycle), encoded with the table's parameters, AlgorithmVersion
// and a checksum, in at most maxBytes bytes: the stationary cycle first,
// then checkpoints, junction rows, middle rows, inner rows and warm-up ends,
// each kind in ascending order, as long as they fit (a row left out is recomputed when needed); inner rows only of
// blocks whose first row is left out. It returns nil
// when not even the header fits. The samplers of Draw are not included.
func (t *Table) KeptRows(maxBytes int) []byte {
	k := t.kept()
	cps := k.checkpoints[1:] // checkpoints[0] is row 0, always there
	starts, mids, inner, warms := sortedKept(k.starts), sortedKept(k.mids), sortedKept(k.inner), sortedKept(k.warms)
	spacing, stat := k.spacing, k.cycle

	budget := maxBytes - len(t.keptHeader(nil, spacing).Bytes()) - binenc.SumSize - keptKinds*binary10
	if budget < 0 {
		return nil
	}
	// Each kind is a prefix of its rows in ascending order. A row's size
	// depends on the row written before it (writeRow), in the order of
	// the encoding: prev.
	var prev *rowState
	fit := func(rows []*rowState) []*rowState {
		for n, r := range rows {
			sz := encodedRowSize(r, prev)
			if sz > budget {
				return rows[:n]
			}
			budget -= sz
			prev = r
		}
		return rows
	}
	if len(stat) > 0 && encodedRowsSize(stat) > budget {
		stat = nil // the cycle is whole or absent
	}
	stat = fit(stat)
	cps = fit(cps)
	starts = fit(starts)
	mids = fit(mids)
	// A row inside a block whose verified first row is kept starts from
	// that row or the block's middle row (Table.startCost): other inner
	// rows of such blocks are not stored.
	have := make(map[int64]bool, len(starts))
	for _, r := range starts {
		have[r.i] = true
	}
	inner = slices.DeleteFunc(inner, func(r *rowState) bool { return have[t.plan.junctionBelow(r.i)] })
	return t.encodeKept(&keptRowsOfEncoding{spacing: spacing, stat: stat, cps: cps, starts: starts, mids: mids, inner: fit(inner), warms: fit(warms)})
}

// keptHeader writes the header of an encoding of t's kept rows: the magic,
// the format, AlgorithmVersion, the table's parameters and the checkpoint
// spacing.
func (t *Table) keptHeader(w *binenc.Writer, spacing int64) *binenc.Writer {
	if w == nil {
		w = binenc.NewWriter(nil)
	}
	w.Header(keptMagic, KeptRowsFormat)
	w.String(AlgorithmVersion)
	w.String(Key("table", t.p, t.s, t.m))
	w.Uvarint(uint64(spacing))
	return w
}

// encodeKept encodes e: the header, then each kind of rows (a count, then
// the rows; warm-up ends are found by their frequency, junction - 1), then
// the SHA-256 checksum of all that.
func (t *Table) encodeKept(e *keptRowsOfEncoding) []byte {
	w := t.keptHeader(nil, e.spacing)
	var prev *rowState
	for _, kind := range e.kinds() {
		w.Uvarint(uint64(len(kind)))
		for _, r := range kind {
			writeRow(w, r, prev)
			prev = r
		}
	}
	return w.Seal()
}

// binary10 is the most bytes a uvarint takes.
const binary10 = 10

// sortedKept returns the rows of m ordered by their frequency.
func sortedKept(m map[int64]*rowState) []*rowState {
	rows := make([]*rowState, 0, len(m))
	for _, r := range m {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *rowState) int { return int(min(max(a.i-b.i, -1), 1)) })
	return rows
}

// encodedRowSize returns the bytes writeRow takes for r after prev.
func encodedRowSize(r, prev *rowState) int {
	w := binenc.NewWriter(nil)
	writeRow(w, r, prev)
	return len(w.Bytes())
}

// encodedRowsSize returns the bytes writeRow takes for rows, the first
// written first in an encoding.
func encodedRowsSize(rows []*rowState) int {
	n := 0
	var prev *rowState
	for _, r := range rows {
		n += encodedRowSize(r, prev)
		prev = r
	}
	return n
}

// writeRow writes every field of r (all that a step reads); the masses as
// their bits XOR those of the mass of the same piece in prev (the row
// written before, nil for none: writeMassBits), which kept rows share in
// their frozen and stationary parts.
func writeRow(w *binenc.Writer, r, prev *rowState) {
	w.Uvarint(uint64(r.i))
	w.Float(r.pi)
	w.Uvarint(uint64(len(r.m)))
	var ref []float64
	if prev != nil {
		ref = prev.x
	}
	writeBreakPoints(w, r.x, ref)
	for k, v := range r.m {
		writeMassBits(w, math.Float64bits(v)^refMassBits(prev, k))
	}
	w.Float(r.total.hi)
	w.Float(r.total.lo)
	w.Uvarint(uint64(r.stable))
	w.Bool(r.frozen)
	w.Uvarint(uint64(r.bOff))
	w.Float(r.radj)
	w.Uvarint(uint64(len(r.adj)))
	for _, a := range r.adj {
		w.Float(a.off)
		w.Float(a.val)
	}
}

// refMassBits returns the bits of the mass of piece k of prev, or 0 when
// prev is nil or has no piece k.
func refMassBits(prev *rowState, k int) uint64 {
	if prev == nil || k >= len(prev.m) {
		return 0
	}
	return math.Float64bits(prev.m[k])
}

// writeMassBits writes x, a mass's bits XOR those of its reference, as one
// byte (0 for x = 0; else the number of zero bytes below x's lowest nonzero
// byte times 16, plus the number of bytes from there up to its highest
// nonzero byte) and those bytes, lowest first.
func writeMassBits(w *binenc.Writer, x uint64) {
	if x == 0 {
		w.Byte(0)
		return
	}
	lo := bits.TrailingZeros64(x) / 8
	n := (63-bits.LeadingZeros64(x))/8 - lo + 1
	w.Byte(byte(lo<<4 | n))
	for x >>= 8 * lo; n > 0; n-- {
		w.Byte(byte(x))
		x >>= 8
	}
}

// readMassBits reads what writeMassBits wrote.
func readMassBits(r *binenc.Reader) uint64 {
	h := r.Byte()
	if h == 0 {
		return 0
	}
	lo, n := int(h>>4), int(h&15)
	if n == 0 || lo+n > 8 {
		r.Fail("bad mass form %#x", h)
		return 0
	}
	var x uint64
	for k, b := range r.Take(uint64(n)) {
		x |= uint64(b) << (8 * (lo + k))
	}
	return x
}

// How writeBreakPoints writes the break points after the first.
const (
	pointsRaw  = 0 // each a float64
	pointsUnit = 1 // x[k] = x[k-1] + 1 (Algorithm 4's tokens)
	pointsGrid = 2 // x[k] = x[k-1] + d_k / 2^20, d_k a uvarint (Algorithm 5's grid)
	// pointsGridRef: as pointsGrid, d_k written as the zigzag uvarint of d_k
	// less the reference row's step k on the grid (stepOnGrid): kept rows
	// share most of their steps.
	pointsGridRef = 3
)

// stepOnGrid returns step k of break points x on the 2^-20 grid, (x[k] -
// x[k-1]) 2^20 when that is an integer in [1, 2^53), else 0 (also when x
// has no point k).
func stepOnGrid(x []float64, k int) uint64 {
	if k >= len(x) {
		return 0
	}
	d := (x[k] - x[k-1]) * gridScale
	if d >= 1 && d < 1<<53 && d == math.Trunc(d) {
		return uint64(d)
	}
	return 0
}

// zigzag maps a signed difference to the uvarint pointsGridRef writes.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// writeBreakPoints writes x: the first, then the rest in the shortest form
// from which readBreakPoints rebuilds every one bit for bit (checked here
// by rebuilding them with the same arithmetic): unit steps, steps on the
// 2^-20 grid (as they are, or against ref, the break points of the row
// written before, nil for none), or raw.
func writeBreakPoints(w *binenc.Writer, x, ref []float64) {
	w.Float(x[0])
	unit, grid := true, true
	for k := 1; k < len(x); k++ {
		unit = unit && x[k-1]+1 == x[k]
		d := (x[k] - x[k-1]) * gridScale
		grid = grid && d >= 1 && d < 1<<53 && d == math.Trunc(d) && x[k-1]+float64(uint64(d))/gridScale == x[k]
	}
	switch {
	case unit:
		w.Byte(pointsUnit)
	case grid:
		plain, vsRef := 0, 0
		for k := 1; k < len(x); k++ {
			d := stepOnGrid(x, k)
			plain += uvarintLen(d)
			vsRef += uvarintLen(zigzag(int64(d) - int64(stepOnGrid(ref, k))))
		}
		if ref == nil || plain <= vsRef {
			w.Byte(pointsGrid)
			for k := 1; k < len(x); k++ {
				w.Uvarint(stepOnGrid(x, k))
			}
			break
		}
		w.Byte(pointsGridRef)
		for k := 1; k < len(x); k++ {
			w.Uvarint(zigzag(int64(stepOnGrid(x, k)) - int64(stepOnGrid(ref, k))))
		}
	default:
		w.Byte(pointsRaw)
		for _, v := range x[1:] {
			w.Float(v)
		}
	}
}

// uvarintLen returns the bytes of v as a uvarint.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// readBreakPoints reads n break points written by writeBreakPoints with
// reference ref.
func readBreakPoints(r *binenc.Reader, n uint64, ref []float64) []float64 {
	x := make([]float64, n)
	x[0] = r.FiniteFloat()
	switch mode := r.Byte(); mode {
	case pointsUnit:
		for k := 1; k < len(x); k++ {
			x[k] = x[k-1] + 1
		}
	case pointsGrid:
		for k := 1; k < len(x); k++ {
			x[k] = x[k-1] + float64(r.Intn(1<<53))/gridScale
		}
	case pointsGridRef:
		for k := 1; k < len(x); k++ {
			z := r.Uvarint()
			d := int64(stepOnGrid(ref, k)) + (int64(z>>1) ^ -int64(z&1))
			if d < 0 || d >= 1<<53 {
				r.Fail("break point step off the grid")
				return x
			}
			x[k] = x[k-1] + float64(d)/gridScale
		}
	case pointsRaw:
		for k := 1; k < len(x); k++ {
			x[k] = r.FiniteFloat()
		}
	default:
		r.Fail("unknown break point form %d", mode)
	}
	return x
}

// maxKeptPieces bounds the pieces of one decoded row: a row of the window of
// the smallest epsilon the service admits holds a few thousand; more is a
// corrupt encoding, refused before allocating.
const maxKeptPieces = 1 << 22

// readRow reads a row written by writeRow after prev.
func readRow(r *binenc.Reader, prev *rowState) *rowState {
	s := &rowState{}
	s.i = int64(r.Intn(uint64(MaxFrequency)))
	s.pi = r.FiniteFloat()
	n := r.Intn(maxKeptPieces)
	if r.Err() != nil || uint64(r.Len()) < n+8 {
		r.Fail("truncated row")
		return nil
	}
	var ref []float64
	if prev != nil {
		ref = prev.x
	}
	s.x = readBreakPoints(r, n+1, ref)
	s.m = make([]float64, n)
	for k := range s.m {
		s.m[k] = math.Float64frombits(readMassBits(r) ^ refMassBits(prev, k))
		if math.IsNaN(s.m[k]) || math.IsInf(s.m[k], 0) {
			r.Fail("mass not finite")
			return nil
		}
	}
	s.total.hi, s.total.lo = r.FiniteFloat(), r.FiniteFloat()
	s.stable = int(r.Intn(freezeAfter))
	s.frozen = r.Bool()
	s.bOff = int64(r.Intn(uint64(MaxFrequency)))
	s.radj = r.FiniteFloat()
	na := r.Intn(maxKeptPieces)
	if r.Err() != nil || uint64(r.Len()) < 16*na {
		r.Fail("truncated row")
		return nil
	}
	s.adj = make([]adjust, na)
	for k := range s.adj {
		s.adj[k] = adjust{off: r.FiniteFloat(), val: r.FiniteFloat()}
	}
	if r.Err() != nil {
		return nil
	}
	return s
}

// rowSumTolerance is how far a restored row's masses may sum from its pi:
// the constructions keep it within ~1e-14 (doc.go); more is not a row of
// this package.
const rowSumTolerance = 1e-12

// checkRow checks the invariants every row of t satisfies: its frequency
// in 1..MaxFrequency, break points finite and strictly increasing up to
// the frequency, pi in [0, q_i], every mass in [0, 1] and the masses
// summing to pi within rowSumTolerance.
func (t *Table) checkRow(r *rowState) error {
	switch {
	case r.i < 1 || r.i > MaxFrequency:
		return fmt.Errorf("row frequency %d out of range", r.i)
	case len(r.m) == 0 || len(r.x) != len(r.m)+1:
		return errors.New("row without pieces")
	case r.x[len(r.x)-1] != float64(r.i) || r.x[0] < 0:
		return errors.New("row break points do not end at its frequency")
	case !(r.pi >= 0 && r.pi <= t.s.Q(r.i)):
		return errors.New("row reporting probability outside [0, q_i]")
	}
	for k := 1; k < len(r.x); k++ {
		if !(r.x[k] > r.x[k-1]) {
			return errors.New("row break points not increasing")
		}
	}
	var sum ddSum
	for _, v := range r.m {
		if !(v >= 0 && v <= 1) {
			return errors.New("row mass outside [0, 1]")
		}
		sum.add(v)
	}
	if d := sum.dd().float() - r.pi; math.Abs(d) > rowSumTolerance {
		return fmt.Errorf("row masses sum %g away from its reporting probability", d)
	}
	return nil
}

// keptRowsOfEncoding are the rows of a decoded encoding.
type keptRowsOfEncoding struct {
	spacing                               int64
	stat, cps, starts, mids, inner, warms []*rowState
}

// keptKinds is the number of kinds of rows an encoding holds.
const keptKinds = 6

// kinds returns e's kinds of rows in the order of the encoding.
func (e *keptRowsOfEncoding) kinds() [keptKinds][]*rowState {
	return [...][]*rowState{e.stat, e.cps, e.starts, e.mids, e.inner, e.warms}
}

// decodeKeptRows checks data's checksum, header and parameters against t,
// and decodes its rows.
func (t *Table) decodeKeptRows(data []byte) (*keptRowsOfEncoding, error) {
	body, err := binenc.Unseal(data)
	if err != nil {
		return nil, err
	}
	r := binenc.NewReader(body, ErrKeptRows)
	if v := r.Header(keptMagic); r.Err() == nil && v != KeptRowsFormat {
		return nil, fmt.Errorf("format %d, want %d", v, KeptRowsFormat)
	}
	if v := r.String(64); r.Err() == nil && v != AlgorithmVersion {
		return nil, fmt.Errorf("algorithm version %q, want %q", v, AlgorithmVersion)
	}
	if k := r.String(1 << 20); r.Err() == nil && k != Key("table", t.p, t.s, t.m) {
		return nil, errors.New("rows of other parameters")
	}
	e := &keptRowsOfEncoding{spacing: int64(r.Intn(uint64(MaxFrequency)))}
	kinds := [keptKinds]*[]*rowState{&e.stat, &e.cps, &e.starts, &e.mids, &e.inner, &e.warms}
	var prev *rowState
	for _, kind := range kinds {
		n := r.Intn(uint64(r.Len()))
		for range n {
			row := readRow(r, prev)
			if row == nil {
				break
			}
			*kind = append(*kind, row)
			prev = row
		}
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	return e, nil
}

// checkKept checks every decoded row (checkRow) and that each lies where
// the table keeps rows of its kind: checkpoints at multiples of the
// spacing along the chains that run on, junction rows at junctions, inner
// rows where keepInner keeps them, warm-up ends just below a junction, and
// the stationary cycle p consecutive rows past the constant q, each of
// which one step maps to the next (the last to the first shifted by p), bit
// for bit.
func (t *Table) checkKept(e *keptRowsOfEncoding) error {
	pl := t.plan
	if e.spacing < denseSpacing || e.spacing&(e.spacing-1) != 0 {
		return errors.New("checkpoint spacing")
	}
	for _, kind := range e.kinds() {
		for k, r := range kind {
			if err := t.checkRow(r); err != nil {
				return err
			}
			if k > 0 && r.i <= kind[k-1].i {
				return errors.New("rows out of order")
			}
		}
	}
	if len(e.cps) > maxCheckpoints+denseTo/denseSpacing {
		return errors.New("too many checkpoints")
	}
	for _, r := range e.cps {
		if r.i%e.spacing != 0 || (pl.enabled() && r.i >= pl.from && r.i < pl.final) {
			return errors.New("a checkpoint where the table keeps none")
		}
	}
	if len(e.starts) > maxBlockStarts {
		return errors.New("too many junction rows")
	}
	for _, r := range e.starts {
		if !pl.isJunction(r.i) {
			return errors.New("a junction row off the junctions")
		}
	}
	if len(e.mids) > maxBlockStarts {
		return errors.New("too many middle rows")
	}
	for _, r := range e.mids {
		if !pl.enabled() || r.i <= pl.from || pl.midRow(pl.junctionBelow(r.i)) != r.i {
			return errors.New("a middle row off the blocks' middles")
		}
	}
	for _, r := range e.inner {
		if !pl.keepsInner(r.i) {
			return errors.New("an inner row where the table keeps none")
		}
	}
	for _, r := range e.warms {
		if !pl.isJunction(r.i + 1) {
			return errors.New("a warm-up end off the junctions")
		}
	}
	if p := len(e.stat); p > 0 {
		if p > maxPeriod || e.stat[0].i < t.qConst {
			return errors.New("stationary cycle out of place")
		}
		var sc scratch5
		nxt := &rowState{}
		for k, r := range e.stat {
			t.stepRow(r, nxt, &sc)
			if k+1 < p && !rowsEqual(nxt, e.stat[k+1]) {
				return errors.New("stationary rows are not steps of each other")
			}
			if k+1 == p && !shiftEqual(e.stat[0], nxt) {
				return errors.New("stationary rows are not a cycle")
			}
		}
	}
	return nil
}

// RestoreKeptRows gives a table that has computed no row yet the rows of an
// encoding made by KeptRows for the same parameters under the same
// AlgorithmVersion. Nothing is restored unless the whole encoding passes
// every check (the checksum, the header, each row's invariants and place,
// the stationary cycle's steps): the error then wraps ErrKeptRows and the
// table computes its rows as if the encoding had not been offered.
func (t *Table) RestoreKeptRows(data []byte) error {
	e, err := t.decodeKeptRows(data)
	if err == nil {
		err = t.checkKept(e)
	}
	if err != nil {
		if !errors.Is(err, ErrKeptRows) {
			err = fmt.Errorf("%w: %w", ErrKeptRows, err)
		}
		return err
	}
	k := keptSet{spacing: e.spacing, checkpoints: append([]*rowState{rowZero()}, e.cps...), cycle: e.stat}
	k.starts, k.mids, k.inner, k.warms = keyedBy(e.starts, 0), keyedBy(e.mids, 0), keyedBy(e.inner, 0), keyedBy(e.warms, 1)
	if err := t.restore(k); err != nil {
		return fmt.Errorf("%w: %w", ErrKeptRows, err)
	}
	t.restored.Store(true)
	return nil
}

// Restored reports whether RestoreKeptRows gave the table kept rows.
func (t *Table) Restored() bool { return t.restored.Load() }

// keyedBy returns rows keyed by their frequency plus off, or nil for none
// (a chain keeps nil maps until it keeps a row).
func keyedBy(rows []*rowState, off int64) map[int64]*rowState {
	if len(rows) == 0 {
		return nil
	}
	m := make(map[int64]*rowState, len(rows))
	for _, r := range rows {
		m[r.i+off] = r
	}
	return m
}
