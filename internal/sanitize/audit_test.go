package sanitize

import (
	"fmt"
	"math"
	"testing"
)

// gridSamplings are the sampling schemes of the audit grid: no sampling,
// ppswor and priority with tiny and huge thresholds and powers 0.5..2, and
// custom lists (one ending below 1, so q never reaches 1).
func gridSamplings(t testing.TB) []Sampling {
	return []Sampling{
		{Scheme: SchemeNone},
		mustSampling(t, SchemePPSWOR, 1e-4, 1, nil),
		mustSampling(t, SchemePPSWOR, 1e3, 0.5, nil),
		mustSampling(t, SchemePPSWOR, 0.02, 2, nil),
		mustSampling(t, SchemePriority, 1e-6, 2, nil),
		mustSampling(t, SchemePriority, 0.05, 0.5, nil),
		mustSampling(t, SchemePriority, 50, 1, nil),
		mustSampling(t, SchemeCustom, 0, 0, []float64{1e-9, 1e-6, 1e-3, 0.01, 0.01, 0.2, 0.5, 0.5, 0.7}),
		mustSampling(t, SchemeCustom, 0, 0, []float64{0.3, 0.3, 1}),
	}
}

// auditStats checks rows 1..n of one table against every oracle that
// concerns a single table and returns the largest DP excess ratio
// max(up, down)/delta - 1 seen (<= 0 means within delta).
func auditTable(t *testing.T, tb *Table, n int64) float64 {
	t.Helper()
	p, s := tb.Privacy(), tb.Sampling()
	name := fmt.Sprintf("%s eps=%g delta=%g %s tau=%g p=%g", tb.Method(), p.Epsilon, p.Delta, s.Scheme, s.Threshold, s.Power)
	pis := ReportingProbabilities(p, s, int(n))
	worst := math.Inf(-1)
	prev := Row{} // frequency 0: never reported
	err := tb.Rows(1, n, func(r Row) bool {
		i := r.Frequency
		up, down := AuditRows(prev, r, p)
		ex := excessRatio(up, down, p.Delta)
		worst = math.Max(worst, ex)
		if ex > auditTolerance {
			t.Errorf("%s: rows %d/%d violate (eps, delta)-DP: up %.17g down %.17g delta %g", name, i-1, i, up, down, p.Delta)
		}
		// Reported mass is pi_i, pi_i <= q_i, pi non-decreasing, and pi
		// agrees with Algorithm 3.
		sum := 0.0
		last := 0.0
		for k, pc := range r.Pieces {
			if !(pc.P > 0) || !(pc.Hi > pc.Lo) || pc.Lo < last || pc.Hi > float64(i) || pc.Lo < 0 {
				t.Errorf("%s: row %d piece %d malformed: %+v", name, i, k, pc)
			}
			last = pc.Hi
			sum += pc.P
		}
		if math.Abs(sum-r.Pi) > 1e-12 {
			t.Errorf("%s: row %d sums to %.17g, pi = %.17g", name, i, sum, r.Pi)
		}
		if q := s.Q(i); r.Pi > q {
			t.Errorf("%s: pi_%d = %g above q = %g", name, i, r.Pi, q)
		}
		if r.Pi < prev.Pi-1e-14 {
			t.Errorf("%s: pi decreases at %d: %.17g < %.17g", name, i, r.Pi, prev.Pi)
		}
		if d := math.Abs(r.Pi - pis[i-1]); d > 1e-13 {
			t.Errorf("%s: row %d pi %.17g differs from Algorithm 3's %.17g", name, i, r.Pi, pis[i-1])
		}
		prev = r.Clone()
		return !t.Failed()
	})
	if err != nil {
		t.Fatal(err)
	}
	return worst
}

// The exact DP audit (AuditRows) holds for every pair of neighbouring rows
// (i-1, i), in both directions, including "not reported" and, for
// Algorithm 5, the common refinement of both rows' pieces, over a grid of
// epsilon 0.01..5, delta 1e-12..1, every sampling scheme (tiny and huge
// thresholds, powers 0.5..2, custom lists) and both methods. Rows reach past
// the stationary point where it is cheap, so the shifted rows are audited
// too. The largest excess over delta is logged.
func TestDPAuditGrid(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	epss := []float64{0.01, 0.1, 0.5, 1, 2, 5}
	deltas := []float64{1e-12, 1e-9, 1e-6, 1e-3, 0.1, 1}
	nMax := 300.0
	if testing.Short() {
		epss, deltas, nMax = []float64{0.1, 1, 5}, []float64{1e-12, 1e-6, 0.1}, 150
	}
	worst, worstAt := math.Inf(-1), ""
	tables := 0
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			for _, eps := range epss {
				for _, delta := range deltas {
					p := mustPrivacy(t, eps, delta)
					n := int64(math.Min(nMax, math.Max(40, 3*L(p)+40)))
					for _, s := range gridSamplings(t) {
						tb := mustTable(t, p, s, m)
						if w := auditTable(t, tb, n); w > worst {
							worst, worstAt = w, fmt.Sprintf("%s eps=%g delta=%g %s", m, eps, delta, s.Scheme)
						}
						tables++
						if t.Failed() {
							return
						}
					}
				}
			}
		})
	}
	t.Logf("DP audit: %d tables; largest excess max(up, down)/delta - 1 = %.3g (at %s); tolerance %g", tables, worst, worstAt, auditTolerance)
}

// The audit is able to fail: a row that puts delta too much on its top
// piece, or too little on "not reported", is caught in the right direction.
func TestAuditDetectsViolations(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-6)
	tb := mustTable(t, p, Sampling{Scheme: SchemeNone}, MethodMaxSeparation)
	prev, _ := tb.Row(30)
	cur, _ := tb.Row(31)
	if up, down := AuditRows(prev, cur, p); excessRatio(up, down, p.Delta) > auditTolerance {
		t.Fatalf("genuine rows fail the audit: %g %g", up, down)
	}
	bad := cur.Clone()
	bad.Pieces[len(bad.Pieces)-1].P *= 1.001 // the top piece holds exactly delta
	if up, _ := AuditRows(prev, bad, p); up <= p.Delta*(1+auditTolerance) {
		t.Errorf("inflated top piece not detected: up = %g", up)
	}
	bad = cur.Clone()
	bad.Pieces[0].P *= 0.999 // lower pieces are at their minimum
	if _, down := AuditRows(prev, bad, p); down <= p.Delta*(1+auditTolerance) {
		t.Errorf("deflated lower piece not detected: down = %g", down)
	}
	// A refinement split must be honoured: moving mass inside a piece of
	// Algorithm 5 (same total on the piece) changes nothing, but shifting a
	// break point of cur changes the masses of prev on the refinement.
	bad = cur.Clone()
	k := len(bad.Pieces) / 2
	mid := (bad.Pieces[k].Lo + bad.Pieces[k].Hi) / 2
	bad.Pieces[k].Hi, bad.Pieces[k+1].Lo = mid, mid
	if up, down := AuditRows(prev, bad, p); excessRatio(up, down, p.Delta) <= auditTolerance {
		t.Errorf("moved break point not detected")
	}
}
