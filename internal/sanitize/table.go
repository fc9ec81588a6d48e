package sanitize

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// AlgorithmVersion names the revision of the row computations (Algorithms
// 3, 4, 5 and their float64 rounding rules). It changes whenever a row's
// values may change, so caches of derived tables key on it.
const AlgorithmVersion = "rows-3" // rows-3: exact checks on the subnormal rounding paths (rounding.go tinyScale)

// MaxFrequency is the largest frequency a Table answers for (2^33, about
// 8.6e9): Algorithm 5's break points lie on a grid of step 2^-20, and below
// 2^33 every such position, length and integer shift is exact in float64.
const MaxFrequency int64 = 1 << (53 - gridBits)

// ErrFrequency is returned (wrapped) for a frequency outside 1..MaxFrequency.
var ErrFrequency = errors.New("sanitize: frequency must be between 1 and 2^33")

// maxPeriod is the longest cycle the stationarity detection looks for.
const maxPeriod = 16

const (
	initialSpacing = 256 // rows between checkpoints, doubled as needed
	maxCheckpoints = 512 // then the spacing doubles and half are dropped
)

// Table is the frequency sanitizer for one (privacy, sampling, method). It
// holds immutable parameters and internal caches (checkpoint rows, the
// stationary row once detected, per-row samplers for Draw) and is safe for
// concurrent use.
//
// Cost: row i costs O(L) once its predecessor is known. Without a cached
// predecessor, Row(i) costs O(K L) from the nearest checkpoint (K <= a few
// thousand), except the first time the table reaches i, which costs
// O((i - known) L). Once the rows are stationary (see StationaryFrom),
// every later row costs O(L) whatever its frequency. Before that (a
// sampling scheme whose q_i stays below 1 for a long range, e.g. ppswor
// with a tiny threshold) a huge frequency is expensive: callers should
// bound the frequencies they accept.
type Table struct {
	p      Privacy
	s      Sampling
	m      Method
	c      consts
	qConst int64 // q_j is the same for all j >= qConst (never if not)

	plan restartPlan // which chain computes each row (restart.go)

	mu      sync.Mutex
	spacing int64                 // checkpoints are the rows i with i % spacing == 0
	cps     []*rowState           // ascending; cps[0] is row 0
	starts  keptRows              // verified rows at junctions (restart.go)
	inner   keptRows              // rows inside blocks, every innerSpacing (restart.go)
	warms   keptRows              // by junction a: row a-1 of chain a, its warm-up's last row (restart.go)
	stat    atomic.Pointer[cycle] // stationary rows, nil until detected
	cache   samplerCache

	coalesced, audited, failed atomic.Int64 // junctions verified (Junctions)
}

// NewTable validates the parameters and returns an empty table; rows are
// computed on demand.
func NewTable(p Privacy, s Sampling, m Method) (*Table, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("sanitize: privacy: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("sanitize: sampling: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("sanitize: %w", err)
	}
	return newTable(p, s, m, newRestartPlan), nil
}

// newTable returns an empty table of validated parameters whose rows are
// laid out by plan (newRestartPlan, or a test's).
func newTable(p Privacy, s Sampling, m Method, plan func(Privacy, int64) restartPlan) *Table {
	s.Probabilities = append([]float64(nil), s.Probabilities...) // immutable copy
	qc, _ := qConstFrom(s)
	t := &Table{
		p: p, s: s, m: m,
		qConst:  qc,
		plan:    plan(p, qc),
		spacing: initialSpacing,
		cps:     []*rowState{rowZero()},
	}
	t.c = newConsts(t.plan.rowPrivacy(p))
	t.cache.init(defaultCachePieces)
	return t
}

// Privacy returns the table's privacy parameters.
func (t *Table) Privacy() Privacy { return t.p }

// Sampling returns the table's sampling scheme.
func (t *Table) Sampling() Sampling {
	s := t.s
	s.Probabilities = append([]float64(nil), s.Probabilities...)
	return s
}

// Method returns the table's sanitizer.
func (t *Table) Method() Method { return t.m }

// ConstantQFrom returns the first frequency from which the sampling
// probability q_i no longer changes (as Sampling.Q computes it), and false
// when it never becomes constant. Rows can be stationary (StationaryFrom)
// only from there on; unlike StationaryFrom it computes no rows.
func (t *Table) ConstantQFrom() (int64, bool) {
	return t.qConst, t.qConst != never
}

// StationaryFrom returns the first frequency s from which rows are shifted
// copies, once the table has detected it: row i >= s has the pieces of row
// s + ((i-s) mod p) moved up by the multiple of p that separates them, with
// the same probabilities. In exact arithmetic p = 1; in float64 the last
// bit of a few entries can alternate, so the detection compares row j with
// row j-p shifted by p for p = 1..16, exactly (bit for bit), and accepts the
// first match. It is only tried where q_i is already constant (q_i = 1 for
// ppswor, priority and none; for ppswor, where 1 - exp(-tau i^p) is exactly
// 1 in float64), so the step that maps row j to row j+1 is the same
// shift-equivariant map from then on and the match propagates to every
// later row. Detection happens while rows are computed; if the point is
// cheap to reach (q constant within about 2^20 rows) StationaryFrom computes
// up to it, otherwise it reports only what is known.
func (t *Table) StationaryFrom() (int64, bool) {
	s, ok, _ := t.StationaryFromContext(context.Background())
	return s, ok
}

// StationaryFromContext is StationaryFrom that stops computing rows, with
// ctx's error, soon after ctx is cancelled (every 64 rows).
func (t *Table) StationaryFromContext(ctx context.Context) (int64, bool, error) {
	if st := t.stationary(); st != nil {
		return st.from(), true, nil
	}
	if t.qConst == never || (t.qConst > 1<<20 && !t.plan.enabled()) {
		return 0, false, nil
	}
	cu := t.cursorFor(t.qConst)
	for n := int64(0); n < 1<<21 && !cu.hitStationary; n++ {
		if n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, false, fmt.Errorf("sanitize: stationary rows: %w", err)
			}
		}
		if cu.err != nil {
			return 0, false, cu.err
		}
		cu.step()
	}
	if st := t.stationary(); st != nil {
		return st.from(), true, nil
	}
	return 0, false, nil
}

// cycle holds the stationary rows s, s+1, ..., s+p-1.
type cycle struct{ rows []*rowState }

func (c *cycle) from() int64 { return c.rows[0].i }

// at returns the row state and shift for frequency n >= from().
func (c *cycle) at(n int64) (*rowState, int64) {
	r := c.rows[(n-c.from())%int64(len(c.rows))]
	return r, n - r.i
}

func (t *Table) stationary() *cycle { return t.stat.Load() }

func checkFreq(i int64) error {
	if i < 1 || i > MaxFrequency {
		return ErrFrequency
	}
	return nil
}

// Row returns the row of frequency i (1 <= i <= MaxFrequency).
func (t *Table) Row(i int64) (Row, error) {
	if err := checkFreq(i); err != nil {
		return Row{}, fmt.Errorf("sanitize: row: %w", err)
	}
	st, d, err := t.stateFor(i)
	if err != nil {
		return Row{}, err
	}
	return st.row(d, nil), nil
}

// stateFor returns the internal row of frequency i (not to be modified),
// or the stationary row with the shift to apply. Both pairs next to the row
// are verified (restart.go) before it is returned.
func (t *Table) stateFor(i int64) (*rowState, int64, error) {
	if st := t.stationary(); st != nil && i >= st.from() {
		r, d := st.at(i)
		return r, d, nil
	}
	cu := t.cursorFor(i)
	for cu.cur.i < i && cu.err == nil {
		cu.step()
		if cu.hitStationary {
			if st := t.stationary(); i >= st.from() {
				r, d := st.at(i)
				return r, d, nil
			}
		}
	}
	if err := cu.finish(); err != nil {
		return nil, 0, fmt.Errorf("sanitize: row: %w", err) // names no frequency: a draw's is a key's
	}
	return cu.cur, 0, nil
}

// Rows calls fn with the rows of frequencies from..to in ascending order
// until fn returns false. It runs in O((to - c) L) time, c the nearest
// checkpoint at or below from (O(L) per row past the stationary point), and
// O(L) memory. The Row passed to fn, including its Pieces slice, is only
// valid during the call: use Row.Clone to keep it.
func (t *Table) Rows(from, to int64, fn func(Row) bool) error {
	var buf []Piece
	return t.eachRow("rows", from, to, func(r *rowState, d int64) bool {
		row := r.row(d, buf)
		buf = row.Pieces[:0]
		return fn(row)
	})
}

// UnitRows is Rows for an Algorithm 4 (discrete) table in dense form: fn
// gets row i's reporting probability pi and its masses m on the unit cells
// (lo+k, lo+k+1], k = 0..len(m)-1, with lo+len(m) = i (masses may be 0;
// Rows leaves such cells out). m is only valid during the call. It skips
// building pieces, for consumers that work on unit cells.
func (t *Table) UnitRows(from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	if t.m != MethodDiscrete {
		return errors.New("sanitize: unit rows: the table is not discrete (Algorithm 4)")
	}
	return t.eachRow("unit rows", from, to, func(r *rowState, d int64) bool {
		return fn(r.i+d, r.pi, r.x[0]+float64(d), r.m)
	})
}

// PieceRows is Rows in the table's own form, for consumers that work on
// the break points directly (the estimate package's Algorithm 5 builder):
// fn gets row i's reporting probability pi, its break points x and masses
// m, shifted by d (piece k is (x[k]+d, x[k+1]+d] with mass m[k]; Rows
// leaves out the pieces with m[k] <= 0), and copied = true when the row is
// the one fn got just before shifted up by one, bit for bit (both are the
// same stored row of a stationary cycle of period 1). x and m are only
// valid during the call and must not be modified.
func (t *Table) PieceRows(from, to int64, fn func(i int64, pi float64, x, m []float64, d int64, copied bool) bool) error {
	var prev *rowState
	var prevD int64
	return t.eachRow("piece rows", from, to, func(r *rowState, d int64) bool {
		copied := r == prev && d == prevD+1
		prev, prevD = r, d
		return fn(r.i+d, r.pi, r.x, r.m, d, copied)
	})
}

// eachRow calls fn with the row states (and shifts) of frequencies
// from..to in ascending order until fn returns false; what names the
// caller in errors. Each junction is verified before the rows above it are
// handed out, and the one above the last row before eachRow returns: on a
// JunctionError fn may have seen rows below the junction, and the caller
// must discard what it made of them (every caller fails as a whole).
func (t *Table) eachRow(what string, from, to int64, fn func(r *rowState, d int64) bool) error {
	if err := checkFreq(from); err != nil {
		return fmt.Errorf("sanitize: %s: from: %w", what, err)
	}
	if err := checkFreq(to); err != nil {
		return fmt.Errorf("sanitize: %s: to: %w", what, err)
	}
	if from > to {
		return fmt.Errorf("sanitize: %s: from is above to", what)
	}
	j := from
	if st := t.stationary(); st == nil || from < st.from() {
		cu := t.cursorFor(from)
		for cu.cur.i < from && !cu.hitStationary && cu.err == nil {
			cu.step()
		}
		for !cu.hitStationary {
			if cu.err != nil {
				return fmt.Errorf("sanitize: %s: %w", what, cu.err)
			}
			if cu.cur.i >= from && !fn(cu.cur, 0) {
				return nil
			}
			if cu.cur.i >= to {
				if err := cu.finish(); err != nil {
					return fmt.Errorf("sanitize: %s: %w", what, err)
				}
				return nil
			}
			cu.step()
		}
		// Rows below cu.cur.i (the first row past the detected cycle)
		// were emitted.
		j = max(from, cu.cur.i)
	}
	st := t.stationary()
	for ; j <= to; j++ {
		if !fn(st.at(j)) {
			return nil
		}
	}
	return nil
}

// checkpointBelow returns the latest checkpoint at or below i.
func (t *Table) checkpointBelow(i int64) *rowState {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := sort.Search(len(t.cps), func(k int) bool { return t.cps[k].i > i })
	return t.cps[k-1]
}

// record stores r as a checkpoint if it is one the table lacks. Only rows
// of the chains that run on (the one from row 0 below the first junction,
// the final one from the last junction) are checkpoints; the restarted
// blocks keep their verified first rows instead (restart.go).
func (t *Table) record(r *rowState) {
	if pl := t.plan; pl.enabled() && r.i >= pl.from && r.i < pl.final {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.i%t.spacing != 0 || r.i <= t.cps[len(t.cps)-1].i {
		return
	}
	t.cps = append(t.cps, r.clone())
	if len(t.cps) > maxCheckpoints {
		t.spacing *= 2
		kept := t.cps[:0]
		for _, c := range t.cps {
			if c.i%t.spacing == 0 {
				kept = append(kept, c)
			}
		}
		clear(t.cps[len(kept):])
		t.cps = kept
	}
}

func (t *Table) setStationary(rows []*rowState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.stat.Load(); old == nil || rows[0].i < old.from() {
		c := &cycle{}
		for _, r := range rows {
			c.rows = append(c.rows, r.clone())
		}
		t.stat.Store(c)
	}
}

// cursor computes rows one after the other with two reused buffers,
// switching chains at junctions (restart.go).
type cursor struct {
	t             *Table
	cur, nxt      *rowState
	sc            scratch5
	detect        bool // look for stationarity (off only in tests)
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
}

func (t *Table) cursorAt(start *rowState) *cursor {
	return &cursor{t: t, cur: start.clone(), nxt: &rowState{}, detect: true, trusted: true}
}

// step advances the cursor by one row.
func (cu *cursor) step() {
	t := cu.t
	t.stepRow(cu.cur, cu.nxt, &cu.sc)
	if j := cu.nxt.i; t.plan.isJunction(j) {
		cu.junction(j)
	}
	cu.cur, cu.nxt = cu.nxt, cu.cur
	j := cu.cur.i
	if cu.err == nil && t.plan.keepsInner(j) && cu.usable() {
		t.keepInner(cu.cur)
	}
	if cu.insideFrom > 0 && j == cu.insideFrom-2 && !cu.trusted && cu.warmFrom == j+1-t.plan.warm {
		t.keepWarm(j+1, cu.cur) // the warm-up's last row: junction j+1's check reads it
	}
	if !cu.trusted || cu.err != nil {
		return
	}
	if cu.detect && !cu.hitStationary && j >= t.qConst {
		cu.detectCycle()
	}
	if j%initialSpacing == 0 {
		t.record(cu.cur)
	}
}

// detectCycle compares the new row j with rows j-p, p = 1..maxPeriod, and
// records the first exact match as the stationary cycle j-p .. j-1. Only
// rows j-p >= qConst are compared: every step from row j-p on then uses the
// same constant q and the same freezing rule, so the map from one row to
// the next is the same shift-equivariant function and the match repeats.
func (cu *cursor) detectCycle() {
	t, r := cu.t, cu.cur
	j := r.i
	if cu.ring == nil {
		cu.ring = make([]*rowState, maxPeriod)
		for k := range cu.ring {
			cu.ring[k] = &rowState{}
		}
	}
	for p := 1; p <= cu.ringN && p <= maxPeriod; p++ {
		a := cu.ring[(j-int64(p))%maxPeriod]
		if j-int64(p) < t.qConst || a.i != j-int64(p) {
			break
		}
		if shiftEqual(a, r) {
			rows := make([]*rowState, p)
			for k := range p {
				rows[k] = cu.ring[(j-int64(p)+int64(k))%maxPeriod]
			}
			t.setStationary(rows)
			cu.hitStationary = true
			return
		}
	}
	cu.ring[j%maxPeriod].copyFrom(r)
	cu.ringN++
}

// row converts a row state, shifted up by d, to a Row; pieces of zero
// probability are left out. buf is reused when it has room.
func (r *rowState) row(d int64, buf []Piece) Row {
	n := 0
	for _, v := range r.m {
		if v > 0 {
			n++
		}
	}
	if cap(buf) < n {
		buf = make([]Piece, 0, n)
	}
	buf = buf[:0]
	fd := float64(d)
	for k, v := range r.m {
		if v > 0 {
			buf = append(buf, Piece{Lo: r.x[k] + fd, Hi: r.x[k+1] + fd, P: v})
		}
	}
	return Row{Frequency: r.i + d, Pi: r.pi, Pieces: buf}
}
