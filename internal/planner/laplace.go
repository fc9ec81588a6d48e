package planner

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/integrate/quad"
)

// This file integrates functions of the noisy value x = i + Lap(1/eps) over the
// reporting region x > T of the stability-based histogram:
//
//	K_i[h] = int_T^inf h(x) (eps/2) e^{-eps |x - i|} dx.
//
// Functions that are piecewise "quadratic times an exponential" are integrated
// in closed form (exact); any other function goes through adaptive
// Gauss-Legendre quadrature (gonum's nodes) on a window of 2*window/eps
// around max(T, i), outside of which the Laplace weight is below e^-window.

// window is the half width, in units of 1/eps, of the region that carries the
// integral: e^-52 is about 2.6e-23, far below float64 resolution relative to
// the part of the integral near the centre for the polynomially growing
// integrands used here.
const window = 52.0

// kernel holds the Laplace rate eps and the reporting threshold T.
type kernel struct {
	eps, t float64
}

// expPoly is (c[0] + c[1] x + c[2] x^2) e^{-gamma x} on [lo, hi); hi may be +Inf.
type expPoly struct {
	lo, hi float64
	c      [3]float64
	gamma  float64
}

// cdfBelow returns P(i + Lap(1/eps) <= x).
func (k kernel) cdfBelow(x, i float64) float64 {
	if x <= i {
		return 0.5 * math.Exp(-k.eps*(i-x))
	}
	return 1 - 0.5*math.Exp(-k.eps*(x-i))
}

// exact returns K_i[h] for h the sum of terms, in closed form.
func (k kernel) exact(terms []expPoly, i float64) float64 {
	var s float64
	for _, p := range terms {
		lo, hi := math.Max(p.lo, k.t), p.hi
		if !(hi > lo) {
			continue
		}
		if lo < i {
			s += k.left(p, lo, math.Min(hi, i), i)
		}
		if hi > i {
			s += k.right(p, math.Max(lo, i), hi, i)
		}
	}
	return s
}

// right integrates term p against the kernel on [a, b] with a >= i.
func (k kernel) right(p expPoly, a, b, i float64) float64 {
	lambda := k.eps + p.gamma
	expo := -p.gamma*a - k.eps*(a-i)
	s := shiftPoly(p.c, a, 1)
	return 0.5 * k.eps * math.Exp(expo) * polyMoments(s, lambda, b-a)
}

// left integrates term p against the kernel on [a, b] with b <= i, where
// the weight is e^{-gamma x} e^{-eps (i - x)}: it decays from the end where
// it is largest, so no exponential is ever evaluated above 1.
func (k kernel) left(p expPoly, a, b, i float64) float64 {
	mu := p.gamma - k.eps
	if mu >= 0 { // decreasing in x: expand from a
		expo := -p.gamma*a - k.eps*(i-a)
		return 0.5 * k.eps * math.Exp(expo) * polyMoments(shiftPoly(p.c, a, 1), mu, b-a)
	}
	expo := -p.gamma*b - k.eps*(i-b) // increasing in x: expand from b, x = b - t
	return 0.5 * k.eps * math.Exp(expo) * polyMoments(shiftPoly(p.c, b, -1), -mu, b-a)
}

// shiftPoly returns the coefficients in t of c(a + sign*t).
func shiftPoly(c [3]float64, a, sign float64) [3]float64 {
	return [3]float64{
		c[0] + c[1]*a + c[2]*a*a,
		sign * (c[1] + 2*c[2]*a),
		c[2],
	}
}

// polyMoments returns int_0^L (s0 + s1 t + s2 t^2) e^{-lambda t} dt for
// lambda >= 0 and L >= 0 (L may be +Inf when lambda > 0).
func polyMoments(s [3]float64, lambda, l float64) float64 {
	if l <= 0 {
		return 0
	}
	m := moments(lambda, l)
	return s[0]*m[0] + s[1]*m[1] + s[2]*m[2]
}

// moments returns m_k = int_0^L t^k e^{-lambda t} dt for k = 0, 1, 2,
// accurately for every lambda >= 0: a power series when lambda L < 2 (no
// cancellation), the closed forms otherwise.
func moments(lambda, l float64) [3]float64 {
	if math.IsInf(l, 1) {
		return [3]float64{1 / lambda, 1 / (lambda * lambda), 2 / (lambda * lambda * lambda)}
	}
	x := lambda * l
	if x < 2 {
		// m_k = L^{k+1} sum_n (-x)^n / (n! (n+k+1))
		var m [3]float64
		for k := 0; k < 3; k++ {
			term, sum := 1.0, 0.0
			for n := 0; n < 60; n++ {
				c := term / float64(n+k+1)
				sum += c
				if math.Abs(c) < 1e-18*math.Abs(sum) {
					break
				}
				term *= -x / float64(n+1)
			}
			m[k] = sum * math.Pow(l, float64(k+1))
		}
		return m
	}
	e := math.Exp(-x)
	m0 := -math.Expm1(-x) / lambda
	m1 := (m0 - l*e) / lambda
	m2 := (2*m1 - l*l*e) / lambda
	return [3]float64{m0, m1, m2}
}

// glX and glW are the 10-point Gauss-Legendre nodes and weights on [-1, 1],
// computed once by gonum (read-only after package initialisation).
var glX, glW = func() ([]float64, []float64) {
	x, w := make([]float64, 10), make([]float64, 10)
	quad.Legendre{}.FixedLocations(x, w, -1, 1)
	return x, w
}()

// gl integrates f on [a, b] with the 10-point Gauss-Legendre rule.
func gl(f func(float64) float64, a, b float64) float64 {
	h, m := (b-a)/2, (a+b)/2
	var s float64
	for j, x := range glX {
		s += glW[j] * f(m+h*x)
	}
	return s * h
}

// adaptive refines the Gauss-Legendre estimate whole of int_a^b f by
// bisection until two halves agree with it to tol.
func adaptive(f func(float64) float64, a, b, whole, tol float64, depth int) float64 {
	m := (a + b) / 2
	l, r := gl(f, a, m), gl(f, m, b)
	if depth == 0 || math.Abs(l+r-whole) <= tol || !(m > a && b > m) {
		return l + r
	}
	return adaptive(f, a, m, l, tol/2, depth-1) + adaptive(f, m, b, r, tol/2, depth-1)
}

// maxDepth bounds the bisection: 2^10 pieces per segment is far more than a
// smooth integrand needs, and stops the refinement where rounding makes an
// integrand look rough.
const maxDepth = 10

// numeric returns K_i[h] by adaptive quadrature, with h given as a function
// of the offset t = x - i (so that integrands like g(i+t) - g(i) can be
// evaluated without cancellation at huge i). breaks lists the points x where
// h is not smooth (they become segment ends); h must be finite on [T, inf)
// and grow at most polynomially.
func (k kernel) numeric(h func(t float64) float64, breaks []float64, i float64) float64 {
	// Offsets relative to i: the window is [lo, hi] around c = max(T, i) - i.
	c := math.Max(k.t, i) - i
	lo := math.Max(k.t, i-window/k.eps) - i
	hi := c + window/k.eps
	// The weight relative to its value at c, so nothing underflows when i is
	// far below T; the factor is put back at the end.
	f := func(t float64) float64 {
		return h(t) * 0.5 * k.eps * math.Exp(-k.eps*(math.Abs(t)-c))
	}
	pts := []float64{lo, hi, c}
	step := 8 / k.eps // the weight falls by e^-8 per segment
	for t := c + step; t < hi; t += step {
		pts = append(pts, t)
	}
	for t := -step; t > lo; t -= step {
		pts = append(pts, t)
	}
	for _, b := range breaks {
		if t := b - i; t > lo && t < hi {
			pts = append(pts, t)
		}
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	coarse := make([]float64, len(pts)-1)
	var total float64
	for j := range coarse {
		coarse[j] = gl(f, pts[j], pts[j+1])
		total += math.Abs(coarse[j])
	}
	tol := 1e-14 * total
	if tol == 0 {
		return 0
	}
	var s float64
	for j := range coarse {
		if math.Abs(coarse[j]) < tol { // negligible far tail
			s += coarse[j]
			continue
		}
		s += adaptive(f, pts[j], pts[j+1], coarse[j], tol, maxDepth)
	}
	return s * math.Exp(-k.eps*c)
}

// numericX is numeric for h given as a function of x.
func (k kernel) numericX(h func(x float64) float64, breaks []float64, i float64) float64 {
	return k.numeric(func(t float64) float64 { return h(i + t) }, breaks, i)
}
