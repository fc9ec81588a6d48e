package sanitize

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// chainTable returns a table of cheap rows (L about 30) whose rows past
// 1000 come by restart in blocks of 200 rows with a warm-up of 100.
func chainTable(t testing.TB, m Method) *Table {
	t.Helper()
	tb := mustTable(t, mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), m)
	tb.plan = makeRestartPlan(1000, 100, 200, tb.qConst)
	return tb
}

// TestChainCost checks the cost model against its closed forms
// (docs/algorithms.md, "Rows by verified restart"): the rows between, plus
// a warm-up per junction checked, never for a walk that checks two.
func TestChainCost(t *testing.T) {
	t.Parallel()
	const F, W, B = 1000, 100, 200
	cases := []struct {
		name       string
		plan       bool
		kept       []int64 // verified junction rows kept
		c, own, to int64
		want       int64
	}{
		{"no restarts", false, nil, 5, 0, 5000, 4995},
		{"below the first junction", true, nil, 0, 0, F - 1, F - 1},
		{"across the first junction", true, nil, 768, 0, F + 50, F + 50 - 768 + W},
		{"across a verified junction", true, []int64{F}, 768, 0, F + 50, F + 50 - 768},
		{"across two junctions", true, nil, 768, 0, F + B + 50, never},
		{"across two, one verified", true, []int64{F}, 768, 0, F + B + 50, F + B + 50 - 768 + W},
		{"across many verified", true, []int64{F, F + B, F + 2*B}, 768, 0, F + 2*B + 7, F + 2*B + 7 - 768},
		{"a fresh start inside its block", true, nil, F + B - W, F + B, F + B + 50, W + 50},
		{"a fresh start one block below", true, nil, F - W, F, F + B + 50, 2*W + B + 50},
		{"one block below, junction verified", true, []int64{F + B}, F - W, F, F + B + 50, W + B + 50},
		{"from the verified junction row", true, []int64{F + B}, F + B, 0, F + B + 50, 50},
		{"to the row itself", true, nil, F + 20, 0, F + 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := chainTable(t, MethodDiscrete)
			if !tc.plan {
				tb.plan = restartPlan{from: never}
			}
			for _, a := range tc.kept {
				tb.keepBlockStart(tb.guessRow(&rowState{}, a)) // any row: the model reads the index
			}
			if got := tb.cost(tc.c, tc.own, tc.to); got != tc.want {
				t.Errorf("cost(%d, %d, %d) = %d, want %d", tc.c, tc.own, tc.to, got, tc.want)
			}
		})
	}
}

// TestChainStartsCheapest checks cursorFor against every start the test
// enumerates itself (the checkpoint below, a fresh start inside the block,
// a fresh start one block below): the chosen start is never dearer, and
// walking from it gives the row a sequential walk gives, with both its
// junctions verified.
func TestChainStartsCheapest(t *testing.T) {
	t.Parallel()
	ref := chainTable(t, MethodMaxSeparation)
	want := rowsFrom(t, ref, 1, 1900) // sequential, through every junction
	for _, i := range []int64{999, 1000, 1001, 1050, 1199, 1200, 1201, 1350, 1399, 1400, 1401, 1799} {
		tb := chainTable(t, MethodMaxSeparation)
		pl := tb.plan
		cu := tb.cursorFor(i)
		got := tb.cost(cu.cur.i, cu.own(), i)
		alts := map[string]int64{"checkpoint": tb.cost(tb.checkpointBelow(i).i, 0, i)}
		if a := pl.junctionBelow(i); i >= pl.from && pl.inside(i, a) {
			alts["inside"] = tb.cost(a-pl.warm, a, i)
		} else if i >= pl.from && a > pl.from {
			alts["below"] = tb.cost(a-pl.block-pl.warm, a-pl.block, i)
		}
		for name, c := range alts {
			if got > c {
				t.Errorf("row %d: the chosen start costs %d, the %s start %d", i, got, name, c)
			}
		}
		var r Row
		if err := tb.walk(context.Background(), cu, i, i, func(s *rowState, d int64) bool {
			r = s.row(d, nil)
			return false
		}); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !equalRows(r, want[i-1]) {
			t.Errorf("row %d from the chosen start differs from the sequential walk", i)
		}
		if tb.plan.isJunction(i) || tb.plan.isJunction(i+1) {
			if js := tb.Junctions(); js.Coalesced+js.Audited == 0 {
				t.Errorf("row %d next to a junction handed out with no junction verified", i)
			}
		}
	}
}

// TestChainHandsOutOnlyVerifiedRows plants a junction that fails (chains
// restarted two rows below it): the walk hands out no row next to it, not
// even when the caller would stop there (the row below the junction is
// held back until the junction is checked), and a cursor's warm-up rows
// are never handed out.
func TestChainHandsOutOnlyVerifiedRows(t *testing.T) {
	t.Parallel()
	tb := chainTable(t, MethodDiscrete)
	tb.plan = makeRestartPlan(4096, 2, 512, tb.qConst)
	a := tb.plan.from + tb.plan.block
	for _, stop := range []int64{a - 1, a, a + 3} {
		var seen []int64
		err := tb.Rows(a-3, a+3, func(r Row) bool {
			seen = append(seen, r.Frequency)
			return r.Frequency < stop
		})
		if !errors.Is(err, ErrJunction) {
			t.Errorf("stop at %d: %v, want a junction error", stop, err)
		}
		if !slices.Equal(seen, []int64{a - 3, a - 2}) {
			t.Errorf("stop at %d: rows %v handed out, want %d and %d only", stop, seen, a-3, a-2)
		}
	}
	// A fresh start of the block above: its rows below the block's second
	// are its warm-up, not rows of the table.
	g := a - tb.plan.warm
	cu := tb.insideCursor(tb.guessRow(&rowState{}, g), a)
	called := false
	err := tb.walk(context.Background(), cu, g+1, a+5, func(*rowState, int64) bool { called = true; return true })
	if err == nil || !strings.Contains(err.Error(), "internal error") || called {
		t.Errorf("walk from a warm-up row: %v (rows handed out: %v)", err, called)
	}
}

// TestChainWalkerKeepsItsCursor checks that a rowWalker steps on along its
// cursor for nearby ascending frequencies, starts afresh across a wide gap,
// and gives the rows Row gives.
func TestChainWalkerKeepsItsCursor(t *testing.T) {
	t.Parallel()
	tb := chainTable(t, MethodMaxSeparation)
	ref := chainTable(t, MethodMaxSeparation)
	w := rowWalker{t: tb}
	var prev *cursor
	for k, f := range []int64{1040, 1041, 1060, 1650, 1651} {
		s, d, err := w.sampler(f, false)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ref.Row(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&rowState{i: s.i, pi: s.pi, x: s.x, m: s.m}).row(d, nil); !equalRows(got, r) {
			t.Errorf("frequency %d: the walker's row differs from Row", f)
		}
		if same := w.cu == prev; k > 0 && same != (f != 1650) {
			t.Errorf("frequency %d: cursor kept = %v", f, same)
		}
		prev = w.cu
	}
}

// TestChainCheckpointsInAnyOrder checks that the rows of the chain from
// row 0 become checkpoints also when the final chain (above the last
// junction) was walked first: Prepare's clusters walk both side by side,
// and a checkpoint kept only above the last one would leave the chain
// below the first junction with row 0 alone, so that every later walk
// there started from row 0.
func TestChainCheckpointsInAnyOrder(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		tb := chainTable(t, m)
		tb.plan = makeRestartPlan(1000, 100, 200, 2000) // the final chain from 2000 on
		high := tb.plan.final + 3*initialSpacing + 5
		if _, err := tb.Row(high); err != nil {
			t.Fatal(err)
		}
		if cp := tb.checkpointBelow(high); cp.i < tb.plan.final {
			t.Fatalf("%s: the walk to %d kept no checkpoint above the last junction %d (the nearest is %d)", m, high, tb.plan.final, cp.i)
		}
		low := tb.plan.from - 7
		if _, err := tb.Row(low); err != nil {
			t.Fatal(err)
		}
		want := low / initialSpacing * initialSpacing
		cp := tb.checkpointBelow(low)
		if cp.i != want {
			t.Fatalf("%s: after a walk to %d the checkpoint below it is row %d, want %d", m, low, cp.i, want)
		}
		// The checkpoint is the table's row there.
		if r, err := chainTable(t, m).Row(want); err != nil || !equalRows(cp.row(0, nil), r) {
			t.Errorf("%s: the checkpoint at %d differs from a fresh table's row (%v)", m, want, err)
		}
	}
}

// TestChainKeptRoundTrip checks that the kept rows, restored into a fresh
// table, give the same rows without verifying any junction again, and that
// restore refuses rows out of place.
func TestChainKeptRoundTrip(t *testing.T) {
	t.Parallel()
	src := chainTable(t, MethodMaxSeparation)
	rowsFrom(t, src, 1, 1500)                // checkpoints, every junction row, inner rows
	if _, err := src.Row(1750); err != nil { // a fresh start inside a block: a warm-up row
		t.Fatal(err)
	}
	k := src.kept()
	if len(k.starts) == 0 || len(k.inner) == 0 || len(k.warms) == 0 || len(k.checkpoints) < 2 {
		t.Fatalf("kept %d starts, %d inner, %d warm-ups, %d checkpoints", len(k.starts), len(k.inner), len(k.warms), len(k.checkpoints))
	}
	dst := chainTable(t, MethodMaxSeparation)
	if err := dst.restore(k); err != nil {
		t.Fatal(err)
	}
	if got := dst.kept(); !maps.Equal(got.starts, k.starts) || !maps.Equal(got.inner, k.inner) || !slices.Equal(got.checkpoints, k.checkpoints) {
		t.Error("the restored table keeps other rows")
	}
	for _, i := range []int64{1200, 1201, 1399, 1400, 1433} {
		got, err := dst.Row(i)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := src.Row(i); !equalRows(got, want) {
			t.Errorf("row %d of the restored table differs", i)
		}
	}
	if js := dst.Junctions(); js != (JunctionStats{}) {
		t.Errorf("junctions verified again: %+v", js)
	}
	if err := dst.restore(k); err == nil {
		t.Error("restore into a table that keeps rows accepted")
	}

	// A stationary cycle (a table without restarts) round-trips too.
	st := mustTable(t, mustPrivacy(t, 1, 1e-6), Sampling{Scheme: SchemeNone}, MethodDiscrete)
	from, ok := st.StationaryFrom()
	if !ok {
		t.Fatal("no stationary rows")
	}
	sd := mustTable(t, st.p, st.s, st.m)
	if err := sd.restore(st.kept()); err != nil {
		t.Fatal(err)
	}
	if got, ok := sd.StationaryFrom(); !ok || got != from {
		t.Errorf("restored stationary point %d, %v; want %d", got, ok, from)
	}

	row := func(i int64) *rowState { return src.guessRow(&rowState{}, i) }
	bad := []struct {
		name string
		edit func(*keptSet)
	}{
		{"spacing not a power of two", func(k *keptSet) { k.spacing = 300 }},
		{"no row 0", func(k *keptSet) { k.checkpoints = k.checkpoints[1:] }},
		{"checkpoint inside the blocks", func(k *keptSet) { k.checkpoints = append(k.checkpoints, row(1280)) }},
		{"junction row under another index", func(k *keptSet) { k.starts[1400] = row(1401) }},
		{"junction row off the junctions", func(k *keptSet) { k.starts[1300] = row(1300) }},
		{"inner row off its place", func(k *keptSet) { k.inner[1205] = row(1205) }},
		{"warm-up row of no junction", func(k *keptSet) { k.warms[1300] = row(1299) }},
		{"misshapen row", func(k *keptSet) { r := row(1400); r.x[1] = 3; k.starts[1400] = r }},
		{"stationary rows below q's constant point", func(k *keptSet) { k.cycle = []*rowState{row(5)} }},
	}
	for _, tc := range bad {
		k := src.kept()
		tc.edit(&k)
		if err := chainTable(t, MethodMaxSeparation).restore(k); err == nil {
			t.Errorf("%s: restored", tc.name)
		}
	}
}

// TestChainBreakPointsAcrossJunctions checks breakPoints on rows by
// restart against brute force (every break point of every row 1..n, from
// PieceRows), on a fresh table (the walk checks the junctions) and on one
// that already keeps the junction rows (it copies them).
func TestChainBreakPointsAcrossJunctions(t *testing.T) {
	t.Parallel()
	const n = 1500
	tb := chainTable(t, MethodMaxSeparation)
	var want []float64
	if err := chainTable(t, MethodMaxSeparation).PieceRows(1, n, func(_ int64, _ float64, x, _ []float64, d int64, _ bool) bool {
		for _, v := range x {
			want = append(want, v+float64(d))
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	for _, pass := range []string{"fresh", "junction rows kept"} {
		got, err := tb.breakPoints(n)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d break points, brute force %d", pass, len(got), len(want))
		}
		if len(tb.kept().starts) == 0 {
			t.Fatalf("%s: no junction row kept", pass)
		}
	}
}

// TestChainConcurrentReaders runs Row, Draw and Rows from several
// goroutines on one table with restarts (the kept rows change under them):
// every row equals the sequential walk's.
func TestChainConcurrentReaders(t *testing.T) {
	t.Parallel()
	ref := rowsFrom(t, chainTable(t, MethodMaxSeparation), 1, 2400)
	tb := chainTable(t, MethodMaxSeparation)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := newRand(uint64(g))
			for range 25 {
				i := 900 + int64(rng.Uint64()%1490)
				r, err := tb.Row(i)
				if err != nil || !equalRows(r, ref[i-1]) {
					t.Errorf("goroutine %d: row %d differs (%v)", g, i, err)
					return
				}
				if _, err := tb.Draw(i+1, rng); err != nil {
					t.Error(err)
				}
				if err := tb.Rows(i, i+10, func(r Row) bool {
					if !equalRows(r, ref[r.Frequency-1]) {
						t.Errorf("goroutine %d: Rows: row %d differs", g, r.Frequency)
					}
					return true
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
