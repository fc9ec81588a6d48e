package sanitize

import (
	"math"
)

// ceilDiv returns a float64 r, at most a few ulps above e^-eps v, with
// E*r >= v exactly: the lower-bound value e^-eps * v rounded so that the
// constraint "prev <= e^eps cur" holds exactly. (The first guess uses a
// multiplier rounded up by two ulps, so the exact check almost never has
// to step: that keeps the branch predictable.)
func (c *consts) ceilDiv(v dd) float64 {
	r := math.Max(v.hi*c.einvUp, 0)
	for n := 0; n < 8; n++ {
		p, e := twoProd(c.e, r)
		if (dd{p, e}).sub(v).sign() >= 0 {
			break
		}
		r = nextUp(r)
	}
	return r
}

// ceilDiv1 is ceilDiv for a float64 v >= 0. With einvUp = fl(1/E) + 4 ulps,
// fl(v einvUp) >= v/E (1 + 2^-52) for normal results, so the exact check is
// only needed when the result may be subnormal.
func (c *consts) ceilDiv1(v float64) float64 {
	r := v * c.einvUp
	if r < 0x1p-1000 {
		r = c.ceilDivTiny(v, r)
	}
	return r
}

// tinyScale lifts the operands of the tiny paths' exact checks out of the
// subnormal range. Scaling by a power of two is exact there (the values are
// below 2^-990, so nothing overflows), and the FMA of the scaled values then
// rounds E r - v (or E v - r) to a normal number of the same sign. Unscaled,
// a difference below half the smallest subnormal rounded to -0, which is not
// < 0: the check passed a result up to 2^-1075 on the wrong side of the
// bound (found by TestTinyRoundingExact, issue 38).
const tinyScale = 0x1p200

func (c *consts) ceilDivTiny(v, r float64) float64 {
	for n := 0; n < 8 && math.FMA(c.e, r*tinyScale, -v*tinyScale) < 0; n++ {
		r = nextUp(r)
	}
	return r
}

// floorMul returns a float64 r, at most a few ulps below e^eps v, with
// r <= E*v exactly: the saturated value e^eps * v rounded so that
// "cur <= e^eps prev" holds exactly.
func (c *consts) floorMul(v dd) float64 {
	w := v.mulF(c.e)
	r := v.hi * c.eDown
	for n := 0; n < 8 && w.sub(ddFrom(r)).sign() < 0; n++ {
		r = nextDown(r)
	}
	return math.Max(r, 0)
}

// floorMul1 is floorMul for a float64 v >= 0. With eDown = E - 4 ulps,
// fl(v eDown) <= E v (1 - 2^-52) for normal results, so the exact check is
// only needed when the result may be subnormal.
func (c *consts) floorMul1(v float64) float64 {
	r := v * c.eDown
	if r < 0x1p-1000 {
		r = c.floorMulTiny(v, r)
	}
	return r
}

func (c *consts) floorMulTiny(v, r float64) float64 {
	for n := 0; n < 8 && math.FMA(c.e, v*tinyScale, -r*tinyScale) < 0; n++ {
		r = nextDown(r)
	}
	return r
}

// lowerTarget returns the prefix budget s0 = delta - max(0, atomExcess) of
// row i: the most mass of f_{i-1} that row i may leave at zero. (In the
// paper: s0 = delta - e^eps c0 with c0 = [e^-eps pi_{i-1,0} - pi_{i,0}]_+.)
func (c *consts) lowerTarget(prevPi, pi float64) float64 {
	a := c.atomExcess(prevPi, pi).float()
	s0 := c.delta
	if a > 0 {
		s0 -= a
	}
	if s0 < 0 {
		s0 = 0
	}
	return s0
}

// scaleRun writes into out (as long as pm) the values of whole pieces of
// masses pm on one side of the cut: ceilDiv1 (e^-eps, rounded up) when
// below, floorMul1 (e^eps, rounded down) otherwise, and adds them to two
// compensated sums in turn, out[0] to a, out[1] to b, out[2] to a, and so
// on. It is the loop most of a row's pieces go through (Algorithm 5's runs
// in build5, Algorithm 4's saturated tokens in step4). Its sums live in
// registers (a ddSum whose add is called in a loop stays in memory, and
// the store and load on each add doubled the dependency chain) and the loop
// calls nothing: a run with a tiny product (below 2^-1000, whose rounding
// needs its exact check) is done again by scaleRunPlain, its plain
// reference, which gives the same values and sums bit for bit
// (TestScaleRunMatchesPlain): the same operations, in the same order.
func (c *consts) scaleRun(out, pm []float64, below bool, a, b ddSum) (ddSum, ddSum) {
	if referenceOnly {
		return c.scaleRunPlain(out, pm, below, a, b)
	}
	out = out[:len(pm)]
	mul := c.eDown
	if below {
		mul = c.einvUp
	}
	s0, c0, s1, c1 := a.s, a.c, b.s, b.c
	tiny := false
	j := 0
	for ; j+1 < len(pm); j += 2 {
		v0, v1 := pm[j]*mul, pm[j+1]*mul
		tiny = tiny || v0 < 0x1p-1000 || v1 < 0x1p-1000
		out[j], out[j+1] = v0, v1
		var e0, e1 float64
		s0, e0 = twoSum(s0, v0)
		c0 += e0
		s1, e1 = twoSum(s1, v1)
		c1 += e1
	}
	if j < len(pm) {
		v := pm[j] * mul
		tiny = tiny || v < 0x1p-1000
		out[j] = v
		var e float64
		s0, e = twoSum(s0, v)
		c0 += e
	}
	if tiny {
		return c.scaleRunPlain(out, pm, below, a, b)
	}
	return ddSum{s0, c0}, ddSum{s1, c1}
}

// scaleRunPlain is scaleRun's plain reference: one piece at a time through
// ceilDiv1 or floorMul1 and ddSum.add.
func (c *consts) scaleRunPlain(out, pm []float64, below bool, a, b ddSum) (ddSum, ddSum) {
	for j, m := range pm {
		v := c.floorMul1(m)
		if below {
			v = c.ceilDiv1(m)
		}
		out[j] = v
		if j&1 == 0 {
			a.add(v)
		} else {
			b.add(v)
		}
	}
	return a, b
}
