package estimate

import (
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
