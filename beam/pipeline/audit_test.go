package pipeline

import (
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// auditShifts returns the largest exact privacy loss, relative to p.Delta,
// over every pair of frequencies (i, i+m), 0 <= i, 1 <= m <= maxShift, of
// the table t, measured against the per-record guarantee p. Rows from the
// stationary point s on are shifted copies, so i <= s covers every distinct
// pair.
func auditShifts(t *testing.T, tb *sanitize.Table, p sanitize.Privacy, maxShift int64) float64 {
	t.Helper()
	s, ok := tb.StationaryFrom()
	if !ok {
		t.Fatal("table has no stationary point; pick parameters with one")
	}
	rows := make([]sanitize.Row, s+maxShift+1) // rows[0] is frequency 0: never reported
	for i := int64(1); i < int64(len(rows)); i++ {
		r, err := tb.Row(i)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = r.Clone()
	}
	worst := 0.0
	for i := int64(0); i <= s; i++ {
		for m := int64(1); m <= maxShift; m++ {
			up, down := sanitize.AuditRows(rows[i], rows[i+m], p)
			worst = math.Max(worst, math.Max(up, down)/p.Delta)
		}
	}
	return worst
}

// TestUnitPrivacyExactAudit checks the weighted privacy unit: with weights
// clamped to M, one record moves one key's frequency by any m in 1..M (or
// creates/removes the key). Tables built at UnitPrivacy(p, M) must make
// every such pair (epsilon, delta)-indistinguishable: the exact
// hockey-stick divergence (sanitize.AuditRows) of rows (i, i+m) at the
// per-record epsilon is at most delta (times 1 + 1e-9 for rounding), in
// both directions. The control shows the audit can fail: tables built at the
// per-record (epsilon, delta) themselves violate it for M >= 2.
func TestUnitPrivacyExactAudit(t *testing.T) {
	cases := []struct {
		name  string
		eps   float64
		delta float64
		s     sanitize.Sampling
		m     sanitize.Method
		maxW  int64
	}{
		{"M=1 is the table itself", 0.5, 1e-3, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodMaxSeparation, 1},
		{"M=2 none max_separation", 1, 1e-4, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodMaxSeparation, 2},
		{"M=3 none discrete", 1, 1e-4, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete, 3},
		{"M=5 priority", 2, 1e-5, sanitize.Sampling{Scheme: sanitize.SchemePriority, Threshold: 0.02, Power: 1}, sanitize.MethodMaxSeparation, 5},
		{"M=4 ppswor", 1, 1e-5, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 0.5, Power: 1}, sanitize.MethodDiscrete, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := sanitize.Privacy{Epsilon: c.eps, Delta: c.delta}
			unit, err := UnitPrivacy(p, c.maxW)
			if err != nil {
				t.Fatal(err)
			}
			if c.maxW == 1 && unit != p {
				t.Fatalf("M = 1 changed the parameters: %+v", unit)
			}
			tb, err := sanitize.NewTable(unit, c.s, c.m)
			if err != nil {
				t.Fatal(err)
			}
			if w := auditShifts(t, tb, p, c.maxW); w > 1+1e-9 {
				t.Fatalf("exact audit: worst loss %.6g delta over shifts 1..%d; want <= delta", w, c.maxW)
			} else {
				t.Logf("worst shift-by-<=%d loss = %.9g delta", c.maxW, w)
			}
			if c.maxW >= 2 {
				naive, err := sanitize.NewTable(p, c.s, c.m)
				if err != nil {
					t.Fatal(err)
				}
				if w := auditShifts(t, naive, p, c.maxW); w <= 1 {
					t.Fatalf("control: per-record tables pass the shift-by-%d audit (%.4g delta); the audit cannot fail", c.maxW, w)
				}
			}
		})
	}
}

// TestUnitPrivacyRejects: a max weight below 1 is refused.
func TestUnitPrivacyRejects(t *testing.T) {
	if _, err := UnitPrivacy(sanitize.Privacy{Epsilon: 1, Delta: 1e-6}, 0); err == nil {
		t.Fatal("max weight 0 accepted")
	}
}
