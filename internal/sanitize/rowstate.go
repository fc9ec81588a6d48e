package sanitize

// rowState is the internal form of one row: contiguous pieces
// (x[k], x[k+1]] with masses m[k], x[len(m)] = i (the row's frequency), and
// the reporting probability pi. Row 0 is {i: 0, pi: 0, x: [0]}.
// Algorithm 4 rows have integer x (token j is (j-1, j]); masses may be 0.
//
// The remaining fields implement freezing. Each row is a deterministic
// "base" (lower bounds, saturated values, A) plus a residual correction that
// makes it sum to pi (Algorithm 4: the mass R put on the boundary token;
// Algorithm 5: the amounts moved into the pieces next to c). In exact
// arithmetic the rows become shift-invariant once q_i is constant and pi_i
// has reached its fixed point; in float64 the correction, recomputed from
// global sums, jitters in its last bit forever and feeds that jitter back.
// So once three consecutive rows agree up to the shift within 1e-14
// (relative, per piece) in that regime, the row is frozen: from then on the
// correction is copied from the previous row (same offset from the top,
// clamped to the piece's DP bounds) instead of recomputed. Every piece is
// then a deterministic function of the previous row, the rows become exact
// shifted copies, and the row sums stay within a few ulps of pi.
type rowState struct {
	i  int64
	pi float64
	x  []float64
	m  []float64

	total dd // Algorithm 5: exact sum of m (T of the next row)

	stable int      // consecutive rows equal up to the shift within 1e-14
	frozen bool     // the next row copies the correction instead
	bOff   int64    // Algorithm 4: offset i - j of the boundary token (0: none)
	radj   float64  // Algorithm 4: mass R added to the boundary token
	adj    []adjust // Algorithm 5: corrected values, by offset i - Hi of the piece
}

// adjust records that the piece whose Hi is i - off was corrected to val.
type adjust struct{ off, val float64 }

// freezeAfter is the number of near-equal consecutive rows that freezes.
const freezeAfter = 3

func rowZero() *rowState { return &rowState{x: []float64{0}} }

func (r *rowState) clone() *rowState {
	c := &rowState{}
	c.copyFrom(r)
	return c
}

func (r *rowState) copyFrom(o *rowState) {
	r.i, r.pi, r.total = o.i, o.pi, o.total
	r.x = append(r.x[:0], o.x...)
	r.m = append(r.m[:0], o.m...)
	r.stable, r.frozen, r.bOff, r.radj = o.stable, o.frozen, o.bOff, o.radj
	r.adj = append(r.adj[:0], o.adj...)
}

// nearShiftEqual reports whether b is a shifted up by one with the same
// structure and pi and every mass within relative 1e-14.
func nearShiftEqual(a, b *rowState) bool {
	if b.i != a.i+1 || a.pi != b.pi || len(a.m) != len(b.m) {
		return false
	}
	for k, v := range a.x {
		if b.x[k] != v+1 {
			return false
		}
	}
	for k, v := range a.m {
		if d := b.m[k] - v; d > 1e-14*v || -d > 1e-14*v {
			return false
		}
	}
	return true
}

// updateFreeze sets dst's stable count and frozen flag; qConst is the index
// from which q is constant.
func updateFreeze(prev, dst *rowState, qConst int64) {
	dst.stable, dst.frozen = 0, prev.frozen
	if dst.i-1 >= qConst && nearShiftEqual(prev, dst) {
		dst.stable = min(prev.stable+1, freezeAfter)
	}
	if dst.stable >= freezeAfter {
		dst.frozen = true
	}
}

// shiftEqual reports whether b is exactly a shifted up by p = b.i - a.i:
// same reporting probability, masses and freezing state, every break point
// plus p.
func shiftEqual(a, b *rowState) bool {
	p := float64(b.i - a.i)
	if a.pi != b.pi || len(a.m) != len(b.m) || a.frozen != b.frozen || a.stable != b.stable ||
		a.bOff != b.bOff || a.radj != b.radj || len(a.adj) != len(b.adj) {
		return false
	}
	for k, v := range a.adj {
		if b.adj[k] != v {
			return false
		}
	}
	for k, v := range a.m {
		if b.m[k] != v {
			return false
		}
	}
	for k, v := range a.x {
		if b.x[k] != v+p {
			return false
		}
	}
	return true
}
