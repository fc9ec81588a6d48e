package sanitize

import (
	"math"
	"slices"
	"sort"
)

// scratch5 holds per-piece bookkeeping of step5, reused across rows.
type scratch5 struct {
	// newPts are the break points row i introduced (b, c when they cut a
	// piece of row i-1, and i); see Table.BreakPoints.
	newPts []float64
}

// Break points of Algorithm 5 lie on the grid 2^-gridBits: with
// positions below 2^(53-gridBits) every position, length and shift by an
// integer is then exact in float64, so rows far up are exact shifted copies.
const (
	gridBits  = 20
	gridScale = 1 << gridBits
	gridStep  = 1.0 / gridScale
)

// GridScale is the inverse of Algorithm 5's break-point grid step: every
// break point of a max_separation table times GridScale is a whole number,
// and below MaxFrequency positions, lengths and whole shifts on the grid
// are exact in float64 (estimate's dense Algorithm 5 builder relies on it).
const GridScale = gridScale

func snapNearest(x float64) float64 { return math.Round(x*gridScale) / gridScale }

// cutGrid returns a grid position pos in [lo, hi] (a piece of mass m with
// prefix mass P below lo) nearest to where the prefix mass F reaches target,
// moved down until F(pos) <= limit (up to tol), and F(pos).
func cutGrid(lo, hi, m, P, target, limit, tol float64) (float64, dd) {
	want := target - P
	if want <= 0 || m <= 0 {
		return lo, ddFrom(P)
	}
	pos := hi
	if want < m {
		pos = lo + snapNearest((want/m)*(hi-lo))
		pos = math.Min(math.Max(pos, lo), hi)
	}
	for {
		F := ddFrom(P).add(portion(m, lo, pos, lo, hi))
		if pos <= lo || F.addF(-limit-tol).sign() <= 0 {
			return pos, F
		}
		pos = math.Max(lo, pos-gridStep)
	}
}

// locateTail returns the grid position c at which the tail mass of prev,
// T - F(c), reaches need: the tail width inside the piece is rounded up to
// the grid, so the tail holds at least need and the e^eps region of row i
// is never too small (its surplus can always be moved out). It is rounded
// down instead only when that loses less than 1e-13 of row i's mass (e
// times the tail lost), so exact integral break points stay put. Working
// from the top keeps small tails (huge e^eps) exact; the result is exact
// and moves with the row when the row is shifted.
//
// The tail sum is held in registers; locateTailPlain, its plain reference
// with a ddSum, gives the same position bit for bit
// (TestLocateTailMatchesPlain).
func locateTail(prev *rowState, need dd, e float64) float64 {
	if referenceOnly {
		return locateTailPlain(prev, need, e)
	}
	M := len(prev.m)
	if need.sign() <= 0 {
		return prev.x[M]
	}
	// The tail above piece k, T - F(x[k+1]), is the compensated sum
	// (s, c): ddSum.add's operations, held in registers (a ddSum added to
	// in a loop stays in memory).
	var s, c float64
	needF := need.float()
	sure := needF*(1-1e-12) - 1e-300
	pm := prev.m[:M]
	for k := M - 1; k >= 0; k-- {
		pk := pm[k]
		if pk <= 0 || s+pk < sure {
			var err float64
			s, err = twoSum(s, pk) // certainly not this piece
			c += err
			continue
		}
		tail := ddSum{s, c}
		rem := need.sub(tail.dd()).float() // need minus the tail above piece k
		if pk >= rem {
			return tailPoint(prev, k, rem, e)
		}
		var err float64
		s, err = twoSum(s, pk)
		c += err
	}
	return prev.x[0]
}

// locateTailPlain is locateTail's plain reference: the tail above piece k
// in a ddSum.
func locateTailPlain(prev *rowState, need dd, e float64) float64 {
	M := len(prev.m)
	if need.sign() <= 0 {
		return prev.x[M]
	}
	var S ddSum
	needF := need.float()
	for k := M - 1; k >= 0; k-- {
		pk := prev.m[k]
		if pk <= 0 || S.s+pk < needF*(1-1e-12)-1e-300 {
			S.add(pk) // certainly not this piece
			continue
		}
		rem := need.sub(S.dd()).float() // need minus the tail above piece k
		if pk >= rem {
			return tailPoint(prev, k, rem, e)
		}
		S.add(pk)
	}
	return prev.x[0]
}

// tailPoint returns where in piece k of prev the tail's mass reaches what
// the step needs, rem of it lying in the piece (rem <= its mass): the
// point rem / P_k of its width below its top, snapped to the 2^-20 grid
// (locateTail's doc comment says how).
func tailPoint(prev *rowState, k int, rem, e float64) float64 {
	pk, lo, hi := prev.m[k], prev.x[k], prev.x[k+1]
	w := (rem / pk) * (hi - lo)
	g := math.Ceil(w*gridScale) / gridScale
	if d := g - gridStep; d >= 0 && (w-d)*gridScale < 1e-6 && e*pk*(w-d)/(hi-lo) < 1e-13 {
		g = d
	}
	return clamp(hi-g, lo, hi)
}

func clamp(v, lo, hi float64) float64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// step5 computes row i = prev.i+1 of Algorithm 5 (docs/algorithms.md's
// restatement of Appendix C) into dst. With F the prefix mass of f_{i-1},
// T = F(i-1) the mass row i-1 actually holds, A = min(pi_i, delta) and
// s0 = delta - e^eps c0:
//
//	b solves F(b) = s0 (b = bottom when s0 = 0), in closed form on its piece;
//	c solves G(c) = pi_i, G(c) = A + e^eps (T - F(c)) + [c0 + e^-eps (F(c) - delta)]_+,
//	  i.e. F(c) = (e^eps T - e^-eps F(b) - pi_i + A) / (e^eps - e^-eps) when c >= b,
//	  else F(c) = T - e^-eps (pi_i - A) and the zero region ends at c;
//	f_i = 0 on (0, b], e^-eps f_{i-1} on (b, c], e^eps f_{i-1} on (c, i-1], A on (i-1, i].
//
// b and c are rounded to the grid 2^-20: b to the nearest grid point
// unless that puts F(b) more than 1e-12 delta above s0 (then downwards), c
// so that the e^eps region is not smaller than needed (locateTail); both
// land exactly on integral break points.
// Each piece's value is rounded in the safe direction (ceilDiv, floorMul);
// the mass left over by rounding and by the grid is moved into the pieces
// next to c, within their DP bounds, so the row sums to pi_i.
func (c *consts) step5(prev *rowState, q float64, dst *rowState, sc *scratch5, qConst int64) {
	i := prev.i + 1
	pi := c.nextPi(prev.pi, q)
	s0 := c.lowerTarget(prev.pi, pi)
	A := math.Min(pi, c.delta)
	x, pm := prev.x, prev.m
	M := len(pm)
	T := prev.total
	sc.newPts = append(sc.newPts[:0], float64(i))

	// b: row i leaves (0, b] empty; f_{i-1} has mass F(b) <= s0 there.
	// F(b) may exceed s0 by tol = 1e-12 delta when that keeps b on an
	// exact break point (integral L); this is the only allowance.
	tol := 1e-12 * c.delta
	kb, P := M, 0.0
	for k := 0; k < M; k++ {
		if P+pm[k] > s0 {
			kb = k
			break
		}
		P += pm[k]
	}
	b, Fb := x[M], T
	if kb < M {
		b, Fb = cutGrid(x[kb], x[kb+1], pm[kb], P, s0, s0, tol)
	}

	// c: the cross-over between the e^-eps and the e^eps regions, from the
	// tail mass above it, T - F(c) = (pi - A - e^-eps (T - F(b))) / (e^eps - e^-eps)
	// when c >= b; otherwise the e^eps region reaches below b, T - F(c) =
	// e^-eps (pi - A), and the zero region ends at c (F(c) <= F(b) <= s0 + tol).
	lowEnd, cpos := b, x[M]
	if den := c.e - c.einv; den > 0 && M > 0 {
		above := T.sub(Fb) // mass of row i-1 above b
		tail1 := ddFrom(pi - A).sub(above.mulF(c.einv)).div(ddFrom(den))
		switch {
		case tail1.sign() <= 0:
			cpos = x[M]
		case tail1.sub(above).sign() < 0:
			cpos = math.Max(locateTail(prev, tail1, c.e), b)
		default:
			cpos = math.Min(locateTail(prev, ddFrom(pi-A).mulF(c.einvUp), c.e), b)
			lowEnd = cpos
		}
	}

	// Build row i: pieces of row i-1 above lowEnd, cut at c, plus the top.
	dst.i, dst.pi = i, pi
	var sum, sum2 ddSum
	if referenceOnly {
		sum, sum2 = c.build5Plain(prev, lowEnd, cpos, dst, sc)
	} else {
		sum, sum2 = c.build5(prev, lowEnd, cpos, dst, sc)
	}
	dst.x = append(dst.x, float64(i))
	dst.m = append(dst.m, A)
	sum.add(A)
	sum.add(sum2.s)
	sum.add(sum2.c)
	n := len(dst.m)

	// bounds returns the DP bounds of new piece k: e^-eps and e^eps times
	// the mass row i-1 puts on it (0 and A for the top piece).
	bounds := func(k int) (float64, float64) {
		if k == n-1 {
			return 0, A
		}
		// The piece of row i-1 containing new piece k.
		j := sort.SearchFloat64s(x[1:], dst.x[k+1])
		v := portion(pm[j], dst.x[k], dst.x[k+1], x[j], x[j+1])
		return c.ceilDiv(v), c.floorMul(v)
	}
	// set gives piece k the value v clamped to its bounds and records it.
	dst.adj = dst.adj[:0]
	set := func(k int, v float64) {
		lo, hi := bounds(k)
		v = clamp(v, lo, hi)
		if old := dst.m[k]; v != old {
			dst.m[k] = v
			sum.add(-old)
			sum.add(v)
			dst.adj = append(dst.adj, adjust{off: float64(i) - dst.x[k+1], val: v})
		}
	}
	// fill sets piece k to what the row lacks: pi minus all other pieces
	// (exact; no increment that a huge piece would round away).
	fill := func(k int) float64 {
		set(k, ddFrom(pi).sub(sum.dd()).addF(dst.m[k]).float())
		return ddFrom(pi).sub(sum.dd()).float()
	}

	if prev.frozen {
		// Frozen: re-apply the previous row's corrected values.
		fi := float64(i)
		for _, a := range prev.adj {
			hi := fi - a.off
			k := sort.SearchFloat64s(dst.x[1:], hi) // piece k is (x[k], x[k+1]]
			if k < n && dst.x[k+1] == hi {
				set(k, a.val)
			}
		}
	} else {
		// Residual: move it into the pieces next to c, within their bounds.
		// A residual below a few ulps of pi is left alone (a piece could not
		// take it without rounding it away).
		firstUpper := sort.SearchFloat64s(dst.x[1:], cpos+gridStep/2)
		tiny := 4e-16 * pi
		r := ddFrom(pi).sub(sum.dd()).float()
		for k := firstUpper - 1; k >= 0 && r > tiny; k-- {
			r = fill(k)
		}
		for k := firstUpper; k < n && r < -tiny; k++ {
			r = fill(k)
		}
	}
	dst.total = sum.dd()
	updateFreeze(prev, dst, qConst)
}

// build5 writes the pieces of row i-1 (prev) above lowEnd into dst, cut at
// cpos, with their values: e^-eps times the mass below cpos rounded up,
// e^eps times the mass above it rounded down (step5). It appends the
// points it cuts at to sc.newPts and returns the values' sums: piece k's
// value in the first for even k and in the second for odd k, the piece
// cut off below cpos in the second in its place (two compensated
// accumulators halve the dependency chain). Whole pieces below cpos and
// whole pieces above it go in runs of their own. Its plain reference is
// build5Plain, one loop with a case per piece; both give the same rows
// and sums bit for bit (TestBuild5MatchesPlain).
func (c *consts) build5(prev *rowState, lowEnd, cpos float64, dst *rowState, sc *scratch5) (sum, sum2 ddSum) {
	x, pm := prev.x, prev.m
	M := len(pm)
	xs := slices.Grow(dst.x[:0], M+3)
	ms := slices.Grow(dst.m[:0], M+2)
	xs = append(xs, lowEnd)
	k := 0
	for k < M && x[k+1] <= lowEnd {
		k++
	}
	for k < M {
		lo, hi := x[k], x[k+1]
		if lowEnd <= lo && (hi <= cpos || cpos <= lo) {
			// A run of whole pieces: those up to c (e^-eps, rounded up),
			// or those above it to the top (e^eps, rounded down).
			below, end := hi <= cpos, M
			if below {
				end = k + sort.Search(M-k, func(j int) bool { return x[k+j+1] > cpos })
			}
			xs = append(xs, x[k+1:end+1]...)
			n0 := len(ms)
			ms = slices.Grow(ms, end-k)[:n0+end-k]
			if k&1 == 0 {
				sum, sum2 = c.scaleRun(ms[n0:], pm[k:end], below, sum, sum2)
			} else {
				sum2, sum = c.scaleRun(ms[n0:], pm[k:end], below, sum2, sum)
			}
			k = end
			continue
		}
		// A piece cut at lowEnd or at c.
		v, cut, cv := c.piece5(prev, k, lowEnd, cpos, sc)
		if cut {
			xs = append(xs, cpos)
			ms = append(ms, cv)
			sum2.add(cv)
		}
		xs = append(xs, hi)
		ms = append(ms, v)
		if k&1 == 0 {
			sum.add(v)
		} else {
			sum2.add(v)
		}
		k++
	}
	dst.x, dst.m = xs, ms
	return sum, sum2
}

// build5Plain is build5's plain reference: one loop over the pieces of row
// i-1, each taken by piece5.
func (c *consts) build5Plain(prev *rowState, lowEnd, cpos float64, dst *rowState, sc *scratch5) (sum, sum2 ddSum) {
	x := prev.x
	dst.x = append(dst.x[:0], lowEnd)
	dst.m = dst.m[:0]
	for k := range len(prev.m) {
		if x[k+1] <= lowEnd {
			continue
		}
		v, cut, cv := c.piece5(prev, k, lowEnd, cpos, sc)
		if cut {
			dst.x = append(dst.x, cpos)
			dst.m = append(dst.m, cv)
			sum2.add(cv)
		}
		dst.x = append(dst.x, x[k+1])
		dst.m = append(dst.m, v)
		if k&1 == 0 {
			sum.add(v)
		} else {
			sum2.add(v)
		}
	}
	return sum, sum2
}

// piece5 returns the value in row i of the part of piece k of row i-1 (a
// piece ending above lowEnd) above max(lowEnd, cpos) and, when cpos cuts
// the piece, cut and the value of its part from lowEnd up to cpos; it
// appends the points it cuts at to sc.newPts.
func (c *consts) piece5(prev *rowState, k int, lowEnd, cpos float64, sc *scratch5) (v float64, cut bool, cv float64) {
	lo, hi, m := prev.x[k], prev.x[k+1], prev.m[k]
	s := lo
	if lowEnd > lo {
		s = lowEnd
		sc.newPts = append(sc.newPts, s)
	}
	if cpos > s && cpos < hi {
		sc.newPts = append(sc.newPts, cpos)
		cut, cv = true, c.ceilDiv(portion(m, s, cpos, lo, hi))
		s = cpos
	}
	switch {
	case s == lo && hi <= cpos:
		v = m * c.einvUp
		if v < 0x1p-1000 {
			v = c.ceilDivTiny(m, v)
		}
	case hi <= cpos:
		v = c.ceilDiv(portion(m, s, hi, lo, hi))
	case s == lo:
		v = m * c.eDown
		if v < 0x1p-1000 {
			v = c.floorMulTiny(m, v)
		}
	default:
		v = c.floorMul(portion(m, s, hi, lo, hi))
	}
	return v, cut, cv
}

func sumDD(v []float64) dd {
	var s ddSum
	for _, x := range v {
		s.add(x)
	}
	return s.dd()
}
