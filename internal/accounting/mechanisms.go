package accounting

import (
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/checks"
)

// maxEpsilon bounds the epsilon of one mechanism: a larger loss would make
// the grid arrays (2 eps / step points for Laplace) unreasonably long.
const maxEpsilon = 50

// validEpsilon checks 0 <= eps <= maxEpsilon.
func validEpsilon(field string, eps float64) error {
	if !(eps >= 0 && eps <= maxEpsilon) {
		return checks.Errorf(field, "must be a number from 0 to %d", maxEpsilon)
	}
	return nil
}

// validGrid reports a grid not made by NewGrid or DefaultGrid.
func validGrid(g Grid) error {
	if !g.valid() {
		return errors.New("accounting: grid not made by NewGrid or DefaultGrid")
	}
	return nil
}

// Generic returns the PLD of the dominating pair of every (eps, delta)-DP
// mechanism (Kairouz, Oh and Viswanath 2015; Murtagh and Vadhan): P puts
// delta on an outcome Q never produces and splits the rest e^eps : 1 over
// two outcomes that Q weights 1 : e^eps. Its losses are +infinity (mass
// delta), +eps (mass (1-delta) e^eps/(1+e^eps)) and -eps (the rest). Any
// (eps, delta)-DP mechanism's hockey-stick curve lies below this pair's, so
// composing this PLD bounds composing the mechanism.
func Generic(g Grid, eps, delta float64) (*PLD, error) {
	var errs checks.Errors
	errs.AddErr("grid", validGrid(g))
	errs.AddErr("epsilon", validEpsilon("epsilon", eps))
	if !(delta >= 0 && delta <= 1) {
		errs.Add("delta", "must be a number from 0 to 1")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	// p_plus = e^eps/(1+e^eps) computed without overflow.
	pPlus := 1 / (1 + math.Exp(-eps))
	m := map[int]float64{}
	m[g.up(eps)] += (1 - delta) * pPlus
	m[g.up(-eps)] += (1 - delta) * (1 - pPlus)
	return fromMasses(g, m, delta), nil
}

// Laplace returns the PLD of the Laplace mechanism that is eps-DP: noise of
// scale sensitivity/eps added to a query of that sensitivity. Its privacy
// loss is eps with mass 1/2, -eps with mass e^-eps/2, and continuous in
// between with P(L > t) = 1 - e^(-(eps-t)/2)/2; each grid cell's mass goes
// to the cell's upper end (pessimistic).
func Laplace(g Grid, eps float64) (*PLD, error) {
	var errs checks.Errors
	errs.AddErr("grid", validGrid(g))
	errs.AddErr("epsilon", validEpsilon("epsilon", eps))
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if eps == 0 {
		return Identity(g)
	}
	// tail(t) = P(L > t) - P(L >= eps) = P(t < L < eps), the continuous part
	// above t, for t in [-eps, eps]: (1 - e^(-(eps-t)/2))/2.
	tail := func(t float64) float64 {
		t = math.Max(-eps, math.Min(eps, t))
		return -math.Expm1(-(eps-t)/2) / 2
	}
	lo, hi := g.up(-eps), g.up(eps)
	m := make(map[int]float64, hi-lo+1)
	for i := lo; i <= hi; i++ {
		// mass of the continuous part in ((i-1) step, i step]
		m[i] = tail(g.loss(i-1)) - tail(g.loss(i))
	}
	m[hi] += 0.5
	m[lo] += math.Exp(-eps) / 2
	return fromMasses(g, m, 0), nil
}

// DiscreteLaplace returns the PLD of the discrete Laplace (two-sided
// geometric) mechanism that is eps-DP for integer queries of the given
// sensitivity: noise z with P(z) proportional to e^(-eps |z| / sensitivity).
// On neighbours 0 and sensitivity the loss is eps for outputs <= 0, -eps for
// outputs >= sensitivity and eps (sensitivity - 2y)/sensitivity for the
// outputs y in between.
func DiscreteLaplace(g Grid, eps float64, sensitivity int) (*PLD, error) {
	var errs checks.Errors
	errs.AddErr("grid", validGrid(g))
	errs.AddErr("epsilon", validEpsilon("epsilon", eps))
	if sensitivity < 1 || sensitivity > 1<<16 {
		errs.Add("sensitivity", "must be an integer from 1 to 65536")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if eps == 0 {
		return Identity(g)
	}
	t := eps / float64(sensitivity)
	a := math.Exp(-t)
	m := map[int]float64{}
	m[g.up(eps)] += 1 / (1 + a)
	m[g.up(-eps)] += math.Exp(-eps) / (1 + a)
	for y := 1; y < sensitivity; y++ {
		m[g.upComputed(t*float64(sensitivity-2*y))] += (1 - a) / (1 + a) * math.Exp(-t*float64(y))
	}
	return fromMasses(g, m, 0), nil
}

// FromProfile returns a PLD that dominates every mechanism whose privacy
// profile (hockey-stick curve) is at most profile, by connecting the dots
// (Doroshenko, Ghazi, Kamath, Kumar and Manurangsi, PETS 2022): it takes the
// grid points e_0 < ... < e_n covering [-epsMax, epsMax] and puts on them the
// masses whose hockey-stick curve passes through (e_i, profile(e_i)) and is
// linear in e^eps in between. A hockey-stick curve is convex in e^eps, so
// the chord lies above it; beyond e_n the curve is flat at profile(e_n),
// which is the infinity mass. profile must be a true privacy profile:
// nonincreasing and convex in e^eps with profile(eps) = 0 for eps beyond
// the mechanism's largest finite loss, or at least epsMax.
//
// stride thins the grid: the dots are every stride-th grid point (second
// differences of the profile on the finest grid lose precision).
func FromProfile(g Grid, profile func(eps float64) float64, epsMax float64, stride int) (*PLD, error) {
	var errs checks.Errors
	errs.AddErr("grid", validGrid(g))
	errs.AddErr("epsilon_max", validEpsilon("epsilon_max", epsMax))
	if stride < 1 {
		errs.Add("stride", "must be at least 1")
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	hi := g.up(epsMax)
	var idx []int
	for i := hi; i > -hi; i -= stride {
		idx = append(idx, i)
	}
	idx = append(idx, -hi)
	// idx is decreasing; x_i = e^(e_i), d_i = profile(e_i).
	n := len(idx)
	x := make([]float64, n)
	d := make([]float64, n)
	for k, i := range idx {
		x[k] = math.Exp(g.loss(i))
		d[k] = profile(g.loss(i))
		if math.IsNaN(d[k]) || d[k] < 0 || d[k] > 1 {
			return nil, fmt.Errorf("accounting: profile(%g) = %g is not a probability", g.loss(i), d[k])
		}
	}
	inf := d[0]
	m := map[int]float64{}
	total := inf
	// slope of the curve in x right of point k (0 beyond the largest point).
	right := 0.0
	for k := 0; k < n-1; k++ {
		left := (d[k] - d[k+1]) / (x[k] - x[k+1])
		// mass at e_k: x_k times the slope's increase at x_k; rounding can
		// make a convex profile's increase slightly negative: setting it to 0
		// raises the curve left of e_k (pessimistic).
		w := math.Max(0, x[k]*(right-left))
		m[idx[k]] += w
		total += w
		right = left
	}
	// The lowest point takes the remaining mass.
	rest := 1 - total
	if rest < -1e-9 {
		return nil, fmt.Errorf("accounting: the profile puts mass %g above the lowest loss %g; it is not a privacy profile on [-%g, %g]", total, g.loss(-hi), epsMax, epsMax)
	}
	m[idx[n-1]] += math.Max(0, rest)
	return fromMasses(g, m, inf), nil
}

// FromDistributions returns the PLD of the pair (P, Q) of output
// distributions on finitely many outcomes, given as p and q (each
// nonnegative, summing to 1 within 1e-9): outcome i has loss
// log(p[i]/q[i]), +infinity where q[i] = 0 < p[i]. It is the PLD of
// "remove" direction only; a mechanism whose pair is not symmetric needs
// the larger of both directions' answers.
func FromDistributions(g Grid, p, q []float64) (*PLD, error) {
	var errs checks.Errors
	errs.AddErr("grid", validGrid(g))
	if len(p) != len(q) || len(p) == 0 {
		errs.Add("q", "must have as many outcomes as p, at least one")
	}
	for name, v := range map[string][]float64{"p": p, "q": q} {
		s := 0.0
		for i, x := range v {
			if !(x >= 0 && x <= 1) {
				errs.Add(fmt.Sprintf("%s[%d]", name, i), "must be a probability from 0 to 1")
			}
			s += x
		}
		if math.Abs(s-1) > 1e-9 {
			errs.Add(name, "must sum to 1")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	m := map[int]float64{}
	inf := 0.0
	for i := range p {
		switch {
		case p[i] == 0:
		case q[i] == 0:
			inf += p[i]
		default:
			m[g.upComputed(math.Log(p[i]/q[i]))] += p[i]
		}
	}
	return fromMasses(g, m, inf), nil
}
