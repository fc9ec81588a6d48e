package sanitize

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
)

// restartCase is one table of the restart grid: the production warm-up and
// block length, with the first junction moved down to warm*4 so that the
// chain from row 0 (the reference) stays cheap.
type restartCase struct {
	name string
	p    Privacy
	s    Sampling
	m    Method
}

func (c restartCase) tables(t testing.TB, plan func(Privacy, int64) restartPlan) (restarted, chain *Table, n int64) {
	t.Helper()
	restarted = newTable(c.p, c.s, c.m, plan)
	chain = newTable(c.p, c.s, c.m, plan)
	chain.plan = restartPlan{from: never} // the chain from row 0, with the same delta
	if !restarted.plan.enabled() {
		t.Fatalf("%s: the plan has no restarts", c.name)
	}
	n = restarted.plan.from + 3*restarted.plan.block + 7
	return restarted, chain, n
}

// testPlan is the production plan with the first junction at 4 warm-ups.
func testPlan(p Privacy, qConst int64) restartPlan {
	prod := newRestartPlan(p, never)
	return makeRestartPlan(4*prod.warm, prod.warm, prod.block, qConst)
}

// restartGrid covers every scheme, powers 0.5..2, epsilon 0.05..2, delta
// 1e-12..1e-2 and both methods, with q below 1 over the rows compared
// (thresholds scaled to the table's length).
func restartGrid(t testing.TB) []restartCase {
	var out []restartCase
	for _, eps := range []float64{0.05, 0.1, 0.5, 1, 2} {
		for _, delta := range []float64{1e-12, 1e-6, 1e-2} {
			p := mustPrivacy(t, eps, delta)
			n := float64(testPlan(p, never).from + 4*testPlan(p, never).block)
			custom := make([]float64, int(n)+16)
			for i := range custom {
				custom[i] = 0.05 + 0.9*float64(i)/float64(len(custom))
			}
			samplings := []Sampling{
				mustSampling(t, SchemePPSWOR, 2/n, 1, nil),
				mustSampling(t, SchemePPSWOR, 1/math.Sqrt(n), 0.5, nil),
				mustSampling(t, SchemePriority, 0.9/(n*n), 2, nil),
				mustSampling(t, SchemeCustom, 0, 0, custom),
			}
			for _, s := range samplings {
				for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
					if eps == 0.05 && delta == 1e-12 && s.Scheme != SchemePPSWOR {
						continue // L = 479: the widest rows; one scheme per method is enough
					}
					if raceOn && (eps < 0.5 || s.Scheme == SchemeCustom) {
						continue // the whole grid runs without -race (scripts/test.sh)
					}
					out = append(out, restartCase{
						name: fmt.Sprintf("%s/eps=%g/delta=%g/%s-p%g", m, eps, delta, s.Scheme, s.Power),
						p:    p, s: s, m: m,
					})
				}
			}
		}
	}
	return out
}

// TestRestartGrid is the oracle of docs/algorithms.md "Rows by verified
// restart", on the whole grid: every pair of consecutive rows, junctions
// included, passes the exact audit at delta in both directions, and no
// junction fails; the rows equal the chain from row 0 bit for bit up to the
// first junction that did not coalesce, and within a total variation of
// 1e-14 after it (the rounding floor the restarts reach); and at junctions
// that were audited, the held-back delta covers the pair with room to
// spare (at most 10% of it used).
func TestRestartGrid(t *testing.T) {
	t.Parallel()
	cases := restartGrid(t)
	var mu sync.Mutex
	slackUsed, coalesced, audited := 0.0, int64(0), int64(0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rt, ct, n := c.tables(t, testPlan)
			from := rt.plan.from - 3
			got, want := rowsFrom(t, rt, from, n), rowsFrom(t, ct, from, n)
			js := rt.Junctions()
			if js.Failed != 0 || js.Coalesced+js.Audited != 4 {
				t.Errorf("junctions %+v, want 4 verified", js)
			}
			exact := true
			for k := range want {
				if exact && !equalRows(got[k], want[k]) {
					if !rt.plan.isJunction(want[k].Frequency) {
						t.Fatalf("row %d differs from the chain below any junction that did not coalesce", want[k].Frequency)
					}
					exact = false
				}
				if tv := totalVariation(got[k], want[k]); tv > 0.1*restartSlack*c.p.Delta/math.Exp(c.p.Epsilon) {
					t.Fatalf("row %d: total variation %g from the chain", want[k].Frequency, tv)
				}
			}
			if js.Audited == 0 && !exact {
				t.Error("rows differ from the chain although every junction coalesced")
			}
			used := 0.0
			dr := c.p.Delta * (1 - restartSlack)
			for k := 1; k < len(got); k++ {
				up, down := AuditRows(got[k-1], got[k], c.p)
				if up > c.p.Delta || down > c.p.Delta {
					t.Errorf("rows %d/%d: audit (%g, %g) above delta %g", got[k-1].Frequency, got[k].Frequency, up, down, c.p.Delta)
				}
				used = math.Max(used, (math.Max(up, down)-dr)/(c.p.Delta-dr))
			}
			if used > 0.1 {
				t.Errorf("a junction used %.3g of the held-back delta", used)
			}
			mu.Lock()
			slackUsed = math.Max(slackUsed, used)
			coalesced += js.Coalesced
			audited += js.Audited
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		t.Logf("restart grid: %d tables; junctions: %d coalesced, %d audited; at most %.3g of the held-back delta used", len(cases), coalesced, audited, slackUsed)
	})
}

// totalVariation returns sum over outputs |P_a(o) - P_b(o)| of two rows of
// one frequency ("not reported" included).
func totalVariation(a, b Row) float64 {
	up, down := AuditRows(a, b, Privacy{Epsilon: 1e-300, Delta: 1})
	return up + down
}

func rowsFrom(t testing.TB, tb *Table, from, to int64) []Row {
	t.Helper()
	var out []Row
	if err := tb.Rows(from, to, func(r Row) bool {
		out = append(out, r.Clone())
		return true
	}); err != nil {
		t.Fatalf("Rows(%d, %d): %v", from, to, err)
	}
	return out
}

// TestRestartRandomAccess checks that a row reached cold (a fresh start one
// block below, as Row and Draw do) is the row a sequential walk from row 0
// gives, in every position of a block, and that the junctions it relies on
// are verified first.
func TestRestartRandomAccess(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	c := restartCase{name: "ppswor", p: mustPrivacy(t, 0.05, 1e-6), s: mustSampling(t, SchemePPSWOR, 1e-5, 1, nil), m: MethodMaxSeparation}
	ct, _, _ := c.tables(t, testPlan) // walked from row 0, through every junction
	pl := ct.plan
	for _, i := range []int64{pl.from + pl.block - 1, pl.from + pl.block, pl.from + pl.block + 1, pl.from + 2*pl.block + pl.block/2, pl.from + 3*pl.block - 1} {
		rt := mustTable(t, c.p, c.s, c.m)
		rt.plan = pl
		got, err := rt.Row(i)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ct.Row(i)
		if err != nil {
			t.Fatal(err)
		}
		if !equalRows(got, want) {
			t.Errorf("row %d: cold restarted row differs from the chain", i)
		}
		js := rt.Junctions()
		// A row inside its block is reached along its own chain, with no
		// junction to check (both its pairs are steps). The first row of a
		// block is reached from the block below, through its junction; the
		// last also has the junction above it checked.
		wantJ := int64(0)
		if !pl.inside(i, pl.junctionBelow(i)) {
			wantJ = 1
			if pl.isJunction(i + 1) {
				wantJ = 2
			}
		}
		if js.Coalesced+js.Audited != wantJ || js.Failed != 0 {
			t.Errorf("row %d: junctions %+v, want %d verified", i, js, wantJ)
		}
		if a := pl.junctionBelow(i); pl.inside(i, a) {
			// The block's second row was kept: a row below i in the
			// block starts from it, and still equals the chain.
			if rt.innerRow(a, a+1) == nil {
				t.Errorf("row %d: the second row of its block was not kept", i)
			}
			got, err := rt.Row(a + 2)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := ct.Row(a + 2); !equalRows(got, want) {
				t.Errorf("row %d from the kept second row differs from the chain", a+2)
			}
		}
		// A kept warm-up row is the one the junction check would compute.
		for a, w := range rt.warms {
			var wb warmBuffers
			if !rowsEqual(w, rt.warmRow(a, &wb, nil)) {
				t.Errorf("the kept warm-up row of junction %d differs from a fresh warm-up", a)
			}
		}
		if pl.inside(i, pl.junctionBelow(i)) && rt.keptWarm(pl.junctionBelow(i)) == nil {
			t.Errorf("row %d: the warm-up row of its block was not kept", i)
		}
		// Every kept row inside a block is the table's row (never a
		// warm-up row of a chain below its block).
		for r, s := range rt.inner {
			want, err := ct.Row(r)
			if err != nil {
				t.Fatal(err)
			}
			if !pl.keepsInner(r) || !equalRows(s.row(0, nil), want) {
				t.Errorf("kept row %d differs from the table's row", r)
			}
		}
	}
}

// TestRestartShortWarmUp plants the defect the junction check exists for: a
// restart taken before it coalesces (a warm-up of L/2 rows). Every row the
// table hands out must then either equal the chain from row 0 or lie above
// a junction that was accepted by the exact audit rather than by
// coalescence, and every pair must pass the audit; a check that called such
// junctions coalesced (or skipped the audit) fails here.
func TestRestartShortWarmUp(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		c := restartCase{name: string(m), p: mustPrivacy(t, 0.5, 1e-6), s: mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), m: m}
		short := func(p Privacy, qConst int64) restartPlan {
			w := int64(math.Ceil(L(p) / 2))
			return makeRestartPlan(4096, w, 512, qConst)
		}
		rt, ct, _ := c.tables(t, short)
		n := rt.plan.from + 6*rt.plan.block
		got, err := rowsOrJunctionError(rt, rt.plan.from-2, n)
		want := rowsFrom(t, ct, rt.plan.from-2, n)
		js := rt.Junctions()
		if js.Audited+js.Failed == 0 {
			t.Fatalf("%s: a warm-up of L/2 rows coalesced at every junction (%+v): the planted defect is not exercised", m, js)
		}
		differ := false
		for k := range got {
			if !equalRows(got[k], want[k]) {
				differ = true
			}
			if k > 0 {
				up, down := AuditRows(got[k-1], got[k], c.p)
				if ex := excessRatio(up, down, c.p.Delta); ex > auditTolerance {
					t.Errorf("%s: rows %d/%d handed out with audit excess %g", m, got[k-1].Frequency, got[k].Frequency, ex)
				}
			}
		}
		if !differ && js.Audited > 0 {
			t.Errorf("%s: rows equal the chain although %d junctions did not coalesce", m, js.Audited)
		}
		if js.Failed > 0 && !errors.Is(err, ErrJunction) {
			t.Errorf("%s: %d junctions failed but Rows returned %v", m, js.Failed, err)
		}
		t.Logf("%s: junctions %+v; rows handed out %d", m, js, len(got))
	}
}

// rowsOrJunctionError is rowsFrom that stops at a junction error.
func rowsOrJunctionError(tb *Table, from, to int64) ([]Row, error) {
	var out []Row
	err := tb.Rows(from, to, func(r Row) bool {
		out = append(out, r.Clone())
		return true
	})
	return out, err
}

// TestUncheckedRestartViolatesDP shows that the audit the junctions rely on
// sees what an unchecked restart does: rows restarted from the crude guess a
// few rows below, joined to the chain without the check, break
// (eps, delta)-DP at the junction.
func TestUncheckedRestartViolatesDP(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		tb := mustTable(t, mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), m)
		tb.plan = restartPlan{from: never}
		a := int64(5000)
		prev, err := tb.Row(a - 1)
		if err != nil {
			t.Fatal(err)
		}
		var w warmBuffers
		tb.plan.warm = 2
		r := tb.warmRow(a, &w, nil)
		next := &rowState{}
		tb.stepRow(r, next, &w.sc)
		up, down := AuditRows(prev, next.row(0, nil), tb.p)
		if ex := excessRatio(up, down, tb.p.Delta); ex <= auditTolerance {
			t.Errorf("%s: an unchecked restart 2 rows below passed the audit (excess %g): the oracle cannot see the defect", m, ex)
		}
	}
}

// TestRestartJunctionError checks that a junction that neither coalesces
// nor passes the audit is refused before any row next to it is used: Row,
// Draw and Rows return a JunctionError (errors.Is ErrJunction).
func TestRestartJunctionError(t *testing.T) {
	t.Parallel()
	tb := mustTable(t, mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), MethodDiscrete)
	tb.plan = makeRestartPlan(4096, 2, 512, tb.qConst) // restarts 2 rows below: far from the chain
	a := tb.plan.from + tb.plan.block
	if _, err := tb.Row(a); !errors.Is(err, ErrJunction) {
		t.Errorf("Row(%d): %v, want a junction error", a, err)
	}
	if _, err := tb.Row(a - 1); !errors.Is(err, ErrJunction) {
		t.Errorf("Row(%d) (below the junction): %v, want a junction error", a-1, err)
	}
	if _, err := tb.Draw(a, newRand(1)); !errors.Is(err, ErrJunction) {
		t.Errorf("Draw(%d): %v, want a junction error", a, err)
	}
	if _, err := tb.DrawAll([]int64{a}, newRand(1), nil); !errors.Is(err, ErrJunction) {
		t.Errorf("DrawAll: %v, want a junction error", err)
	}
	// Rows inside the block need no junction: both their pairs are steps
	// of the block's chain, and pass the exact audit even here.
	var inside []Row
	for _, i := range []int64{a + 2, a + 3, a + 4} {
		r, err := mustTableLike(t, tb).Row(i)
		if err != nil {
			t.Fatalf("Row(%d) inside the block: %v", i, err)
		}
		inside = append(inside, r)
	}
	for k := 1; k < len(inside); k++ {
		if up, down := AuditRows(inside[k-1], inside[k], tb.p); up > tb.p.Delta || down > tb.p.Delta {
			t.Errorf("rows %d/%d inside the block: audit (%g, %g) above delta", inside[k-1].Frequency, inside[k].Frequency, up, down)
		}
	}
	if err := tb.Rows(a-5, a+5, func(Row) bool { return true }); !errors.Is(err, ErrJunction) {
		t.Errorf("Rows: %v, want a junction error", err)
	}
	var je *JunctionError
	if _, err := tb.Row(a); !errors.As(err, &je) || je.At%512 != 0 || je.Up <= tb.p.Delta && je.Down <= tb.p.Delta {
		t.Errorf("JunctionError %+v", je)
	}
}

// mustTableLike returns a fresh table with tb's parameters and plan (no
// rows cached).
func mustTableLike(t testing.TB, tb *Table) *Table {
	t.Helper()
	nt := mustTable(t, tb.p, tb.s, tb.m)
	nt.plan = tb.plan
	return nt
}

// TestRestartPlan checks the plan's layout rules.
func TestRestartPlan(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 1, 1e-6)
	pl := newRestartPlan(p, never)
	if pl.warm != warmPerL*14+warmExtra || pl.block != pl.warm || pl.from != minRestartFrom || pl.final != never {
		t.Errorf("plan %+v", pl)
	}
	if newRestartPlan(p, 1000).enabled() {
		t.Error("q constant from 1000: no restarts expected")
	}
	pl = newRestartPlan(p, 3_881_625)
	if !pl.isJunction(pl.final) || pl.final > 3_881_625 || pl.final+pl.block <= 3_881_625 || pl.isJunction(pl.final+pl.block) {
		t.Errorf("final junction %d of %+v", pl.final, pl)
	}
	if pl.junctionBelow(pl.final+10*pl.block) != pl.final || pl.junctionBelow(pl.from+pl.block+3) != pl.from+pl.block {
		t.Error("junctionBelow")
	}
}
