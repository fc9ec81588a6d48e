package estimate

import (
	"math"
)

// denseBD is the biased-down token loop (eq. 41) on dense rows: token j is
// token index j (the unit cell (j-1, j] of Algorithm 4, or a grid token of
// Algorithm 5), dense bands, no pieces, no tolerances. It computes bit for
// bit what the reference builder (generalBuilderRef) computes for such rows (the
// same operations on the same values, in the same order per row):
//
//	a_j = min over rows i with m_{i,j} > 0 of (g(i) - sa_i) / S_i(j),
//	sa_i += a_j m_{i,j},
//
// S_i(j) the row's mass on tokens >= j and a_j = a_{j-1} when no row
// produces token j. It serves buildUnit and buildGrid (whole tables, with
// statistics) and rowBand's biased-down pass on unit cells (estimates
// only, stored above the band). Tests: densebd_test.go.
type denseBD struct {
	denseRows
	pending bool // rows' sa still lack last times their mass on token pos
}

// newDenseBD returns a biased-down loop over dense rows of g finalising
// tokens 1..n and storing those above storeAbove.
func newDenseBD(g G, n, storeAbove int64) *denseBD {
	return &denseBD{denseRows: newDenseRows(g, n, storeAbove)}
}

// window returns the loop's rows, parameters and estimates (denseLoop).
func (u *denseBD) window() *denseRows { return &u.denseRows }

// activate appends r and finalises every token it makes final.
func (u *denseBD) activate(r *denseRow, _ bool) error {
	u.push(r)
	return u.advance(u.lastLo)
}

// bdStep is one row's part of the biased-down token loop at token j: it
// adds the previous token's a m to sa (pend is that a, or 0 when nothing
// is pending: adding 0 m leaves sa as it is, since sa is never -0;
// deferred, the same additions in the same order) and returns (g - sa) /
// S on the token, or inf (+Inf) when the row has no mass there. Every
// quotient is formed (S >= m > 0, so it is finite) and the caller's min
// keeps the smallest, without branches: the minimum the general builder
// finds by forming only the quotients that can win.
func (r *denseActive) bdStep(j int64, pend, inf float64) float64 {
	q := inf
	if k := j - 1 - r.lo; k >= 0 {
		if k >= 1 {
			if m := r.m[k-1]; m > 0 {
				r.sa += pend * m
			}
		}
		if m := r.m[k]; m > 0 {
			q = (r.g - r.sa) / r.s[k]
		}
	}
	return q
}

// advance finalises tokens up to min(upTo, tokens).
func (u *denseBD) advance(upTo int64) error {
	upTo = min(upTo, u.tokens)
	for j := u.pos + 1; j <= upTo; j++ {
		act := u.act[u.head:]
		if err := u.tokenCancelled(j, len(act)); err != nil {
			return err
		}
		// a = min of (g - sa) / S over the rows with mass on the
		// token, in one pass that first adds the previous token's
		// a_{j-1} m_{i,j-1} to each row's sa (bdStep; a row retired
		// meanwhile no longer needs its sa). Two running minima (even
		// and odd rows) halve the chain of dependent min operations;
		// min is exact, so the minimum of the two is the same value.
		inf := math.Inf(1)
		a0, a1 := inf, inf
		pend := 0.0
		if u.pending {
			pend = u.last
		}
		x := 0
		for ; x+1 < len(act); x += 2 {
			a0 = min(a0, act[x].bdStep(j, pend, inf))
			a1 = min(a1, act[x+1].bdStep(j, pend, inf))
		}
		if x < len(act) {
			a0 = min(a0, act[x].bdStep(j, pend, inf))
		}
		a := min(a0, a1)
		if math.IsInf(a, 1) {
			a = u.last
		}
		u.pending = true
		u.finish(j, a, true)
	}
	u.checkDone()
	return nil
}
