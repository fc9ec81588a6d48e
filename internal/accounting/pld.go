package accounting

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/pwsd/pwsd/internal/checks"
)

// DefaultGridExponent is the grid pwsd's ledger uses: privacy losses are
// rounded up to multiples of 2^-14 nats (about 6.1e-5). A power of two makes
// loss/step exact in binary floating point, so rounding a loss up to the grid
// is exact, and the step is small enough that 504 releases at epsilon 0.05
// lose at most 504 * 2^-14 = 0.031 of composed epsilon to rounding.
const DefaultGridExponent = 14

// TailBound is the largest probability mass a composition truncates from
// each end of a distribution. The upper tail is moved to the infinity mass
// (so it is paid for in delta, never dropped), the lower tail onto the
// lowest kept loss (which only raises losses, so it is free and pessimistic).
const TailBound = 1e-15

// Grid is the uniform grid of privacy losses a PLD lives on: multiples of
// Step() = 2^-exponent nats. PLDs compose only on the same grid.
type Grid struct {
	exp int
}

// NewGrid returns the grid of step 2^-exponent; exponent must lie in [2, 20].
func NewGrid(exponent int) (Grid, error) {
	if exponent < 2 || exponent > 20 {
		return Grid{}, checks.Errorf("grid_exponent", "must be an integer from 2 to 20")
	}
	return Grid{exp: exponent}, nil
}

// DefaultGrid returns the grid of step 2^-DefaultGridExponent.
func DefaultGrid() Grid { return Grid{exp: DefaultGridExponent} }

// Step returns the spacing of the grid in nats.
func (g Grid) Step() float64 { return math.Ldexp(1, -g.exp) }

// Exponent returns the grid's exponent: Step() = 2^-Exponent().
func (g Grid) Exponent() int { return g.exp }

// valid reports whether g was made by NewGrid or DefaultGrid.
func (g Grid) valid() bool { return g.exp >= 2 && g.exp <= 20 }

// up returns the index of the smallest grid point >= loss (exact: the step
// is a power of two, so loss/step is computed without rounding).
func (g Grid) up(loss float64) int { return int(math.Ceil(math.Ldexp(loss, g.exp))) }

// upComputed is up for a loss computed in floating point (a logarithm, a
// product): it first adds a relative 1e-12, far above the rounding error of
// the computation, so that rounding cannot move the loss below the grid
// point the exact loss rounds up to.
func (g Grid) upComputed(loss float64) int { return g.up(loss + 1e-12*(1+math.Abs(loss))) }

// loss returns the privacy loss of grid index i.
func (g Grid) loss(i int) float64 { return math.Ldexp(float64(i), -g.exp) }

// PLD is a pessimistic privacy loss distribution: the distribution of the
// privacy loss log(P(o)/Q(o)) for o ~ P, with every loss rounded up to the
// grid and an atom at +infinity (outcomes P can produce and Q cannot, plus
// every truncation and rounding error the computation has accounted for).
// Every delta and epsilon it answers is an upper bound on the true one.
//
// All the mechanisms pwsd composes have symmetric PLDs (the pair (P, Q) and
// the pair (Q, P) have the same privacy loss distribution), so one PLD per
// mechanism suffices; a PLD is immutable.
type PLD struct {
	grid Grid
	// lo is the grid index of p[0]: p[i] is the mass at loss (lo+i)*step.
	lo int
	p  []float64
	// inf is the mass at +infinity.
	inf float64
}

// Identity returns the PLD of releasing nothing: all mass at loss 0. It is
// the neutral element of Compose.
func Identity(g Grid) (*PLD, error) {
	if !g.valid() {
		return nil, errors.New("accounting: grid not made by NewGrid or DefaultGrid")
	}
	return &PLD{grid: g, p: []float64{1}}, nil
}

// Grid returns the grid p lives on.
func (p *PLD) Grid() Grid { return p.grid }

// InfinityMass returns the mass at +infinity: a lower bound on Delta(eps)
// for every eps.
func (p *PLD) InfinityMass() float64 { return p.inf }

// Len returns the number of grid points p stores (its memory is 8 bytes a
// point plus a constant).
func (p *PLD) Len() int { return len(p.p) }

// fromMasses builds a PLD from grid-indexed masses and an infinity mass,
// truncating the tails (see TailBound).
func fromMasses(g Grid, masses map[int]float64, inf float64) *PLD {
	idx := make([]int, 0, len(masses))
	for i, m := range masses {
		if m > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return &PLD{grid: g, p: []float64{}, inf: inf}
	}
	sort.Ints(idx)
	lo, hi := idx[0], idx[len(idx)-1]
	out := make([]float64, hi-lo+1)
	for _, i := range idx {
		out[i-lo] = masses[i]
	}
	return (&PLD{grid: g, lo: lo, p: out, inf: inf}).truncated()
}

// truncated trims p's tails in place and returns p: leading mass up to
// TailBound is merged into the first kept point (raising its loss is
// pessimistic), trailing mass up to TailBound is added to the infinity mass.
func (p *PLD) truncated() *PLD {
	if len(p.p) == 0 {
		return p
	}
	a, b := 0, len(p.p)
	low := 0.0
	for a < b && low+p.p[a] <= TailBound {
		low += p.p[a]
		a++
	}
	if a == len(p.p) {
		// Everything was lower tail: keep it on the highest point.
		p.lo += len(p.p) - 1
		p.p = []float64{low}
		return p
	}
	high := 0.0
	for b > a+1 && high+p.p[b-1] <= TailBound {
		high += p.p[b-1]
		b--
	}
	p.inf += high
	p.p[a] += low
	p.lo += a
	p.p = p.p[a:b:b]
	return p
}

// Delta returns the hockey-stick divergence at eps, an upper bound on the
// smallest delta for which the mechanism is (eps, delta)-DP:
// inf + sum over losses l > eps of mass(l) * (1 - e^(eps - l)).
func (p *PLD) Delta(eps float64) float64 {
	d := 0.0
	for i := len(p.p) - 1; i >= 0; i-- {
		l := p.grid.loss(p.lo + i)
		if l <= eps {
			break
		}
		d += p.p[i] * -math.Expm1(eps-l)
	}
	return math.Min(1, p.inf+d)
}

// Epsilon returns the smallest eps >= 0 with Delta(eps) <= delta (+Inf when
// the infinity mass alone exceeds delta). Delta is continuous, decreasing
// and piecewise of the form A - e^eps B between consecutive losses, so the
// answer is solved exactly on the piece where it lies.
func (p *PLD) Epsilon(delta float64) float64 {
	if p.inf > delta {
		return math.Inf(1)
	}
	if p.Delta(0) <= delta {
		return 0
	}
	// Walk down from the largest loss: on [l_{j-1}, l_j], only the losses
	// >= l_j count: Delta(eps) = inf + A - e^eps B.
	a, bsum := p.inf, 0.0
	for j := len(p.p) - 1; j >= 0; j-- {
		if p.p[j] == 0 {
			continue
		}
		lj := p.grid.loss(p.lo + j)
		a += p.p[j]
		bsum += p.p[j] * math.Exp(-lj)
		// the next lower loss with mass (or 0, the smallest eps asked)
		k := j - 1
		for k >= 0 && p.p[k] == 0 {
			k--
		}
		lower := 0.0
		if k >= 0 {
			lower = math.Max(0, p.grid.loss(p.lo+k))
		}
		if a-math.Exp(lower)*bsum > delta || lower == 0 {
			eps := math.Log((a - delta) / bsum)
			return math.Max(eps, lower)
		}
	}
	return 0
}

// Compose returns the PLD of running p's mechanism and q's independently:
// the convolution of the two distributions (infinite if either loss is).
// Both must live on the same grid.
func (p *PLD) Compose(q *PLD) (*PLD, error) {
	if p.grid != q.grid {
		return nil, fmt.Errorf("accounting: composing PLDs on grids of step 2^-%d and 2^-%d", p.grid.exp, q.grid.exp)
	}
	inf := 1 - (1-p.inf)*(1-q.inf)
	if len(p.p) == 0 || len(q.p) == 0 {
		return &PLD{grid: p.grid, p: []float64{}, inf: inf}, nil
	}
	c, errL1 := convolve(p.p, q.p)
	// The convolution's rounding error is bounded in L1 by errL1: moving that
	// much mass to +infinity keeps every answer an upper bound.
	out := &PLD{grid: p.grid, lo: p.lo + q.lo, p: c, inf: math.Min(1, inf+errL1)}
	return out.truncated(), nil
}

// SelfCompose returns the PLD of k independent runs of p's mechanism, by
// repeated squaring (about 2 log2 k compositions). k must be >= 0.
func (p *PLD) SelfCompose(k int) (*PLD, error) {
	if k < 0 {
		return nil, checks.Errorf("count", "must be at least 0")
	}
	result, err := Identity(p.grid)
	if err != nil {
		return nil, err
	}
	base := p
	for k > 0 {
		if k&1 == 1 {
			if result, err = result.Compose(base); err != nil {
				return nil, err
			}
		}
		k >>= 1
		if k > 0 {
			if base, err = base.Compose(base); err != nil {
				return nil, err
			}
		}
	}
	return result, nil
}

// Admits returns how many more runs of q's mechanism, composed with p, keep
// the composed epsilon at delta within epsBudget: the largest n in
// [0, limit] with (p + n q).Epsilon(delta) <= epsBudget. It doubles n, then
// bisects, so it costs about 2 log2 n compositions.
func (p *PLD) Admits(q *PLD, epsBudget, delta float64, limit int) (int, error) {
	fits := func(n int) (bool, error) {
		qn, err := q.SelfCompose(n)
		if err != nil {
			return false, err
		}
		c, err := p.Compose(qn)
		if err != nil {
			return false, err
		}
		return c.Epsilon(delta) <= epsBudget, nil
	}
	ok, err := fits(0)
	if err != nil || !ok {
		return 0, err
	}
	good, bad := 0, 1
	for {
		if bad > limit {
			bad = limit + 1
			break
		}
		ok, err := fits(bad)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		good, bad = bad, 2*bad
	}
	for bad-good > 1 {
		mid := good + (bad-good)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			good = mid
		} else {
			bad = mid
		}
	}
	return good, nil
}
