package sanitize

import (
	"math"
)

// maxEffectiveEpsilon caps epsilon in the arithmetic: e^200 is ~7e86, far from
// overflow in products with probabilities, and the resulting tables are
// indistinguishable from those for any larger epsilon.
const maxEffectiveEpsilon = 200

// consts are the numbers every step needs.
type consts struct {
	eps   float64 // effective epsilon (capped)
	delta float64
	e     float64 // E: largest float64 we trust to be <= e^eps, and >= 1
	einv  float64 // 1/E rounded; only ever used as a first guess
	// einvUp and eDown are 1/E rounded up and E rounded down by four ulps:
	// multipliers whose products are on the safe side of e^-eps v and
	// e^eps v (see ceilDiv1, floorMul1).
	einvUp, eDown float64
}

func newConsts(p Privacy) consts {
	eps := math.Min(p.Epsilon, maxEffectiveEpsilon)
	e := nextDown(math.Exp(eps)) // math.Exp is accurate to < 1 ulp
	if e < 1 {
		e = 1
	}
	einv := 1 / e
	up, down := einv, e
	for range 4 {
		up, down = nextUp(up), nextDown(down)
	}
	return consts{eps: eps, delta: p.Delta, e: e, einv: einv, einvUp: up, eDown: math.Max(1, down)}
}

// L returns L(eps, delta) = (1/eps) ln((e^eps - 1 + 2 delta) / (delta (e^eps + 1))),
// equation (4) of the paper: roughly the number of frequencies over which
// the reporting probability climbs from delta to 1/2. L >= 0. It returns NaN
// for an invalid Privacy.
func L(p Privacy) float64 {
	if p.Validate() != nil {
		return math.NaN()
	}
	eps, delta := p.Epsilon, p.Delta
	var num float64
	if eps <= 1 {
		em1 := math.Expm1(eps)
		num = math.Log(em1+2*delta) - math.Log(delta) - math.Log(2+em1)
	} else {
		// (E - 1 + 2 delta)/(E + 1) = 1 - 2 (1 - delta)/(E + 1), stable for huge E.
		num = math.Log1p(-2*(1-delta)/(math.Exp(eps)+1)) - math.Log(delta)
	}
	if num < 0 {
		num = 0 // delta = 1 up to rounding
	}
	return num / eps
}

// upExcess returns pi - E*prev - delta exactly (as a dd): the keys-only
// constraint "reported" from frequency i against i-1.
func (c *consts) upExcess(prev, pi float64) dd {
	p, e := twoProd(c.e, prev)
	return ddFrom(pi).sub(dd{p, e}).addF(-c.delta)
}

// atomExcess returns (1 - prev) - E (1 - pi) exactly (as a dd): the "not
// reported" outcome of frequency i-1 against frequency i.
func (c *consts) atomExcess(prev, pi float64) dd {
	a0 := ddDiff(1, prev)
	a1 := ddDiff(1, pi)
	return a0.sub(a1.mulF(c.e))
}

// nextPi is one step of Algorithm 3:
//
//	pi_i = min(q_i, e^eps pi_{i-1} + delta, 1 + e^-eps (pi_{i-1} + delta - 1)),
//
// rounded down (by a few ulps at most) until both constraints it encodes hold
// exactly in floating point: pi_i - E pi_{i-1} <= delta and
// (1 - pi_{i-1}) - E (1 - pi_i) <= delta.
func (c *consts) nextPi(prev, q float64) float64 {
	pi := q
	if b := c.e*prev + c.delta; b < pi {
		pi = b
	}
	if b := 1 + c.einv*(prev+c.delta-1); b < pi {
		pi = b
	}
	if pi < 0 {
		pi = 0
	}
	for n := 0; n < 1000; n++ {
		if c.upExcess(prev, pi).sign() <= 0 && c.atomExcess(prev, pi).addF(-c.delta).sign() <= 0 {
			return pi
		}
		pi = nextDown(pi)
	}
	// Unreachable for valid inputs (pi = prev always satisfies both); stay safe.
	return math.Min(pi, prev)
}

// ReportingProbabilities returns pi_1..pi_n of Algorithm 3 (index 0 is
// frequency 1): the end-to-end probability that a key of frequency i is
// sampled by the client and then reported. A sampled key is reported with
// probability pi_i/q_i. The sequence is non-decreasing, pi_i <= q_i, and it
// is the maximum under the DP constraints (Lemma 4.1). It returns nil when p
// or s is invalid or n < 1.
func ReportingProbabilities(p Privacy, s Sampling, n int) []float64 {
	if n < 1 || p.Validate() != nil || s.Validate() != nil {
		return nil
	}
	c := newConsts(rowPrivacy(p, s))
	out := make([]float64, n)
	prev := 0.0
	for i := 1; i <= n; i++ {
		prev = c.nextPi(prev, s.Q(int64(i)))
		out[i-1] = prev
	}
	return out
}

// never marks "q_i never becomes constant".
const never = math.MaxInt64

// qConstFrom returns the first index i0 such that q_j = q_{i0} for every
// j >= i0 (as computed by Sampling.Q), with that value, or (never, 0).
func qConstFrom(s Sampling) (int64, float64) {
	switch s.Scheme {
	case SchemeNone:
		return 1, 1
	case SchemeCustom:
		n := len(s.Probabilities)
		v := s.Probabilities[n-1]
		i := n
		for i > 1 && s.Probabilities[i-2] == v {
			i--
		}
		return int64(i), v
	case SchemePriority:
		// q_i = 1 exactly when tau i^p >= 1.
		return firstReaching(s, 1), 1
	case SchemePPSWOR:
		// math.Expm1(-x) returns exactly -1 for x >= 56 ln 2 (its early
		// exit), so q_i = 1 from the first i with tau i^p >= 56 ln 2 on.
		// (q_i may round to 1 a little earlier; we do not rely on that.)
		const ln2x56 = 3.88162421113569373274e+01
		return firstReaching(s, ln2x56), 1
	}
	return never, 0
}

// firstReaching returns the first i >= 1 with tau * i^p >= x, or never
// (beyond 2^62). tau * i^p is non-decreasing in i, so a binary search over
// [1, 2^62] finds it with at most ~64 evaluations.
func firstReaching(s Sampling, x float64) int64 {
	f := func(i int64) float64 { return s.Threshold * math.Pow(float64(i), s.Power) }
	lo, hi := int64(0), int64(1)<<62 // f(lo) < x <= f(hi) once hi qualifies
	if f(hi) < x {
		return never
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if f(mid) >= x {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
