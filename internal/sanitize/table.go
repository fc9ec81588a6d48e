package sanitize

import (
	"context"
	"errors"
	"fmt"
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

// Table is the frequency sanitizer for one (privacy, sampling, method). It
// is its rows (a rowChain: the parameters, the kept rows and the
// stationary cycle once detected; chain.go) and a cache of per-row samplers
// for Draw, and is safe for concurrent use.
//
// Cost: row i costs O(L) once its predecessor is known. Otherwise a
// request starts from the cheapest start under the chain's cost model
// (chain.go): the nearest checkpoint (one every K rows, K at least 256), a
// kept row of row i's block, or, for tables whose rows come by restart
// (restart.go), a fresh start that computes at most RestartCost rows, at
// frequency 10^3 or 10^9 alike. Once the rows are stationary (see
// StationaryFrom), every later row costs O(L) whatever its frequency. A
// table without restarts whose q_i stays below 1 for a long range (one
// whose q settles within two blocks of 2^16) walks from its last checkpoint
// the first time it reaches a frequency, O((i - known) L): callers should
// bound the frequencies they accept.
type Table struct {
	rowChain
	cache    samplerCache
	restored atomic.Bool // RestoreKeptRows gave it kept rows
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
	t := &Table{rowChain: newRowChain(p, s, m, plan)}
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
	// Walk from q's constant point until the cycle is detected, at most
	// 2^21 rows from the start.
	cu := t.cursorFor(t.qConst)
	err := t.walk(ctx, cu, t.qConst, cu.cur.i+(1<<21), func(*rowState, int64) bool { return t.stationary() == nil })
	if errors.Is(err, ErrJunction) {
		return 0, false, err
	} else if err != nil {
		return 0, false, fmt.Errorf("sanitize: stationary rows: %w", err)
	}
	if st := t.stationary(); st != nil {
		return st.from(), true, nil
	}
	return 0, false, nil
}

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
// or the stationary row with the shift to apply, verified (walk).
func (t *Table) stateFor(i int64) (*rowState, int64, error) {
	var r *rowState
	var d int64
	if err := t.rows(context.Background(), i, i, func(rr *rowState, dd int64) bool {
		r, d = rr, dd // the walk's cursor is dropped: r stays valid
		return false
	}); err != nil {
		return nil, 0, fmt.Errorf("sanitize: row: %w", err) // names no frequency: a draw's is a key's
	}
	return r, d, nil
}

// Rows calls fn with the rows of frequencies from..to in ascending order
// until fn returns false. It runs in O((to - c) L) time, c the cheapest
// start for from (chain.go: a checkpoint or, with restarts, a kept row or a
// fresh start a bounded distance below), O(L) per row past the stationary
// point, and O(L) memory. The Row passed to fn, including its Pieces slice, is only
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
// caller in errors. fn gets only verified rows (walk): on a JunctionError
// it has seen the rows below the junction, and every caller fails as a
// whole.
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
	if err := t.rows(context.Background(), from, to, fn); err != nil {
		return fmt.Errorf("sanitize: %s: %w", what, err)
	}
	return nil
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
