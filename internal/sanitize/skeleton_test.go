package sanitize

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// What a public skeleton of kept rows leaves to step (issue 37;
// docs/performance.md, "What a public skeleton leaves to step").
//
// After a restart a Table holds only rows chosen by the public parameters:
// below the first restart a checkpoint every low rows, inside each block its
// verified first row and perBlock-1 rows spread over it, and the stationary
// cycle. A release's draws step, for each distinct frequency in ascending
// order, from the cheaper of the previous frequency's row (when it is less
// than a block below) and the nearest kept row below: the rule of
// Table.clusters. skeletonSteps is that count for a hypothetical skeleton,
// so that the stored rows a skeleton costs can be set against the rows it
// saves without building one. TestSkeletonModelMatchesRestore ties the
// model to the real restore at the skeleton the warm-up keeps.

// skeleton is a public layout of kept rows.
type skeleton struct {
	low      int64 // checkpoint spacing below the first restart
	perBlock int64 // kept rows per restarted block: its first row and perBlock-1 inside
}

// keptRowsOf returns how many rows the skeleton keeps below the stationary
// cycle's start statFrom (blocks from pl.from up to statFrom).
func (sk skeleton) keptRows(pl restartPlan, statFrom int64) int64 {
	return pl.from/sk.low + (statFrom-pl.from+pl.block-1)/pl.block*sk.perBlock
}

// startCost returns the rows a walk steps from the skeleton's nearest kept
// row at or below f to f.
func (sk skeleton) startCost(pl restartPlan, statFrom, f int64) int64 {
	switch {
	case f < pl.from:
		return f % sk.low
	case f >= statFrom:
		return 0
	}
	a := pl.junctionBelow(f)
	best := f - a
	for j := int64(1); j < sk.perBlock; j++ {
		// the places midRow uses for two rows per block, generalized
		if i := a + 1 + j*pl.block/sk.perBlock/innerSpacing*innerSpacing; i <= f {
			best = min(best, f-i)
		}
	}
	return best
}

// skeletonSteps returns the rows the draws of freqs step on a Table that
// holds the skeleton's rows only (the rule of Table.clusters).
func skeletonSteps(sk skeleton, pl restartPlan, statFrom int64, freqs []int64) int64 {
	todo := slices.Clone(freqs)
	slices.Sort(todo)
	todo = slices.Compact(todo)
	steps, prev := int64(0), int64(-1)
	for _, f := range todo {
		c := sk.startCost(pl, statFrom, f)
		if prev >= 0 && f-prev <= pl.block {
			c = min(c, f-prev)
		}
		steps += c
		prev = f
	}
	return steps
}

// zipfRestore returns the Zipf workload's client sample at tau 1e-4 (its
// frequencies), and for method m a Table warmed up as the service's
// background warm-up does, with its kept rows.
func zipfRestore(t testing.TB, m Method) (freqs []int64, warm *Table, kept []byte) {
	t.Helper()
	freqs = zipfFreqs(t, 1e-4)
	warm = mustTable(t, benchPrivacy(t), mustSampling(t, SchemePPSWOR, 1e-4, 1, nil), m)
	if _, err := warm.WarmUp(context.Background(), 1<<20); err != nil {
		t.Fatal(err)
	}
	if warm.stationary() == nil {
		t.Fatal("the warm-up did not reach the stationary cycle")
	}
	return freqs, warm, warm.KeptRows(12 << 20)
}

// TestSkeletonModelMatchesRestore: the model of the rows a restored Table's
// draws step (skeletonSteps) agrees within 1% with the rows the draws of the
// Zipf workload's sample really step after RestoreKeptRows, at the skeleton
// the warm-up keeps (a checkpoint every denseSpacing rows below 2^16, the
// first and middle rows of each block), and the skeleton matches what the
// restored Table holds. The model is what docs/performance.md's table of
// other skeletons rests on.
func TestSkeletonModelMatchesRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("a warm-up of 2^20 rows")
	}
	if referenceOnly {
		t.Skip("the reference Prepare prepares nothing: the model counts the rows Prepare steps")
	}
	t.Parallel()
	freqs, warm, kept := zipfRestore(t, MethodDiscrete)
	tb := mustTableLike(t, warm)
	if err := tb.RestoreKeptRows(kept); err != nil {
		t.Fatal(err)
	}
	pl, statFrom := tb.plan, tb.stationary().from()
	sk := skeleton{low: denseSpacing, perBlock: 2}
	if got, want := int64(len(tb.cps)), pl.from/sk.low; tb.spacing != sk.low || got < want {
		t.Fatalf("restored checkpoints: spacing %d, %d below 2^16; the model assumes spacing %d, %d", tb.spacing, got, sk.low, want)
	}
	if blocks := (statFrom - pl.from + pl.block - 1) / pl.block; int64(len(tb.starts)) < blocks || int64(len(tb.mids)) < blocks-1 {
		t.Fatalf("restored %d block starts and %d middle rows for %d blocks", len(tb.starts), len(tb.mids), blocks)
	}
	before := tb.RowsStepped()
	dr := tb.NewDrawer(rand.New(rand.NewPCG(1, 2)))
	dr.Prepare(freqs, 2)
	real := tb.RowsStepped() - before
	model := skeletonSteps(sk, pl, statFrom, freqs)
	if d := real - model; d*100 > real || -d*100 > real {
		t.Fatalf("the draws stepped %d rows after the restore; the model says %d", real, model)
	}
	// The model's teeth: a skeleton twice as dense below 2^16 saves rows there.
	if denser := skeletonSteps(skeleton{low: sk.low / 2, perBlock: 2}, pl, statFrom, freqs); denser >= model {
		t.Fatalf("a denser skeleton steps %d rows, not fewer than %d", denser, model)
	}
}

// BenchmarkKeptSkeletonTrade reports, for public skeletons denser than the
// warm-up's (checkpoints every low rows below 2^16, perBlock rows per
// block), the rows the Zipf workload's draws step after a restore (the
// model, checked by TestSkeletonModelMatchesRestore), the rows kept, and
// what they would cost stored and resident at this encoding's measured
// bytes per row. It times nothing: run with -benchtime 1x.
func BenchmarkKeptSkeletonTrade(b *testing.B) {
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		freqs, warm, kept := zipfRestore(b, m)
		tb := mustTableLike(b, warm)
		if err := tb.RestoreKeptRows(kept); err != nil {
			b.Fatal(err)
		}
		pl, statFrom := tb.plan, tb.stationary().from()
		held, resident := 0, 0
		for _, rows := range [][]*rowState{tb.cps, slices.Collect(maps.Values(tb.starts)), slices.Collect(maps.Values(tb.mids)),
			slices.Collect(maps.Values(tb.inner)), slices.Collect(maps.Values(tb.warms))} {
			for _, r := range rows {
				held++
				resident += residentBytes(r)
			}
		}
		storedPerRow := float64(len(kept)) / float64(held)
		residentPerRow := float64(resident) / float64(held)
		for _, low := range []int64{64, 32, 16, 8, 4, 2} {
			for _, per := range []int64{2, 4, 8, 16} {
				sk := skeleton{low: low, perBlock: per}
				b.Run(fmt.Sprintf("%s/low=%d/per-block=%d", m, low, per), func(b *testing.B) {
					var steps int64
					for b.Loop() {
						steps = skeletonSteps(sk, pl, statFrom, freqs)
					}
					rows := float64(sk.keptRows(pl, statFrom))
					b.ReportMetric(float64(steps), "rows-stepped")
					b.ReportMetric(rows, "kept-rows")
					b.ReportMetric(rows*storedPerRow/(1<<20), "stored-MB")
					b.ReportMetric(rows*residentPerRow/(1<<20), "resident-MB")
				})
			}
		}
	}
}

// residentBytes returns the memory a kept row holds: its struct and the
// backing arrays of its break points, masses and corrections.
func residentBytes(r *rowState) int {
	return int(unsafe.Sizeof(*r)) + 8*cap(r.x) + 8*cap(r.m) + int(unsafe.Sizeof(adjust{}))*cap(r.adj)
}
