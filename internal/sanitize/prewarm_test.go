package sanitize

import (
	"context"
	"runtime"
	"testing"
)

// junctionModes are the three ways a walk gets the warm-up rows its
// junction checks read: each on its own (warmRow, the reference), beside
// the walk's rows with the early stop (stepLock), and the same with the
// first half of each warm-up computed ahead on a second goroutine
// (prewarm.go; on one core the same as beside).
var junctionModes = []struct {
	name             string
	plain, noPrewarm bool
}{
	{"plain", true, true},
	{"beside", false, true},
	{"ahead", false, false},
}

// TestJunctionWarmUpsMatchPlain: a long walk across many junctions hands
// out the same rows, bit for bit, and verifies its junctions the same way
// (coalesced or audited), whichever way it gets its warm-up rows. The
// oracle is the plain walk, whose every junction check warms its chain up
// from the guess row (warmRow). The early stop of the warm-up beside the
// walk saves rows where junctions coalesce, with or without the heads
// computed ahead (never more rows than plain).
// Tables: the production warm-up and block (eps 0.2, delta 1e-7, ppswor tau
// 2e-5, the tables route's cold case, and eps 0.5) with the first junction
// moved down, and chainTable's warm-up shorter than its block.
func TestJunctionWarmUpsMatchPlain(t *testing.T) {
	t.Parallel()
	type tcase struct {
		name string
		make func(t *testing.T) *Table
		n    int64 // rows 1..n
	}
	prod := func(eps, delta float64, m Method) func(t *testing.T) *Table {
		return func(t *testing.T) *Table {
			return newTable(mustPrivacy(t, eps, delta), mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), m, testPlan)
		}
	}
	var cases []tcase
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		cases = append(cases,
			tcase{"eps=0.2/" + string(m), prod(0.2, 1e-7, m), 4*338 + 12*338 + 5},
			tcase{"eps=0.5/" + string(m), prod(0.5, 1e-6, m), 0},
			tcase{"warm<block/" + string(m), func(t *testing.T) *Table { return chainTable(t, m) }, 1000 + 10*200 + 99},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var want []*rowState
			var plain JunctionStats
			var plainSteps int64
			for _, mode := range junctionModes {
				tb := c.make(t)
				tb.plainJunctions, tb.noPrewarm = mode.plain, mode.noPrewarm
				n := c.n
				if n == 0 {
					n = tb.plan.from + 10*tb.plan.block + 3
				}
				k := 0
				err := tb.rows(context.Background(), 1, n, func(r *rowState, d int64) bool {
					if d != 0 {
						t.Fatalf("%s: row %d from the stationary cycle", mode.name, r.i+d)
					}
					if mode.plain {
						want = append(want, r.clone())
					} else if !rowsEqual(r, want[k]) {
						t.Fatalf("%s: row %d differs from the plain walk's", mode.name, r.i)
					}
					k++
					return true
				})
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				if k != len(want) || int64(k) != n {
					t.Fatalf("%s: %d rows, want %d", mode.name, k, n)
				}
				js, steps := tb.Junctions(), tb.RowsStepped()
				switch mode.name {
				case "plain":
					plain, plainSteps = js, steps
					if js.Coalesced+js.Audited < 8 {
						t.Fatalf("the walk verifies %+v junctions, want at least 8", js)
					}
				default:
					if steps > plainSteps || (js.Coalesced > 0 && steps == plainSteps && !referenceOnly) {
						t.Errorf("%s: %d rows stepped, plain %d (%d junctions coalesced)", mode.name, steps, plainSteps, js.Coalesced)
					}
				}
				if js != plain {
					t.Errorf("%s: junctions %+v, plain %+v", mode.name, js, plain)
				}
				t.Logf("%s: %+v, %d rows stepped", mode.name, js, steps)
			}
		})
	}
}

// TestPrewarmStopsWithTheWalk: a walk that stops early (its caller wants
// no more rows) stops the warm-up heads it has computed ahead before it
// returns: once it has returned, the table steps no row, and it stepped at
// most the heads that may wait for it (prewarmAhead) and the one in
// progress beyond what the plain walk would have.
func TestPrewarmStopsWithTheWalk(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("no warm-ups ahead on one core")
	}
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		tb := chainTable(t, m)
		stopAt := tb.plan.from + 3*tb.plan.block + 50
		if err := tb.rows(context.Background(), 1, tb.plan.from+40*tb.plan.block, func(r *rowState, _ int64) bool {
			return r.i < stopAt
		}); err != nil {
			t.Fatal(err)
		}
		after := tb.RowsStepped()
		for range 100 {
			runtime.Gosched()
		}
		if n := tb.RowsStepped(); n != after {
			t.Fatalf("%s: %d rows stepped after the walk returned", m, n-after)
		}
		// Plain: row 0 .. stopAt and the warm-ups of the 4 junctions below stopAt.
		if limit := stopAt + int64(4+prewarmAhead+1)*tb.plan.warm; after > limit {
			t.Errorf("%s: %d rows stepped, want at most %d", m, after, limit)
		}
	}
}
