package estimate

import (
	"context"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestMLETieRule pins eq. 11's tie rule on rows built to sit on either side
// of it: a row wins a token when its probability there exceeds every
// smaller frequency's by more than a relative 1e-10 (bruteTieTol, the
// oracle's own constant); within that, the smallest frequency wins. Token 1
// has rows 5 and 6 apart by 1e-7 (6 wins) and row 7 within 1e-13 of row 6
// (6 keeps it); token 2 has row 5 below row 6 by 5e-11 (tied: 5 wins);
// token 3 has row 8 above row 7 by 2e-10 (8 wins). So the test fails when
// the builders' tolerance (tieTol) is below 5e-11 or at least 2e-10: at 0
// or 1e-11 rows 7 and 6 win tokens 1 and 2, at 2e-10 or 1e-2 rows 5 and 7
// win tokens 1 and 3 (each checked by planting it). Every builder that takes rows directly is checked, and the
// brute-force oracle with them.
func TestMLETieRule(t *testing.T) {
	t.Parallel()
	// Rows 1..4 carry little mass (a row's pieces lie in (0, frequency]);
	// rows 5..9 compete on tokens (0,1] .. (3,4].
	masses := [][4]float64{
		{0.001}, {0.001, 0.001}, {0.001, 0.001, 0.001}, {0.001, 0.001, 0.001, 0.001},
		{0.1, 0.2 * (1 - 5e-11), 0.05, 0.01},
		{0.1 * (1 + 1e-7), 0.2, 0.05, 0.01},
		{0.1 * (1 + 1e-7) * (1 + 1e-13), 0.05, 0.3, 0.01},
		{0.05, 0.05, 0.3 * (1 + 2e-10), 0.2},
		{0.01, 0.01, 0.01, 0.3},
	}
	var rows []sanitize.Row
	for i, ms := range masses {
		f := int64(i + 1)
		r := sanitize.Row{Frequency: f}
		for j, m := range ms {
			if m > 0 {
				r.Pieces = append(r.Pieces, sanitize.Piece{Lo: float64(j), Hi: float64(j + 1), P: m})
				r.Pi += m
			}
		}
		// Mass above n, different per row, so that g(i)/pi_i names the
		// winner, on unit cells (the unit builder reads only those).
		for c := int64(5); c <= f; c++ {
			r.Pieces = append(r.Pieces, sanitize.Piece{Lo: float64(c - 1), Hi: float64(c), P: 0.02})
			r.Pi += 0.02
		}
		rows = append(rows, r)
	}
	const n = 4
	winners := [n]int{6, 5, 8, 9}
	g := G{Kind: GIdentity}
	spec := Spec{MaxFrequency: n, G: g, Estimator: MLE}
	want := make([]float64, n)
	for j, w := range winners {
		want[j] = float64(w) / rows[w-1].Pi
	}
	if got := newBrute(rows, n).estimates(g, MLE); !equalFloats(got, want) {
		t.Fatalf("brute-force oracle %v, want %v", got, want)
	}
	for _, b := range []struct {
		name  string
		build func(context.Context, RowSource, Spec) (*Table, error)
	}{
		{"Build", BuildContext}, {"reference", buildRef}, {"fused", buildFused}, {"unit", buildUnit},
	} {
		tab, err := b.build(context.Background(), &sliceSource{rows: rows}, spec)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if !equalFloats(tab.A, want) {
			t.Errorf("%s: estimates %v, want %v (rows %v win)", b.name, tab.A, want, winners)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !relClose(a[i], b[i], 1e-12) {
			return false
		}
	}
	return true
}
