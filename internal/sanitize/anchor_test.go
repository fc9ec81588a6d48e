package sanitize

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// TestAnchoredSamplers: an anchored row holds its sampler from Anchor on,
// over the row's own break points and masses (no copy) and equal bit for
// bit to the sampler a walk to that row builds; a Drawer preparing exactly
// the
// anchored frequencies takes those samplers and steps no row, and its draws
// are those of a table that computed every row itself; a frequency that is
// not anchored has no anchored sampler.
func TestAnchoredSamplers(t *testing.T) {
	t.Parallel()
	c, warm, data := prepareCase(t)
	rng := rand.New(rand.NewPCG(39, 4))
	top := slices.Max(keptStarts(warm))
	places := make([]int64, 200)
	for k := range places {
		places[k] = 1 + rng.Int64N(top)
	}
	tb := newTable(c.p, c.s, c.m, c.plan)
	if err := tb.RestoreKeptRows(data); err != nil {
		t.Fatal(err)
	}
	n, err := tb.Anchor(context.Background(), places, math.MaxInt64)
	if err != nil || n == 0 {
		t.Fatalf("Anchor kept %d rows (%v)", n, err)
	}
	plain := newTable(c.p, c.s, c.m, c.plan)
	var anchoredAt []int64
	for _, a := range tb.anchors {
		s := tb.anchoredSampler(a.row.i)
		if s == nil || &s.x[0] != &a.row.x[0] || &s.m[0] != &a.row.m[0] {
			t.Fatalf("row %d: the anchored sampler is missing or copies the row", a.row.i)
		}
		ref, _, err := plain.samplerFor(a.row.i)
		if err != nil {
			t.Fatal(err)
		}
		if s.i != ref.i || s.pi != ref.pi || !slices.Equal(s.x, ref.x) || !slices.Equal(s.m, ref.m) || !slices.Equal(s.cum, ref.cum) {
			t.Fatalf("row %d: the anchored sampler differs from the walked one", a.row.i)
		}
		anchoredAt = append(anchoredAt, a.row.i)
	}
	for _, a := range tb.anchors {
		if _, ok := slices.BinarySearch(anchoredAt, a.row.i+1); !ok && tb.anchoredSampler(a.row.i+1) != nil {
			t.Fatalf("row %d: an anchored sampler for a row that is not anchored", a.row.i+1)
		}
	}
	before := tb.RowsStepped()
	dr := tb.NewDrawer(rand.New(rand.NewPCG(1, 1)))
	dr.Prepare(anchoredAt, 2)
	if n := tb.RowsStepped() - before; n != 0 {
		t.Errorf("preparing the anchored frequencies stepped %d rows, want 0", n)
	}
	for _, f := range anchoredAt {
		r := dr.sparse[f]
		if f < denseDraws {
			r = dr.dense[f]
		}
		if r.s != tb.anchoredSampler(f) {
			t.Fatalf("row %d: the Drawer did not take the anchored sampler", f)
		}
	}
	got := seededDraws(t, tb, anchoredAt, 2)
	sameDraws(t, "anchored", anchoredAt, got, seededDraws(t, newTable(c.p, c.s, c.m, c.plan), anchoredAt, 0))
}

// TestAnchorKeepsTheRowsThatSaveMost: Anchor bounded to about half the
// break points its places' rows hold keeps rows holding at most the bound,
// each ranked above every row it dropped, the rank being what the row
// saves a walk to its place per break point it holds: the rows the cheapest
// start of the restored table's skeleton computes to reach it
// (skeletonCost, worked out here on a restored table that holds no anchor),
// over the row's break points (from a table that computed every row
// itself). Anchoring again ranks by the table's starts then, the anchors
// it holds aside (an anchored place's startCost is 0, its saving is not);
// under a bound that holds every row, every place is kept.
func TestAnchorKeepsTheRowsThatSaveMost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, warm, data := prepareCase(t)
	restored := func() *Table {
		tb := newTable(c.p, c.s, c.m, c.plan)
		if err := tb.RestoreKeptRows(data); err != nil {
			t.Fatal(err)
		}
		return tb
	}
	skeleton, plain := restored(), newTable(c.p, c.s, c.m, c.plan)
	rng := rand.New(rand.NewPCG(40, 5))
	top := slices.Max(keptStarts(warm))
	var places []int64
	for range 150 {
		places = append(places, 1+rng.Int64N(top))
	}
	places = slices.Compact(slices.Sorted(slices.Values(places)))
	width := map[int64]int{}
	total := 0
	for _, f := range places {
		r, d, err := plain.stateFor(f)
		if err != nil || d != 0 {
			t.Fatalf("row %d: %v (shift %d)", f, err, d)
		}
		width[f] = len(r.x)
		total += len(r.x)
	}
	ranks := func(tb *Table) map[int64]anchorRank {
		rank := map[int64]anchorRank{}
		for _, f := range places {
			rank[f] = anchorRank{saving: float64(tb.skeletonCost(f)) / float64(width[f]), i: f}
		}
		return rank
	}
	for _, bound := range []int{total, total / 2, total / 3, total / 5, 2 * total / 3} {
		tb := restored()
		var kept []int64
		rank := ranks(skeleton)
		for call := range 2 {
			if call == 1 {
				// The anchors of the first call aside, on the starts
				// its walk left: some anchored place costs a walk
				// nothing now, but saves one.
				rank = ranks(tb)
				if !slices.ContainsFunc(kept, func(f int64) bool { return tb.startCost(f) == 0 && rank[f].saving > 0 }) {
					t.Fatalf("bound %d: no anchored place ranks above 0", bound)
				}
			}
			if _, err := tb.anchor(ctx, places, math.MaxInt64, bound); err != nil {
				t.Fatal(err)
			}
			var again []int64
			points := 0
			for _, a := range tb.anchors {
				again = append(again, a.row.i)
				points += len(a.row.x)
				if a.rank != rank[a.row.i] {
					t.Fatalf("bound %d, call %d: row %d ranked %+v, want %+v", bound, call, a.row.i, a.rank, rank[a.row.i])
				}
			}
			if points > bound || !slices.IsSorted(again) {
				t.Fatalf("bound %d, call %d: the rows kept hold %d break points (ascending: %v)", bound, call, points, slices.IsSorted(again))
			}
			kept = again
		}
		var dropped []int64
		for _, f := range places {
			if _, ok := slices.BinarySearch(kept, f); !ok {
				dropped = append(dropped, f)
			}
		}
		if (bound == total) != (len(dropped) == 0) {
			t.Fatalf("bound %d of %d: %d of %d places dropped", bound, total, len(dropped), len(places))
		}
		for _, d := range dropped {
			for _, k := range kept {
				if !rank[d].below(rank[k]) {
					t.Fatalf("bound %d: row %d (rank %+v) dropped, row %d (rank %+v) kept", bound, d, rank[d], k, rank[k])
				}
			}
		}
	}
}

// TestAnchorKeeperRanks: rows of random widths and ranks offered to an
// anchorKeeper in random order: the rows it keeps hold at most its bound,
// and each ranks above every row it dropped; under a bound that holds them
// all it keeps them all.
func TestAnchorKeeperRanks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 6))
	for round := range 200 {
		n := 1 + rng.IntN(40)
		rows := make([]*anchored, n)
		total := 0
		for k := range rows {
			w := 2 + rng.IntN(50)
			rows[k] = &anchored{row: &rowState{i: int64(k + 1), x: make([]float64, w)}, rank: anchorRank{saving: float64(rng.IntN(8)), i: int64(k + 1)}}
			total += w
		}
		bound := total
		if round%4 != 0 {
			bound = rng.IntN(total + 1)
		}
		keep := anchorKeeper{maxPoints: bound}
		for _, a := range rows {
			keep.offer(a)
		}
		kept := keep.kept()
		points := 0
		for _, a := range kept {
			points += len(a.row.x)
		}
		if points > bound || (bound == total && len(kept) != n) {
			t.Fatalf("round %d: kept %d of %d rows holding %d break points, bound %d of %d", round, len(kept), n, points, bound, total)
		}
		for _, d := range rows {
			if slices.Contains(kept, d) {
				continue
			}
			for _, a := range kept {
				if !d.rank.below(a.rank) {
					t.Fatalf("round %d: row %d (rank %+v) dropped, row %d (rank %+v) kept", round, d.row.i, d.rank, a.row.i, a.rank)
				}
			}
		}
	}
}

// TestAnchoredRows: on a table restored from kept rows and then anchored
// near the frequencies to be drawn (some anchors below a frequency, some
// above it, some inside blocks), Drawer.Prepare steps exactly the rows a
// brute-force count gives (each distinct frequency walked from the nearest
// of the previous frequency, the nearest kept row below it and the nearest
// anchored row below it in its own block, or on the chain from row 0 below
// the first restart), fewer than without the anchors; the draws are those
// of a table that computed every row itself, bit for bit; a bounded Anchor
// stops soon after its bound; a cancelled one keeps nothing.
func TestAnchoredRows(t *testing.T) {
	t.Parallel()
	c, warm, data := prepareCase(t)
	top := slices.Max(keptStarts(warm))
	rng := rand.New(rand.NewPCG(38, 2))
	freqs := make([]int64, 300)
	var anchors []int64
	for k := range freqs {
		freqs[k] = 1 + rng.Int64N(top)
		if k%3 == 0 {
			freqs[k] = 1 + rng.Int64N(2000)
		}
		anchors = append(anchors, max(1, freqs[k]-rng.Int64N(40)+8)) // a noisy guess, up to 8 above
	}
	pl := warm.plan
	// The rows a walk may start from: the previous frequency's cursor (ties
	// go to it), a checkpoint or a junction's row (every junction's row is
	// kept) and, inside a block, its middle row, the anchored rows and the
	// rows inside blocks that Anchor's own walks kept, or below the first
	// restart the anchored rows (ties go to the kept row). A cursor started inside a block hands out
	// no row next to the block's end: a junction check it does not make.
	count := func(kept, insideOnly []int64) int64 {
		n, prev, prevInside := int64(0), int64(-1), false
		for _, f := range slices.Compact(slices.Sorted(slices.Values(freqs))) {
			a := pl.junctionBelow(f)
			inside := f >= pl.from && pl.inside(f, a)
			start, startInside := kept[sort.Search(len(kept), func(k int) bool { return kept[k] > f })-1], false
			if prev >= start && (!prevInside || inside) {
				start, startInside = prev, prevInside
			}
			if k := sort.Search(len(insideOnly), func(k int) bool { return insideOnly[k] > f }); k > 0 && (f < pl.from || inside) {
				if r := insideOnly[k-1]; r > start && (f < pl.from || r > a) {
					start, startInside = r, inside
				}
			}
			n += f - start
			prev, prevInside = f, startInside
		}
		return n
	}
	trusted := func(tb *Table) (kept, insideOnly []int64) {
		for _, r := range tb.cps {
			kept = append(kept, r.i)
		}
		for _, m := range []map[int64]*rowState{tb.mids, tb.inner} {
			for i := range m {
				insideOnly = append(insideOnly, i)
			}
		}
		return append(kept, slices.Collect(maps.Keys(tb.starts))...), insideOnly
	}
	kept, insideOnly := trusted(warm)
	slices.Sort(kept)
	slices.Sort(insideOnly)
	without := count(kept, insideOnly)
	sortedAnchors := slices.Compact(slices.Sorted(slices.Values(anchors)))
	wantOut := seededDraws(t, newTable(c.p, c.s, c.m, c.plan), freqs, 0)
	for _, workers := range []int{1, 2} {
		tb := newTable(c.p, c.s, c.m, c.plan)
		if err := tb.RestoreKeptRows(data); err != nil {
			t.Fatal(err)
		}
		n, err := tb.Anchor(context.Background(), anchors, math.MaxInt64)
		if err != nil || n != len(sortedAnchors) || tb.Anchored() != n {
			t.Fatalf("Anchor kept %d rows (%v), Anchored %d; want %d", n, err, tb.Anchored(), len(sortedAnchors))
		}
		kept, insideOnly := trusted(tb)
		insideOnly = append(insideOnly, sortedAnchors...)
		slices.Sort(kept)
		slices.Sort(insideOnly)
		want := count(kept, insideOnly)
		if want >= without {
			t.Fatalf("the test's anchors save nothing: %d rows with them, %d without", want, without)
		}
		before := tb.RowsStepped()
		got := seededDraws(t, tb, freqs, workers)
		if n := tb.RowsStepped() - before; n != want {
			t.Errorf("%d workers: Prepare stepped %d rows, want %d (%d without anchors)", workers, n, want, without)
		}
		sameDraws(t, fmt.Sprintf("%d workers", workers), freqs, got, wantOut)
	}
	// The step bound: the walk stops after the row under way once it has
	// stepped maxSteps rows, keeping the rows it reached.
	bounded := newTable(c.p, c.s, c.m, c.plan)
	if err := bounded.RestoreKeptRows(data); err != nil {
		t.Fatal(err)
	}
	before := bounded.RowsStepped()
	if n, err := bounded.Anchor(context.Background(), anchors, 200); err != nil || n == 0 || n >= len(sortedAnchors) {
		t.Fatalf("Anchor with 200 steps kept %d of %d rows (%v)", n, len(sortedAnchors), err)
	}
	if n := bounded.RowsStepped() - before; n > 200+RestartCost(c.p) {
		t.Fatalf("Anchor with 200 steps stepped %d rows", n)
	}
	tb := newTable(c.p, c.s, c.m, c.plan)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := tb.Anchor(ctx, anchors, math.MaxInt64); !errors.Is(err, context.Canceled) || n != 0 || tb.Anchored() != 0 {
		t.Fatalf("a cancelled Anchor kept %d rows (%v)", tb.Anchored(), err)
	}
}
