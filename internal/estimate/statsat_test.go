package estimate

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestChunkStatsAt checks ChunkAsk.StatsAt, the statistics a release's
// chunk run collects at its values' MLE frequencies: each one equals, bit
// for bit, the statistics of the chunk holding that frequency built on its
// own (BuildChunks with statistics); the run's chunks equal those built
// without StatsAt; every collected frequency is the MLE frequency of one of
// the values (estimate.MLEFrequency, rounded as SumWithErrorAt reads it);
// and most values (at least 90%) are served, so a build that collects
// nothing fails the test. Runs of one and of three chunks, low where the
// rows still change and far up, both sanitizers (their fast chunk builders).
func TestChunkStatsAt(t *testing.T) {
	t.Parallel()
	if ReferenceOnly {
		t.Skip("StatsAt is collected by the fast chunk builders only; the reference build answers the chunks alone")
	}
	builders := map[sanitize.Method]string{sanitize.MethodMaxSeparation: "chunks-grid-estimates", sanitize.MethodDiscrete: "chunks-unit"}
	for _, tc := range []struct {
		eps    float64
		k0, n  int64
		values int
	}{
		{eps: 0.1, k0: 40, n: 1, values: 16},
		{eps: 0.1, k0: 2, n: 8, values: 40},
		{eps: 0.1, k0: 3000, n: 3, values: 40},
		{eps: 0.5, k0: 200, n: 1, values: 16},
		{eps: 1, k0: 5, n: 3, values: 40},
		{eps: 1, k0: 70000, n: 1, values: 16},
	} {
		for method, by := range builders {
			checkChunkStatsAt(t, statsAtPoint{eps: tc.eps, k0: tc.k0, n: tc.n, values: tc.values, method: method, by: by})
		}
	}
}

// statsAtPoint is one point of TestChunkStatsAt: a run of n chunks from
// k0 with values spread over it, of one sanitizer, built by builder by.
type statsAtPoint struct {
	eps    float64
	k0, n  int64
	values int
	method sanitize.Method
	by     string
}

// checkChunkStatsAt is TestChunkStatsAt at one point.
func checkChunkStatsAt(t *testing.T, tc statsAtPoint) {
	t.Helper()
	ctx := context.Background()
	gs := []G{{Kind: GIdentity}, {Kind: GCount}}
	p := sanitize.Privacy{Epsilon: tc.eps, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-4, Power: 1}
	newTable := tableMaker(t, p, smp, tc.method)
	size := ChunkSize(p)
	lo := float64(tc.k0 * size)
	var values []float64
	for x := range tc.values {
		// Spread over the run, off the integers (values are continuous).
		values = append(values, lo+(float64(x)+0.37)*float64(tc.n*size)/float64(tc.values))
	}
	ask := ChunkAsk{Gs: gs, Size: size, First: tc.k0, Count: tc.n, EstimatesOnly: true}
	plain, err := Open(ctx, newTable(), Ask{Chunks: &ask})
	if err != nil {
		t.Fatal(err)
	}
	ask.StatsAt = values
	with, err := Open(ctx, newTable(), Ask{Chunks: &ask})
	if err != nil {
		t.Fatal(err)
	}
	if with.By != tc.by {
		t.Fatalf("eps %g %s: built by %s, want %s", tc.eps, tc.method, with.By, tc.by)
	}
	if !reflect.DeepEqual(with.Chunks, plain.Chunks) {
		t.Errorf("eps %g chunks %d+%d: chunks built with StatsAt differ from those built without", tc.eps, tc.k0, tc.n)
	}
	if plain.StatsAt != nil {
		t.Errorf("eps %g: statistics without StatsAt", tc.eps)
	}
	sets := make([]*ChunkSet, len(gs))
	for m, g := range gs {
		sets[m] = &ChunkSet{G: g, Size: size, Chunks: map[int64]*Chunk{}}
		for k := range with.Chunks {
			sets[m].Chunks[tc.k0+int64(k)] = with.Chunks[k][m]
		}
	}
	mle := map[int64]bool{}
	served := 0
	for _, v := range values {
		f, err := MLEFrequency(sets[0], sets[1], v)
		if err != nil {
			t.Fatal(err)
		}
		i := max(int64(math.Round(f)), 1)
		mle[i] = true
		if with.StatsAt[i] != nil {
			served++
		}
	}
	if served < tc.values*9/10 {
		t.Errorf("eps %g %s chunks %d+%d: statistics for %d of %d values' MLE frequencies, want at least 90%%", tc.eps, tc.method, tc.k0, tc.n, served, tc.values)
	}
	full := map[int64][]*Chunk{}
	for i, stats := range with.StatsAt {
		if !mle[i] {
			t.Errorf("eps %g: statistics at %d, the MLE frequency of no value", tc.eps, i)
		}
		k := ChunkOf(float64(i), size)
		if full[k] == nil {
			cs, err := BuildChunks(ctx, newTable(), gs, size, k, 1)
			if err != nil {
				t.Fatal(err)
			}
			full[k] = cs[0]
		}
		for m := range gs {
			want, err := full[k][m].Stats(i)
			if err != nil {
				t.Fatal(err)
			}
			if stats[m] != want {
				t.Errorf("eps %g %s %s at %d: %+v, the chunk's %+v", tc.eps, tc.method, gs[m], i, stats[m], want)
			}
		}
	}
}

// TestChunkGridPieceRowsMatchRows checks the chunk grid's two readers as a
// pair: over a sanitize.Table it reads the rows in the table's own form,
// writing their pieces into its slab at once (pieceSlab.pieces); over a
// source with Rows alone it copies each Row's pieces (the plain reader).
// Both must give the same chunks, estimates and statistics collected at
// values bit for bit, with statistics and estimates only, from chunk 0 and
// far above it, at three epsilons.
func TestChunkGridPieceRowsMatchRows(t *testing.T) {
	t.Parallel()
	if ReferenceOnly {
		t.Skip("the reference build reads Rows alone")
	}
	ctx := context.Background()
	gs := []G{{Kind: GIdentity}, {Kind: GCount}}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-4, Power: 1}
	for _, tc := range []struct {
		eps   float64
		k0, n int64
	}{{0.1, 0, 2}, {0.1, 3000, 3}, {0.5, 200, 1}, {1, 5, 3}, {1, 70000, 1}} {
		p := sanitize.Privacy{Epsilon: tc.eps, Delta: 1e-6}
		newTable := tableMaker(t, p, smp, sanitize.MethodMaxSeparation)
		size := ChunkSize(p)
		var values []float64
		for x := range 12 {
			values = append(values, float64(tc.k0*size)+(float64(x)+0.37)*float64(tc.n*size)/12)
		}
		for _, estimatesOnly := range []bool{false, true} {
			band := bandOf(t, newTable(), size, tc.k0)
			if estimatesOnly {
				band = tc.k0*size + 1
			}
			build := func(src RowSource) ([][]*Chunk, map[int64][]FrequencyStats) {
				var at *statsAt
				if estimatesOnly {
					// Of the table itself: a source with Rows alone hides
					// the privacy parameters statsAt reads.
					at = newStatsAt(newTable(), &ChunkAsk{Gs: gs, Size: size, First: tc.k0, Count: tc.n, EstimatesOnly: true, StatsAt: values})
				}
				out, ok, err := buildChunksGrid(ctx, src, gs, size, tc.k0, tc.n, band, estimatesOnly, at)
				if err != nil || !ok {
					t.Fatalf("eps %g, chunks %d+%d: grid path: ok %v, %v", tc.eps, tc.k0, tc.n, ok, err)
				}
				if at == nil {
					return out, nil
				}
				return out, at.got
			}
			fast, fastAt := build(newTable())
			plain, plainAt := build(plainSource{newTable()})
			if !reflect.DeepEqual(fast, plain) {
				t.Errorf("eps %g, chunks %d+%d, estimates only %v: the chunks over PieceRows differ from those over Rows", tc.eps, tc.k0, tc.n, estimatesOnly)
			}
			if !reflect.DeepEqual(fastAt, plainAt) || (estimatesOnly && len(fastAt) == 0) {
				t.Errorf("eps %g, chunks %d+%d: statistics at values: %d over PieceRows, %d over Rows, or not equal", tc.eps, tc.k0, tc.n, len(fastAt), len(plainAt))
			}
		}
	}
}
