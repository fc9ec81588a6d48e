package estimate

import (
	"context"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestMLETieRule pins eq. 11's tie rule on rows built to sit on either side
// of it: a row wins a token when its probability there exceeds every
// smaller frequency's by more than a relative 1e-10 (bruteTieTol, the
// oracle's own constant); within that, the smallest frequency wins; a token
// no row produces repeats the estimate below it. Token 1 has rows 6 and 7
// apart by 1e-7 (7 wins) and row 8 within 1e-13 of row 7 (7 keeps it);
// token 2 has row 6 below row 7 by 5e-11 (tied: 6 wins); token 3 has row 9
// above row 8 by 2e-10 (9 wins); on token 4 row 9's probability is row 8's
// times 1 + 1e-10 exactly, in float64 (tied: 8 wins); token 5 lies in a gap
// of every row (a zero inside their windows: token 4's estimate repeats).
// So the test fails when the builders' tolerance (tieTol) is below 5e-11 or
// at least 2e-10: at 0 or 1e-11 rows 8 and 7 win tokens 1 and 2, at 2e-10
// or 1e-2 rows 6 and 8 win tokens 1 and 3 (each checked by planting it);
// and when the comparison admits equality or zero masses (mutants of the
// argmax, docs/testing.md). Every builder that takes rows directly is
// checked, and the brute-force oracle with them.
func TestMLETieRule(t *testing.T) {
	t.Parallel()
	tol := 1e-10 // a variable, so that 0.2 * (1 + tol) is rounded as the builders round it
	edge := 0.2 * (1 + tol)
	// Rows 1..5 carry little mass (a row's pieces lie in (0, frequency]);
	// rows 6..10 compete on tokens (0,1] .. (3,4]; none has mass on (4,5].
	masses := [][4]float64{
		{0.001}, {0.001, 0.001}, {0.001, 0.001, 0.001}, {0.001, 0.001, 0.001, 0.001}, {0.001, 0.001, 0.001, 0.001},
		{0.1, 0.2 * (1 - 5e-11), 0.05, 0.01},
		{0.1 * (1 + 1e-7), 0.2, 0.05, 0.01},
		{0.1 * (1 + 1e-7) * (1 + 1e-13), 0.05, 0.3, 0.2},
		{0.05, 0.05, 0.3 * (1 + 2e-10), edge},
		{0.01, 0.01, 0.01, 0.01},
	}
	// makeRows builds the rows; fill puts mass on (4,5] (0.005 for rows
	// 6..10, 0.001 for row 5: no gap, the unit builder reads contiguous
	// cells only), and row 6 then wins token 5 (a tie of equal masses).
	makeRows := func(fill bool) []sanitize.Row {
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
			if fill && f >= 5 {
				p := 0.005
				if f == 5 {
					p = 0.001
				}
				r.Pieces = append(r.Pieces, sanitize.Piece{Lo: 4, Hi: 5, P: p})
				r.Pi += p
			}
			for c := int64(6); c <= f; c++ {
				r.Pieces = append(r.Pieces, sanitize.Piece{Lo: float64(c - 1), Hi: float64(c), P: 0.02})
				r.Pi += 0.02
			}
			rows = append(rows, r)
		}
		return rows
	}
	rows := makeRows(false)
	const n = 5
	winners := [n]int{7, 6, 9, 8, 8}
	g := G{Kind: GIdentity}
	spec := Spec{MaxFrequency: n, G: g, Estimator: MLE}
	wantOf := func(rows []sanitize.Row, winners [n]int) []float64 {
		want := make([]float64, n)
		for j, w := range winners {
			want[j] = float64(w) / rows[w-1].Pi
		}
		return want
	}
	want := wantOf(rows, winners)
	if got := newBrute(rows, n).estimates(g, MLE); !equalFloats(got, want) {
		t.Fatalf("brute-force oracle %v, want %v", got, want)
	}
	filled, filledWinners := makeRows(true), winners
	filledWinners[4] = 6
	for _, b := range []struct {
		name  string
		build func(context.Context, RowSource, Spec) (*Table, error)
		fill  bool
	}{
		{"Build", BuildContext, false}, {"reference", buildGeneralRef, false}, {"fused", buildGeneral, false}, {"unit", buildUnit, true},
	} {
		rows, winners := rows, winners
		if b.fill {
			rows, winners = filled, filledWinners
		}
		want := wantOf(rows, winners)
		if got := newBrute(rows, n).estimates(g, MLE); !equalFloats(got, want) {
			t.Fatalf("%s: brute-force oracle %v, want %v", b.name, got, want)
		}
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

// TestMLEBeatsTable pins mleBeats, the one place the tie rule is written,
// on hand-picked cases against the rule stated in eq. 11's terms: a
// positive mass takes an empty argmax, and a held one only when it exceeds
// the best by more than the relative 1e-10 (bruteTieTol, the oracle's own
// constant): equality, a 5e-11 excess and zero or NaN masses never win.
func TestMLEBeatsTable(t *testing.T) {
	t.Parallel()
	tol := bruteTieTol // a variable: rounded at run time as the builders round it
	for _, c := range []struct {
		name     string
		m, bestM float64
		found    bool
		want     bool
	}{
		{"first positive mass", 1e-300, 0, false, true},
		{"zero mass never wins", 0, 0, false, false},
		{"negative mass never wins", -1, 0, false, false},
		{"NaN never wins", math.NaN(), 0, false, false},
		{"NaN never wins a held token", math.NaN(), 0.5, true, false},
		{"equal mass keeps the smaller frequency", 0.5, 0.5, true, false},
		{"within the tolerance keeps the smaller frequency", 0.5 * (1 + 5e-11), 0.5, true, false},
		{"exactly at the tolerance keeps it", 0.5 * (1 + tol), 0.5, true, false},
		{"beyond the tolerance wins", 0.5 * (1 + 2e-10), 0.5, true, true},
		{"smaller mass loses", 0.25, 0.5, true, false},
		{"larger mass wins", 0.75, 0.5, true, true},
		{"zero held best: any positive mass wins", 1e-300, 0, true, true},
	} {
		if got := mleBeats(c.m, c.bestM, c.found); got != c.want {
			t.Errorf("%s: mleBeats(%g, %g, %v) = %v, want %v", c.name, c.m, c.bestM, c.found, got, c.want)
		}
	}
}
