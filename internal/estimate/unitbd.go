package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// errNotUnit reports rows the unit-cell biased-down builder cannot take
// (pieces that are not unit cells (j-1, j], a row without mass on its top
// cell, or mass below a finalised token); the caller falls back to the
// general builder.
var errNotUnit = errors.New("estimate: rows are not on unit cells")

// unitRow is one active row of the unit-cell builder: dense masses m and
// suffix sums s on cells lo+1 .. freq (s[k] = s[k+1] + m[k], the general
// builder's suffix sums with zero cells added, which are exact).
type unitRow struct {
	freq int64
	lo   int64
	g    float64
	sa   float64
	m, s []float64
}

// unitBD is the biased-down builder (eq. 41) for Algorithm 4's unit cells:
// token j is the cell (j-1, j], dense bands, no pieces, no tolerances. It
// computes bit for bit what the general builder computes for such rows
// (the same operations on the same values, in the same order per row):
//
//	a_j = min over rows i with m_{i,j} > 0 of (g(i) - sa_i) / S_i(j),
//	sa_i += a_j m_{i,j},
//
// S_i(j) the row's mass on cells >= j and a_j = a_{j-1} when no row
// produces token j. It stores a_j for j > keepBelow only.
type unitBD struct {
	ctx       context.Context // nil: never cancelled
	g         G
	n         int64 // finalise tokens 1..n
	keepBelow int64
	rows      []*unitRow // active rows, ascending frequency, from head
	head      int
	pool      []*unitRow
	next      int64 // next expected row
	lastLo    int64 // largest row support start read
	pos       int64 // tokens 1..pos are final
	last      float64
	bounds    []float64 // keepBelow, keepBelow+1, ..., pos (once pos > keepBelow)
	a         []float64
	done      bool
}

func newUnitBD(g G, n, keepBelow int64) *unitBD {
	return &unitBD{g: g, n: n, keepBelow: keepBelow, next: 1, bounds: []float64{float64(keepBelow)}}
}

// add takes the next row and finalises every token it makes final.
func (u *unitBD) add(row sanitize.Row) error {
	if row.Frequency != u.next {
		return errors.New("estimate: row source delivered rows out of order")
	}
	u.next++
	ps := row.Pieces
	i := row.Frequency
	if len(ps) == 0 || ps[len(ps)-1].Hi != float64(i) || ps[len(ps)-1].Lo != float64(i-1) {
		return errNotUnit
	}
	lo := int64(ps[0].Lo)
	if float64(lo) != ps[0].Lo || lo < u.pos {
		return errNotUnit
	}
	w := int(i - lo)
	var r *unitRow
	if k := len(u.pool); k > 0 {
		r = u.pool[k-1]
		u.pool = u.pool[:k-1]
	} else {
		r = &unitRow{}
	}
	if cap(r.m) < w {
		r.m, r.s = make([]float64, w, w+w/4+8), make([]float64, w+1, w+w/4+9)
	}
	r.m, r.s = r.m[:w], r.s[:w+1]
	clear(r.m)
	for _, p := range ps {
		c := int64(p.Lo)
		if float64(c) != p.Lo || p.Hi != p.Lo+1 || c < lo {
			return errNotUnit
		}
		r.m[c-lo] = p.P
	}
	r.s[w] = 0
	for k := w - 1; k >= 0; k-- {
		r.s[k] = r.s[k+1] + r.m[k]
	}
	r.freq, r.lo, r.g, r.sa = i, lo, u.g.at(i), 0
	u.rows = append(u.rows, r)
	u.lastLo = max(u.lastLo, lo)
	return u.advance(u.lastLo)
}

// advance finalises tokens up to min(upTo, n), checking the context every
// ctxTokens tokens when rows are wide.
func (u *unitBD) advance(upTo int64) error {
	upTo = min(upTo, u.n)
	for j := u.pos + 1; j <= upTo; j++ {
		act := u.rows[u.head:]
		if u.ctx != nil && j%ctxTokens == 0 && len(act) >= ctxWide {
			if err := u.ctx.Err(); err != nil {
				return fmt.Errorf("estimate: %w", err)
			}
		}
		a := math.Inf(1)
		for _, r := range act {
			if k := j - 1 - r.lo; k >= 0 {
				if m := r.m[k]; m > 0 {
					if v := (r.g - r.sa) / r.s[k]; v < a {
						a = v
					}
				}
			}
		}
		if math.IsInf(a, 1) {
			a = u.last
		}
		for _, r := range act {
			if k := j - 1 - r.lo; k >= 0 {
				if m := r.m[k]; m > 0 {
					r.sa += a * m
				}
			}
		}
		u.last = a
		if j > u.keepBelow {
			u.a = append(u.a, a)
			u.bounds = append(u.bounds, float64(j))
		}
		u.pos = j
		for u.head < len(u.rows) && u.rows[u.head].freq <= j {
			u.pool = append(u.pool, u.rows[u.head])
			u.rows[u.head] = nil
			u.head++
		}
		if u.head > 64 && 2*u.head > len(u.rows) {
			n := copy(u.rows, u.rows[u.head:])
			clear(u.rows[n:])
			u.rows, u.head = u.rows[:n], 0
		}
	}
	if u.pos >= u.n {
		u.done = true
	}
	return nil
}

// table returns the stored tokens as a (partial) estimator table.
func (u *unitBD) table() *Table {
	return &Table{G: u.g, Estimator: BiasedDown, MaxFrequency: u.n, Bounds: u.bounds, A: u.a}
}
