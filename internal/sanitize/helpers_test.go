package sanitize

import (
	"slices"
	"testing"
)

func mustPrivacy(t testing.TB, eps, delta float64) Privacy {
	t.Helper()
	p, err := NewPrivacy(eps, delta)
	if err != nil {
		t.Fatalf("privacy(%g, %g): %v", eps, delta, err)
	}
	return p
}

func mustSampling(t testing.TB, s Scheme, tau, power float64, probs []float64) Sampling {
	t.Helper()
	sm, err := NewSampling(s, tau, power, probs)
	if err != nil {
		t.Fatalf("sampling: %v", err)
	}
	return sm
}

func mustTable(t testing.TB, p Privacy, s Sampling, m Method) *Table {
	t.Helper()
	tb, err := NewTable(p, s, m)
	if err != nil {
		t.Fatalf("NewTable: %v", err)
	}
	return tb
}

// rowsOf returns rows 1..n of tb (cloned).
func rowsOf(t testing.TB, tb *Table, n int64) []Row {
	t.Helper()
	out := make([]Row, 0, n)
	if err := tb.Rows(1, n, func(r Row) bool {
		out = append(out, r.Clone())
		return true
	}); err != nil {
		t.Fatalf("Rows: %v", err)
	}
	return out
}

// tokenMass returns the mass row r puts on integer token (j-1, j].
func tokenMass(r Row, j int64) float64 { return r.MassOn(float64(j-1), float64(j)) }

// concordance returns P(value of a > value of b) + P(equal)/2 for two rows,
// with "not reported" as the value 0 below every reported value (reported
// values are > 0), and values uniform inside their pieces. Two draws inside
// the same elementary interval tie in distribution, so they count half.
func concordance(a, b Row) float64 {
	pts := []float64{}
	for _, r := range []Row{a, b} {
		for _, pc := range r.Pieces {
			pts = append(pts, pc.Lo, pc.Hi)
		}
	}
	slices.Sort(pts)
	pts = compactFloats(pts)
	// masses on elementary intervals
	ma := make([]float64, len(pts))
	mb := make([]float64, len(pts))
	for k := 0; k+1 < len(pts); k++ {
		ma[k] = a.MassOn(pts[k], pts[k+1])
		mb[k] = b.MassOn(pts[k], pts[k+1])
	}
	a0, b0 := 1-a.Pi, 1-b.Pi
	res := a0 * b0 / 2 // both unreported: tie
	cumB := b0         // P(b below the current interval)
	for k := 0; k+1 < len(pts); k++ {
		res += ma[k] * (cumB + mb[k]/2)
		cumB += mb[k]
	}
	return res
}
