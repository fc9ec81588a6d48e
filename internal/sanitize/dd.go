package sanitize

import "math"

// This file holds the small amount of extended-precision arithmetic the
// tables need. The DP constraints of PWS are tight: a row meets them with
// equality, so an excess of one float64 rounding on a mass of order 1 is
// already 1e-4 of delta = 1e-12. The constructions therefore round every
// saturated value in the safe direction, checked exactly with fused
// multiply-add, and quantities that cancel (1 - pi terms, sub-piece masses)
// are formed as unevaluated sums of two float64 ("double-double", ~106 bits).

// dd is the unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

// twoSum returns s, e with s = fl(a+b) and s + e = a + b exactly.
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

// twoProd returns p, e with p = fl(a*b) and p + e = a*b exactly.
func twoProd(a, b float64) (p, e float64) {
	p = a * b
	e = math.FMA(a, b, -p)
	return p, e
}

func ddFrom(x float64) dd { return dd{hi: x} }

func (a dd) add(b dd) dd {
	s, e := twoSum(a.hi, b.hi)
	e += a.lo + b.lo
	hi, lo := twoSum(s, e)
	return dd{hi, lo}
}

func (a dd) addF(b float64) dd {
	s, e := twoSum(a.hi, b)
	e += a.lo
	hi, lo := twoSum(s, e)
	return dd{hi, lo}
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) sub(b dd) dd { return a.add(b.neg()) }

// mulF returns a*b for a float64 b.
func (a dd) mulF(b float64) dd {
	p, e := twoProd(a.hi, b)
	e += a.lo * b
	hi, lo := twoSum(p, e)
	return dd{hi, lo}
}

// div returns a/b to about 100 bits.
func (a dd) div(b dd) dd {
	q1 := a.hi / b.hi
	r := a.sub(b.mulF(q1))
	q2 := r.hi / b.hi
	r = r.sub(b.mulF(q2))
	q3 := r.hi / b.hi
	hi, lo := twoSum(q1, q2)
	return dd{hi, lo}.addF(q3)
}

func (a dd) float() float64 { return a.hi + a.lo }

// sign returns -1, 0 or +1 for the exact value of a.
func (a dd) sign() int {
	switch {
	case a.hi > 0:
		return 1
	case a.hi < 0:
		return -1
	case a.lo > 0:
		return 1
	case a.lo < 0:
		return -1
	}
	return 0
}

// ddSum accumulates a sum of float64 with compensation.
type ddSum struct{ s, c float64 }

func (z *ddSum) add(x float64) {
	// TwoSum: the exact error term of z.s + x in six flops, no branch
	// (the same term Fast2Sum gives after ordering the operands by
	// magnitude: both are exact).
	s, e := twoSum(z.s, x)
	z.c += e
	z.s = s
}

func (z *ddSum) dd() dd {
	hi, lo := twoSum(z.s, z.c)
	return dd{hi, lo}
}

// ddDiff returns x - y exactly as a dd.
func ddDiff(x, y float64) dd {
	s, e := twoSum(x, -y)
	return dd{s, e}
}

// portion returns m * (x2-x1)/(hi-lo): the mass a piece (lo, hi] of mass m
// puts on its sub-interval (x1, x2] under a constant density, to ~100 bits.
func portion(m, x1, x2, lo, hi float64) dd {
	if x1 == lo && x2 == hi {
		return dd{hi: m}
	}
	r := ddDiff(x2, x1).div(ddDiff(hi, lo))
	return r.mulF(m)
}

// nextUp returns the next float64 above x (x finite).
func nextUp(x float64) float64 {
	switch {
	case x > 0:
		return math.Float64frombits(math.Float64bits(x) + 1)
	case x == 0:
		return math.SmallestNonzeroFloat64
	}
	return -math.Float64frombits(math.Float64bits(-x) - 1)
}

// nextDown returns the next float64 below x (x finite).
func nextDown(x float64) float64 { return -nextUp(-x) }
