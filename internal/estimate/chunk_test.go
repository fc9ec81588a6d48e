package estimate

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestChunkEqualsTable is the chunk oracle: for every scheme, both methods
// and a few frequency functions, each chunk's tokens, MLE estimates and
// per-frequency statistics equal the full table's (built over rows 1..n),
// bit for bit.
func TestChunkEqualsTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		eps, delta float64
		s          sanitize.Sampling
	}{
		{0.5, 1e-6, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-4, Power: 1}},
		{1, 1e-9, sanitize.Sampling{Scheme: sanitize.SchemePriority, Threshold: 2e-5, Power: 1}},
		{0.2, 1e-3, sanitize.Sampling{Scheme: sanitize.SchemeNone}},
		{2, 1e-6, sanitize.Sampling{Scheme: sanitize.SchemeCustom, Probabilities: []float64{0.01, 0.1, 0.3, 0.3, 0.9}}},
	}
	for _, c := range cases {
		for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
			for _, g := range []G{{Kind: GIdentity}, {Kind: GCount}} {
				name := fmt.Sprintf("%s/eps=%g/%s/%s", m, c.eps, c.s.Scheme, g)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					p := sanitize.Privacy{Epsilon: c.eps, Delta: c.delta}
					src := tableMaker(t, p, c.s, m)
					size := ChunkSize(p)
					// The run k0 .. k0+2 starts at 0, among the first 4 L
					// rows, whose supports reach down to 0, and above them.
					for _, k0 := range []int64{0, max(1, int64(math.Ceil((4*math.Ceil(sanitize.L(p))+16)/float64(size))))} {
						n := (k0 + 4) * size
						full, err := Build(src(), Spec{MaxFrequency: n + 64, G: g, Estimator: MLE})
						if err != nil {
							t.Fatal(err)
						}
						run, err := BuildChunks(context.Background(), src(), []G{g, {Kind: GCap, Param: 7}}, size, k0, 3)
						if err != nil {
							t.Fatal(err)
						}
						// The reference token loop on the same rows (BuildChunks
						// takes the unit-cell or the grid path otherwise).
						general, err := buildChunksGeneral(context.Background(), src(), newEstimatesOnlyRef, []G{g, {Kind: GCap, Param: 7}}, size, k0, 3, bandOf(t, src(), size, k0))
						if err != nil {
							t.Fatal(err)
						}
						if m == sanitize.MethodMaxSeparation && !referenceOnly {
							// The grid path must apply here (positions far below
							// 953,674) and is what BuildChunks took.
							grid, ok, err := buildChunksGrid(context.Background(), src(), []G{g, {Kind: GCap, Param: 7}}, size, k0, 3, bandOf(t, src(), size, k0), false, nil)
							if err != nil || !ok {
								t.Fatalf("grid path: ok %v, %v", ok, err)
							}
							if !reflect.DeepEqual(grid, run) {
								t.Fatal("BuildChunks did not take the grid path")
							}
						}
						// Estimates only: the same tokens and estimates, no
						// statistics (for Algorithm 5 from the rows above the
						// run alone), and an encoding that keeps them so.
						est, err := BuildChunkEstimates(context.Background(), src(), []G{g, {Kind: GCap, Param: 7}}, size, k0, 3)
						if err != nil {
							t.Fatal(err)
						}
						for k := range est {
							for gi := range est[k] {
								e, c := est[k][gi], run[k][gi]
								if !slices.Equal(e.Bounds, c.Bounds) || !slices.Equal(e.A, c.A) || e.Index != c.Index || e.G != c.G {
									t.Fatalf("chunk %d of %s: estimates only differ from BuildChunks", c.Index, c.G)
								}
								if m == sanitize.MethodMaxSeparation && !referenceOnly && e.HasStats() {
									t.Fatalf("chunk %d of %s: the Algorithm 5 estimates-only chunk holds statistics", c.Index, c.G)
								}
							}
						}
						if c := est[0][0]; !c.HasStats() {
							if _, err := c.Stats(k0*size + 1); err == nil {
								t.Error("an estimates-only chunk answered Stats")
							}
							data, err := c.MarshalBinary()
							if err != nil {
								t.Fatal(err)
							}
							var back Chunk
							if err := back.UnmarshalBinary(data); err != nil || back.HasStats() || !slices.Equal(back.A, c.A) || !slices.Equal(back.Bounds, c.Bounds) {
								t.Fatalf("estimates-only chunk round trip: %v", err)
							}
						}
						for k := range run {
							compareChunk(t, full, run[k][0])
							compareChunk(t, full, general[k][0])
							if !reflect.DeepEqual(run[k][1], general[k][1]) {
								t.Fatalf("chunk %d of cap:7: the fast and general paths differ", k0+int64(k))
							}
						}
						for k := int64(0); k < k0+4; k++ {
							ch, err := BuildChunk(context.Background(), src(), g, size, k)
							if err != nil {
								t.Fatal(err)
							}
							compareChunk(t, full, ch)
							data, err := ch.MarshalBinary()
							if err != nil {
								t.Fatal(err)
							}
							var back Chunk
							if err := back.UnmarshalBinary(data); err != nil {
								t.Fatal(err)
							}
							compareChunk(t, full, &back)
							if err := back.UnmarshalBinary(data[:len(data)-1]); err == nil {
								t.Error("a truncated chunk decoded")
							}
						}
					}
				})
			}
		}
	}
}

// bandOf returns where chunk k0's band starts (BuildChunks' rule).
func bandOf(t *testing.T, src RowSource, size, k0 int64) int64 {
	t.Helper()
	var first sanitize.Row
	if err := src.Rows(k0*size+1, k0*size+1, func(r sanitize.Row) bool { first = r.Clone(); return false }); err != nil {
		t.Fatal(err)
	}
	return max(1, int64(math.Floor(first.Pieces[0].Lo)))
}

func compareChunk(t *testing.T, full *Table, ch *Chunk) {
	t.Helper()
	lo, hi := ch.Lo(), ch.Hi()
	var want []float64
	var bounds []float64
	for j := 1; j < len(full.Bounds); j++ {
		if full.Bounds[j] > lo && full.Bounds[j] <= hi {
			if len(bounds) == 0 {
				bounds = append(bounds, full.Bounds[j-1])
			}
			bounds = append(bounds, full.Bounds[j])
			want = append(want, full.A[j-1])
		}
	}
	if len(want) != len(ch.A) {
		t.Fatalf("chunk %d: %d tokens, the table has %d there", ch.Index, len(ch.A), len(want))
	}
	for j := range want {
		if math.Float64bits(want[j]) != math.Float64bits(ch.A[j]) || bounds[j+1] != ch.Bounds[j+1] {
			t.Fatalf("chunk %d token %d: (%v, %v] a=%v, table (%v, %v] a=%v", ch.Index, j, ch.Bounds[j], ch.Bounds[j+1], ch.A[j], bounds[j], bounds[j+1], want[j])
		}
		v := (ch.Bounds[j] + ch.Bounds[j+1]) / 2
		if a, err := ch.Estimate(v); err != nil || a != want[j] {
			t.Fatalf("chunk %d Estimate(%v) = %v, %v; want %v", ch.Index, v, a, err, want[j])
		}
	}
	for i := ch.Index*ch.Size + 1; i <= (ch.Index+1)*ch.Size; i++ {
		got, err := ch.Stats(i)
		if err != nil {
			t.Fatal(err)
		}
		if w := full.Frequencies[i-1]; got != w {
			t.Fatalf("chunk %d: stats of %d = %+v, table %+v", ch.Index, i, got, w)
		}
	}
}

// BenchmarkChunk builds, on a fresh table, the MLE chunks (identity and
// count) holding frequency 10^6 and 10^7 under ppswor tau 1e-5 (rows by
// restart below 3.9 * 10^6, stationary above).
func BenchmarkChunk(b *testing.B) {
	s := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	for _, eps := range []float64{1, 0.1} {
		for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
			for _, f := range []float64{1e6, 1e7} {
				b.Run(fmt.Sprintf("eps=%g/%s/f=%g", eps, m, f), func(b *testing.B) {
					for b.Loop() {
						tb, err := sanitize.NewTable(sanitize.Privacy{Epsilon: eps, Delta: 1e-6}, s, m)
						if err != nil {
							b.Fatal(err)
						}
						size := ChunkSize(tb.Privacy())
						if _, err := BuildChunks(context.Background(), tb, []G{{Kind: GIdentity}, {Kind: GCount}}, size, ChunkOf(f, size), 1); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
