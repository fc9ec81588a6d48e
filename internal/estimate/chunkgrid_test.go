package estimate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestMergePointsMatchesRef: mergePoints, on the buffers buildChunksGrid
// gives it (the active points, trimmed below each row's support, and a
// spare buffer they alternate with), gives the sorted union that
// mergePointsRef computes, row after row, whether the row adds no point,
// points above the rest only (appended in place when there is room) or
// points among them; and never writes into the points it returns earlier
// unless returning them.
func TestMergePointsMatchesRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 34))
	paths := map[string]int{}
	for trial := range 200 {
		var active, spare, scratch []float64
		var ref []float64
		low := 0.0
		for row := range 60 {
			// A row: pieces on a grid of 1/4, starting at or above low,
			// some of their points new, some shared with earlier rows.
			var pieces []sanitize.Piece
			x := low + float64(rng.IntN(3))/4
			for range 1 + rng.IntN(8) {
				w := float64(1+rng.IntN(6)) / 4
				pieces = append(pieces, sanitize.Piece{Lo: x, Hi: x + w, P: 0.1})
				x += w
			}
			top := x + 1
			if rng.IntN(4) == 0 {
				top = pieces[len(pieces)/2].Hi // points above top are left out
			}
			k := 0
			for k < len(active) && active[k] < pieces[0].Lo {
				k++
			}
			ref = mergePointsRef(ref[min(k, len(ref)):], pieces, top)
			before := slices.Clone(active[k:])
			got := mergePoints(active[k:], pieces, top, &scratch, &spare)
			switch {
			case len(got) == len(before):
				paths["unchanged"]++
			case len(got) > 0 && len(before) > 0 && &got[0] == &active[k:][0]:
				paths["in place"]++
			default:
				paths["into spare"]++
			}
			if !slices.Equal(got, ref) {
				t.Fatalf("trial %d row %d: mergePoints = %v, want %v (before %v)", trial, row, got, ref, before)
			}
			active = got
			low = pieces[0].Lo + float64(rng.IntN(3))/4
		}
	}
	for _, p := range []string{"unchanged", "in place", "into spare"} {
		if paths[p] == 0 {
			t.Errorf("no row took the %q path (%v)", p, paths)
		}
	}
}

// BenchmarkMergePoints replays buildChunksGrid's merging of the break
// points of 2,000 consecutive Algorithm 5 rows (eps 0.1, delta 1e-6,
// ppswor tau 1e-4, from frequency 100,000): the cost per row.
func BenchmarkMergePoints(b *testing.B) {
	tab, err := sanitize.NewTable(mustPrivacy(0.1, 1e-6), mustSampling(sanitize.SchemePPSWOR, 1e-4, nil), sanitize.MethodMaxSeparation)
	if err != nil {
		b.Fatal(err)
	}
	var rows [][]sanitize.Piece
	if err := tab.Rows(100_000, 101_999, func(r sanitize.Row) bool {
		rows = append(rows, slices.Clone(r.Pieces))
		return true
	}); err != nil {
		b.Fatal(err)
	}
	top := 102_000.0
	for b.Loop() {
		var active, spare, scratch []float64
		for _, ps := range rows {
			k := 0
			for k < len(active) && active[k] < ps[0].Lo {
				k++
			}
			active = mergePoints(active[k:], ps, top, &scratch, &spare)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// gridBand returns 2,000 consecutive Algorithm 5 rows (eps 0.1, delta 1e-6,
// ppswor tau 1e-4, from frequency 100,000) and their merged break points
// below top.
func gridBand(tb testing.TB) (rows []sanitize.Row, pts []float64, top float64) {
	tab, err := sanitize.NewTable(mustPrivacy(0.1, 1e-6), mustSampling(sanitize.SchemePPSWOR, 1e-4, nil), sanitize.MethodMaxSeparation)
	if err != nil {
		tb.Fatal(err)
	}
	top = 101_500
	if err := tab.Rows(100_000, 101_999, func(r sanitize.Row) bool {
		r.Pieces = slices.Clone(r.Pieces)
		rows = append(rows, r)
		return true
	}); err != nil {
		tb.Fatal(err)
	}
	for _, r := range rows {
		pts = mergePointsRef(pts, r.Pieces, top)
	}
	return rows, pts, top
}

// mleOfRef is mleOf's reference: gridCells.of, then each cell offered to
// its token's best row in the order of the cells.
func mleOfRef(c *gridCells, r sanitize.Row, ri int, pts []float64, top float64, best []int, bestM []float64) bool {
	if !c.of(r, pts, top) {
		return false
	}
	for x, j := range c.tok {
		if m := c.mass[x]; mleBeats(m, bestM[j], best[j] != 0) {
			best[j], bestM[j] = ri+1, m
		}
	}
	return true
}

// TestMLEOfMatchesCells: the fused MLE pass (mleOf) picks, for every token,
// the same row with the same mass as gridCells.of followed by the loop over
// its cells, on real Algorithm 5 rows (ties included: the rule is applied
// in the same order), and fails where of fails (a piece's end not a point).
func TestMLEOfMatchesCells(t *testing.T) {
	rows, pts, top := gridBand(t)
	best, bestM := make([]int, len(pts)), make([]float64, len(pts))
	refBest, refM := make([]int, len(pts)), make([]float64, len(pts))
	var c gridCells
	for ri, r := range rows {
		if !mleOf(r, ri, pts, top, best, bestM) || !mleOfRef(&c, r, ri, pts, top, refBest, refM) {
			t.Fatalf("row %d: not on the points", r.Frequency)
		}
	}
	if !slices.Equal(best, refBest) || !slices.Equal(bestM, refM) {
		t.Fatal("mleOf picks other rows than of and its cells")
	}
	if slices.Max(best) == 0 {
		t.Fatal("no token has a best row: the test compares nothing")
	}
	// A point missing: both fail.
	gap := slices.Delete(slices.Clone(pts), len(pts)/2, len(pts)/2+1)
	failed := 0
	for ri, r := range rows {
		a, b := mleOf(r, ri, gap, top, make([]int, len(gap)), make([]float64, len(gap))), mleOfRef(&c, r, ri, gap, top, make([]int, len(gap)), make([]float64, len(gap)))
		if a != b {
			t.Fatalf("row %d: mleOf says %v, of says %v", r.Frequency, a, b)
		}
		if !a {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no row reached the missing point")
	}
}

// BenchmarkMLEOf: the MLE pass over the band of gridBand, fused (mleOf)
// and as of followed by its cells (mleOfRef).
func BenchmarkMLEOf(b *testing.B) {
	rows, pts, top := gridBand(b)
	best, bestM := make([]int, len(pts)), make([]float64, len(pts))
	var c gridCells
	for _, fused := range []bool{true, false} {
		b.Run(fmt.Sprintf("fused=%v", fused), func(b *testing.B) {
			for b.Loop() {
				clear(best)
				clear(bestM)
				for ri, r := range rows {
					if fused {
						mleOf(r, ri, pts, top, best, bestM)
					} else {
						mleOfRef(&c, r, ri, pts, top, best, bestM)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
		})
	}
}
