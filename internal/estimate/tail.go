package estimate

import (
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// The stationary tail.
//
// Suppose rows s, s+1, ... are shifted copies: pi_{i,x} = p(x - i) for a
// fixed pattern p on (-D, 0] with total mass Pi. Rows below s end at or
// below s-1, so for every unit k >= s the tokens inside (k-1, k] are the
// fractional parts of the pattern's break points (the same m sub-tokens in
// every unit), and the rows producing sub-token r of unit k are exactly
// i = k + d, d = 0..D-1, with probability p_{d,r} independent of k.
//
// MLE. argmax_i pi_{i,(k,r)} = k + d*_r with d*_r = argmax_d p_{d,r} (ties to
// the smallest d, i.e. the smallest frequency), hence
// a(k, r) = g(k + d*_r)/Pi for every k >= s and any g. For identity this is
// a(k, r) = a(k-1, r) + 1/Pi: the estimates of a unit are those of the
// previous unit plus 1/Pi (plus 1 when q = 1).
//
// Biased-down (eq. 41). Let g be affine of slope c on the rows involved and
// assume a(h + P units) = a(h) + P c/Pi on every earlier token the rows
// producing (k+P, r) have. For row i+P at (k+P, r) versus row i at (k, r):
// the masses are equal, S^p (mass below) is equal, S^a grows by
// (P c/Pi) S^p, and g(i+P) = g(i) + P c. With rem = Pi - S^p the ratio of
// eq. 41 becomes (g(i) - S^a + P c - (P c/Pi) S^p)/rem = r_i + P c/Pi, so
// the minimum a(k+P, r) = a(k, r) + P c/Pi. The state of the recursion is the
// estimates of the last D units (D = units a row spans), so once D+1
// consecutive units satisfy the relation, every later unit does (induction).
//
// The relation does NOT hold with P = 1 in general (a_j is not "a_{j-1} + 1
// shifted"): for identity and q = 1 the biased-down estimates form a
// staircase, constant over blocks of several tokens with jumps between them.
// The staircase is eventually periodic for some parameters (period P = 4
// units for eps = 0.7, L = 3; 12 for eps = 1, L = 10; 29 for eps = 0.5,
// L = 25) and quasi-periodic, never repeating, for others (eps = 0.3, L = 5;
// eps = 0.1, L = 20). analyzeTail searches the computed table for the
// smallest period; without one there is no closed continuation and values
// beyond the table are out of range (build a larger table). For count and
// cap (c = 0) the estimates become constant (P = 1).
//
// Unbiased (cells). a_k = (g(k) - sum_{d>=1} c_d a_{k-d})/c_0 with c the
// pattern's cell masses; the same algebra gives a_{k+P} = a_k + P c/Pi from
// a periodic state. Its homogeneous solutions grow exponentially, so in
// practice the table is unstable long before it could become periodic.
//
// For g without an affine tail (power P not in {0, 1}) biased-down and
// unbiased estimates beyond the table must be computed: build a larger table.

// tailTol is the relative tolerance for the stationary token pattern and the
// per-unit increment check.
const tailTol = 1e-9

func (b *builder) analyzeTail() *Tail {
	if !b.statOK || !b.patternSet || b.statFrom > b.n || len(b.pattern) == 0 {
		return nil
	}
	t := b.t
	s, n := b.statFrom, b.n
	offsets := unitOffsets(b.pattern)
	m := int64(len(offsets))
	u, ok := slices.BinarySearch(t.Bounds, float64(s-1))
	if !ok {
		// tolerate rounding of the unit boundary
		for _, c := range []int{u - 1, u} {
			if c >= 0 && c < len(t.Bounds) && math.Abs(t.Bounds[c]-float64(s-1)) <= tol(float64(s-1)) {
				u, ok = c, true
			}
		}
		if !ok {
			return nil
		}
	}
	if int64(len(t.A)) != int64(u)+(n-s+1)*m {
		return nil
	}
	for k := s; k <= n; k++ {
		base := int64(u) + (k-s)*m
		for r, off := range offsets {
			want := float64(k-1) + off
			if math.Abs(t.Bounds[base+int64(r)+1]-want) > tailTol*math.Max(1, want) {
				return nil
			}
		}
	}
	tl := &Tail{From: s, Pi: b.patternPi, Pattern: b.pattern, Offsets: offsets, UnitToken: int64(u)}
	span := int64(math.Ceil(-b.pattern[0].Lo - tol(b.pattern[0].Lo))) // units a row spans
	switch b.spec.Estimator {
	case MLE:
		tl.MLEShift = make([]int64, m)
		for r := range offsets {
			lo := 0.0
			if r > 0 {
				lo = offsets[r-1]
			}
			best, bestM := int64(-1), 0.0
			for d := int64(0); d <= span; d++ {
				// sub-token r of unit k relative to row k+d's top: (lo-1-d, off-1-d]
				mass := patternMass(b.pattern, lo-1-float64(d), offsets[r]-1-float64(d))
				if mleBeats(mass, bestM, best >= 0) {
					best, bestM = d, mass
				}
			}
			if best < 0 {
				return nil // a sub-token no row produces: cannot happen for a pattern's own break points
			}
			tl.MLEShift[r] = best
		}
	default:
		slope, gFrom, ok := b.spec.G.affineTail()
		if !ok || !(tl.Pi > 0) {
			break
		}
		inc := slope / tl.Pi
		base := func(k, r int64) float64 { return t.A[int64(u)+(k-s)*m+r] }
		low := max(s, gFrom) + span // first unit whose rows and predecessors are all stationary and affine
		for p := int64(1); p <= maxTailPeriod && n-span-p >= low; p++ {
			if periodic(base, n, span, p, m, float64(p)*inc) {
				tl.Period = p
				tl.Increment = float64(p) * inc
				tl.ConvergedFrom = n - span
				break
			}
		}
	}
	return tl
}

// maxTailPeriod is the longest period (in units) searched for.
const maxTailPeriod = 1024

// periodic reports whether a(k, r) - a(k-p, r) = inc for every unit k in
// [n-span, n] and sub-token r < m.
func periodic(a func(k, r int64) float64, n, span, p, m int64, inc float64) bool {
	for k := n - span; k <= n; k++ {
		for r := int64(0); r < m; r++ {
			cur := a(k, r)
			if math.Abs(cur-a(k-p, r)-inc) > tailTol*math.Max(1, math.Abs(cur)) {
				return false
			}
		}
	}
	return true
}

// unitOffsets returns the sub-token upper ends within a unit produced by the
// pattern's break points: their fractional parts, ascending, ending at 1.
func unitOffsets(pattern []sanitize.Piece) []float64 {
	var fr []float64
	for _, p := range pattern {
		for _, e := range [2]float64{p.Lo, p.Hi} {
			f := e - math.Floor(e)
			if f > tailTol && f < 1-tailTol {
				fr = append(fr, f)
			}
		}
	}
	slices.Sort(fr)
	out := fr[:0]
	for _, f := range fr {
		if k := len(out); k == 0 || f-out[k-1] > tailTol {
			out = append(out, f)
		}
	}
	return append(out, 1)
}

// patternMass is the pattern's probability of (lo, hi], computed like
// rowState.advance.
func patternMass(pattern []sanitize.Piece, lo, hi float64) float64 {
	tl, th := tol(lo), tol(hi)
	m := 0.0
	for _, q := range pattern {
		if q.Hi <= lo+tl || q.Lo >= hi-th {
			continue
		}
		if q.Lo >= lo-tl && q.Hi <= hi+th {
			m += q.P
		} else if ov := math.Min(q.Hi, hi) - math.Max(q.Lo, lo); ov > th {
			m += q.P / (q.Hi - q.Lo) * ov
		}
	}
	return m
}
