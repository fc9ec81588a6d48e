package estimate

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// stationaryFrom returns the first frequency from which the rows are
// shifted copies (to 1e-12, as Build's check), or 0.
func stationaryFrom(rows []sanitize.Row) int64 {
	same := func(a, b sanitize.Row) bool {
		if len(a.Pieces) != len(b.Pieces) || math.Abs(a.Pi-b.Pi) > 1e-12 {
			return false
		}
		for k := range a.Pieces {
			p, q := a.Pieces[k], b.Pieces[k]
			if p.Lo+1 != q.Lo || p.Hi+1 != q.Hi || math.Abs(p.P-q.P) > 1e-12*q.P {
				return false
			}
		}
		return true
	}
	s := int64(0)
	for i := len(rows) - 1; i > 0; i-- {
		if !same(rows[i-1], rows[i]) {
			break
		}
		s = int64(i)
	}
	return s
}

// decrumb drops Algorithm 4's rounding crumbs (< 1e-15) so shifted copies
// compare equal.
func decrumb(rows []sanitize.Row) []sanitize.Row {
	for i := range rows {
		rows[i].Pieces = slices.DeleteFunc(rows[i].Pieces, func(p sanitize.Piece) bool { return p.P < 1e-15 })
		rows[i].Pi = 0
		for _, p := range rows[i].Pieces {
			rows[i].Pi += p.P
		}
	}
	return rows
}

// stationaryFractional is the hand-made fractional table whose rows from s on
// are shifted copies of row s (fractional break points inside every unit).
func stationaryFractional(n, s int, w int, seed uint64) []sanitize.Row {
	rows := fractionalRows(s, w, seed)
	base := rows[s-1]
	for i := s + 1; i <= n; i++ {
		d := float64(i - s)
		r := sanitize.Row{Frequency: int64(i), Pi: base.Pi}
		for _, p := range base.Pieces {
			r.Pieces = append(r.Pieces, sanitize.Piece{Lo: p.Lo + d, Hi: p.Hi + d, P: p.P})
		}
		rows = append(rows, r)
	}
	return rows
}

type tailCase struct {
	name     string
	src      func() RowSource
	n1       int64
	bdPeriod int64 // expected biased-down identity period; 0 = quasi-periodic (none)
}

func tailCases() []tailCase {
	prio := decrumb(alg4Rows(0.8, 1e-2, priority(0.02), 400))
	ps := stationaryFrom(prio)
	frac := stationaryFractional(400, 30, 4, 5)
	return []tailCase{
		{"lemma52 eps=0.7 L=3", func() RowSource { return newLemma52(0.7, 3) }, 150, 4},
		{"lemma52 eps=1 L=10", func() RowSource { return newLemma52(1, 10) }, 200, 12},
		{"lemma52 eps=0.3 L=5", func() RowSource { return newLemma52(0.3, 5) }, 200, 0},
		{"alg4 priority", func() RowSource { return &statSliceSource{sliceSource{rows: prio}, ps} }, 250, -1},
		{"fractional stationary", func() RowSource { return &statSliceSource{sliceSource{rows: frac}, 30} }, 250, -1},
	}
}

// TestStationaryTailContinuation: estimates, token indices and
// per-frequency statistics that a table extends analytically beyond its max
// frequency equal those of a table computed explicitly to a larger max
// frequency — for the MLE with every g, and for biased-down wherever a
// period was established. Where none can be (power g, quasi-periodic
// staircases) values beyond the table are ErrOutOfRange, never a guess.
func TestStationaryTailContinuation(t *testing.T) {
	t.Parallel()
	for _, c := range tailCases() {
		t.Run(c.name, func(t *testing.T) {
			for _, gs := range testGs {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown} {
					t1, err := Build(c.src(), Spec{MaxFrequency: c.n1, G: g, Estimator: est})
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					n2 := c.n1 + 60
					t2, err := Build(c.src(), Spec{MaxFrequency: n2, G: g, Estimator: est})
					if err != nil {
						t.Fatal(err)
					}
					if t1.Tail == nil {
						t.Fatalf("%s %s %s: no tail", c.name, gs, est)
					}
					extends := est == MLE || t1.Tail.Period > 0
					if est == BiasedDown && (gs == "count" || gs == "cap:7") && t1.Tail.Period != 1 {
						t.Errorf("%s %s: biased-down period %d, want constant estimates (period 1)", c.name, gs, t1.Tail.Period)
					}
					if est == BiasedDown && gs == "identity" && c.bdPeriod >= 0 && t1.Tail.Period != c.bdPeriod {
						t.Errorf("%s: biased-down identity period %d, want %d", c.name, t1.Tail.Period, c.bdPeriod)
					}
					first, _ := t2.explicitToken(float64(c.n1) + 1e-9)
					for j := first; j <= len(t2.A); j++ {
						mid := (t2.Bounds[j-1] + t2.Bounds[j]) / 2
						a, err := t1.Estimate(mid)
						if !extends {
							if !errors.Is(err, ErrOutOfRange) {
								t.Fatalf("%s %s %s: Estimate beyond table without period: %v", c.name, gs, est, err)
							}
							break
						}
						if err != nil || !relClose(a, t2.A[j-1], 1e-9) {
							t.Fatalf("%s %s %s: extended a_%d = %.15g (%v), explicit %.15g", c.name, gs, est, j, a, err, t2.A[j-1])
						}
						if tok, err := t1.Token(mid); err != nil || tok != int64(j) {
							t.Fatalf("%s: extended token of %g = %d (%v), explicit %d", c.name, mid, tok, err, j)
						}
					}
					if !extends {
						continue
					}
					for i := c.n1 + 1; i <= n2; i++ {
						got, err := t1.Stats(i)
						want := t2.Frequencies[i-1]
						if err != nil || got.Frequency != i || !relClose(got.Expected, want.Expected, 1e-9) ||
							!relClose(got.MSE, want.MSE, 1e-8) || !relClose(got.Variance, want.Variance, 1e-7) {
							t.Fatalf("%s %s %s: extended stats(%d) = %+v (%v), explicit %+v", c.name, gs, est, i, got, err, want)
						}
					}
				}
			}
		})
	}
}

// TestMLETailIsShiftPlusOneOverPi checks the derivation on an explicit table:
// for identity, from the stationary frequency on, every sub-token's MLE
// estimate is the previous unit's plus 1/pi, and for any g it is
// g(k + d_r)/pi with the shift d_r read from the row pattern.
func TestMLETailIsShiftPlusOneOverPi(t *testing.T) {
	t.Parallel()
	for _, c := range tailCases() {
		t.Run(c.name, func(t *testing.T) {
			tab, err := Build(c.src(), Spec{MaxFrequency: 300, G: mustG("identity"), Estimator: MLE})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if tab.Tail == nil {
				t.Fatalf("%s: no tail", c.name)
			}
			tl := tab.Tail
			m := int64(len(tl.Offsets))
			for k := tl.From + 1; k <= 300; k++ {
				for r := int64(0); r < m; r++ {
					cur := tab.A[tl.UnitToken+(k-tl.From)*m+r]
					prev := tab.A[tl.UnitToken+(k-1-tl.From)*m+r]
					if !relClose(cur-prev, 1/tl.Pi, 1e-9) {
						t.Fatalf("%s: unit %d sub-token %d: a - a_prev = %.15g, want 1/pi = %.15g", c.name, k, r, cur-prev, 1/tl.Pi)
					}
					if want := float64(k+tl.MLEShift[r]) / tl.Pi; !relClose(cur, want, 1e-12) {
						t.Fatalf("%s: unit %d: a = %g, closed form %g", c.name, k, cur, want)
					}
				}
			}
		})
	}
}
