package sanitize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
)

// explicitRows computes rows 1..n one after the other without the
// stationary shortcut.
func explicitRows(tb *Table, n int64) []Row {
	cu := tb.cursorAt(rowZero())
	cu.detect = false
	out := make([]Row, 0, n)
	if err := tb.walk(context.Background(), cu, 1, n, func(r *rowState, _ int64) bool {
		out = append(out, r.row(0, nil))
		return true
	}); err != nil {
		panic(err) // tables without restarts: no junction
	}
	return out
}

func equalRows(a, b Row) bool {
	if a.Frequency != b.Frequency || a.Pi != b.Pi || len(a.Pieces) != len(b.Pieces) {
		return false
	}
	for k := range a.Pieces {
		if a.Pieces[k] != b.Pieces[k] {
			return false
		}
	}
	return true
}

// Stationarity is detected (not assumed) and the shortcut is exact: past
// the detected frequency s, Row(i) (a shifted copy of a stationary row) is
// bit for bit the row computed explicitly one step at a time, and
// StationaryFrom is never below the point where q becomes constant.
func TestStationaryShortcutMatchesExplicitRows(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	cases := []struct {
		eps, delta float64
		s          Sampling
	}{
		{0.1, 1e-6, Sampling{Scheme: SchemeNone}},
		{1, 1e-12, Sampling{Scheme: SchemeNone}},
		{0.3, 0.3, Sampling{Scheme: SchemeNone}},
		{0.5, 1e-3, mustSampling(t, SchemePPSWOR, 0.05, 1, nil)},
		{2, 1e-9, mustSampling(t, SchemePriority, 0.01, 1, nil)},
		{0.7, 1e-4, mustSampling(t, SchemeCustom, 0, 0, []float64{0.001, 0.3, 0.6, 0.6})},
	}
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s,eps=%g,delta=%g,%s", m, tc.eps, tc.delta, tc.s.Scheme), func(t *testing.T) {
				p := mustPrivacy(t, tc.eps, tc.delta)
				tb := mustTable(t, p, tc.s, m)
				s, ok := tb.StationaryFrom()
				if !ok {
					t.Fatalf("%s eps=%g delta=%g %s: no stationarity detected", m, tc.eps, tc.delta, tc.s.Scheme)
				}
				qc, _ := qConstFrom(tc.s)
				if s+maxPeriod < qc {
					t.Errorf("%s eps=%g %s: stationary from %d but q constant only from %d", m, tc.eps, tc.s.Scheme, s, qc)
				}
				n := s + 3*int64(len(tb.stationary().rows[0].m)) + 50
				ex := explicitRows(mustTable(t, p, tc.s, m), n)
				for i := int64(1); i <= n; i++ {
					r, err := tb.Row(i)
					if err != nil {
						t.Fatal(err)
					}
					if !equalRows(r, ex[i-1]) {
						t.Fatalf("%s eps=%g delta=%g %s: row %d (stationary from %d) differs from the explicit row", m, tc.eps, tc.delta, tc.s.Scheme, i, s)
					}
				}
				t.Logf("%s eps=%g delta=%g %s: stationary from %d (q constant from %d), period %d, %d pieces",
					m, tc.eps, tc.delta, tc.s.Scheme, s, qc, len(tb.stationary().rows), len(ex[n-1].Pieces))
			})
		}
	}
}

// Any frequency up to 1e9 (q = 1) costs O(L): the row is the stationary row
// shifted, it sums to 1, and it passes the audit against its predecessor.
func TestHugeFrequency(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			p := mustPrivacy(t, 0.1, 1e-6)
			tb := mustTable(t, p, mustSampling(t, SchemePPSWOR, 0.1, 1, nil), m)
			for _, i := range []int64{1_000_000_000, 123_456_789, MaxFrequency} {
				r, err := tb.Row(i)
				if err != nil {
					t.Fatal(err)
				}
				prev, _ := tb.Row(i - 1)
				if up, down := AuditRows(prev, r, p); excessRatio(up, down, p.Delta) > auditTolerance {
					t.Errorf("%s rows %d/%d fail the audit: %g %g", m, i-1, i, up, down)
				}
				if r.Frequency != i || r.Pi != 1 || r.Pieces[len(r.Pieces)-1].Hi != float64(i) {
					t.Errorf("%s row %d: frequency %d, pi %v, top %v", m, i, r.Frequency, r.Pi, r.Pieces[len(r.Pieces)-1].Hi)
				}
				if w := float64(i) - r.Pieces[0].Lo; w > 4*L(p)+4 {
					t.Errorf("%s row %d: window width %g not O(L)", m, i, w)
				}
			}
		})
	}
}

// Invalid frequencies and ranges are rejected with ErrFrequency.
func TestTableRejectsBadInput(t *testing.T) {
	t.Parallel()
	tb := mustTable(t, mustPrivacy(t, 1, 1e-6), Sampling{Scheme: SchemeNone}, MethodDiscrete)
	for _, i := range []int64{0, -1, MaxFrequency + 1} {
		t.Run(fmt.Sprintf("i=%d", i), func(t *testing.T) {
			if _, err := tb.Row(i); !errors.Is(err, ErrFrequency) {
				t.Errorf("Row(%d): %v", i, err)
			}
			if _, err := tb.Draw(i, nil); !errors.Is(err, ErrFrequency) {
				t.Errorf("Draw(%d): %v", i, err)
			}
		})
	}
	if err := tb.Rows(5, 4, func(Row) bool { return true }); err == nil {
		t.Error("Rows(5, 4) accepted")
	}
	if _, err := NewTable(Privacy{}, Sampling{Scheme: SchemeNone}, MethodDiscrete); err == nil {
		t.Error("invalid privacy accepted")
	}
	if _, err := NewTable(mustPrivacy(t, 1, 1e-6), Sampling{Scheme: "bogus"}, MethodDiscrete); err == nil {
		t.Error("invalid sampling accepted")
	}
	if _, err := NewTable(mustPrivacy(t, 1, 1e-6), Sampling{Scheme: SchemeNone}, "bogus"); err == nil {
		t.Error("invalid method accepted")
	}
	var pe *checks.FieldError
	if _, err := NewTable(mustPrivacy(t, 1, 1e-6), Sampling{Scheme: SchemePPSWOR}, MethodDiscrete); !errors.As(err, &pe) || pe.Field != "threshold" {
		t.Errorf("missing threshold: %v", err)
	}
}

// Rows streams exactly the rows Row returns, starting anywhere (from a
// checkpoint), stops when fn returns false, and survives checkpoint
// thinning on a long run.
func TestRowsMatchesRow(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-4)
	s := mustSampling(t, SchemePPSWOR, 1e-4, 1, nil) // q < 1 up to ~3.9e5: no shortcut
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			tb := mustTable(t, p, s, m)
			n := int64(initialSpacing * (maxCheckpoints + 40)) // forces thinning
			if testing.Short() {
				n = 3000
			}
			count := int64(0)
			if err := tb.Rows(1, n, func(Row) bool { count++; return true }); err != nil || count != n {
				t.Fatalf("Rows(1, %d): %d rows, %v", n, count, err)
			}
			if len(tb.cps) > maxCheckpoints+1 {
				t.Errorf("%d checkpoints kept", len(tb.cps))
			}
			for _, from := range []int64{1, 700, n - 5} {
				var got []Row
				tb.Rows(from, from+3, func(r Row) bool { got = append(got, r.Clone()); return true })
				for k, r := range got {
					want, _ := tb.Row(from + int64(k))
					if !equalRows(r, want) {
						t.Fatalf("%s Rows from %d: row %d differs from Row", m, from, r.Frequency)
					}
				}
			}
			stopped := 0
			tb.Rows(10, 20, func(Row) bool { stopped++; return stopped < 3 })
			if stopped != 3 {
				t.Errorf("Rows did not stop: %d calls", stopped)
			}
		})
	}
}

// A Table is safe for concurrent use: many goroutines asking for rows and
// draws in overlapping ranges get the same answers as a sequential run.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.3, 1e-5)
	s := mustSampling(t, SchemePriority, 0.002, 1, nil)
	ref := explicitRows(mustTable(t, p, s, MethodMaxSeparation), 1500)
	tb := mustTable(t, p, s, MethodMaxSeparation)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 30 {
				i := int64((g*211+k*97)%1500 + 1)
				r, err := tb.Row(i)
				if err != nil || !equalRows(r, ref[i-1]) {
					t.Errorf("goroutine %d: row %d differs", g, i)
					return
				}
				if _, err := tb.Draw(i, newRand(uint64(g))); err != nil {
					t.Error(err)
				}
			}
			tb.StationaryFrom()
		}()
	}
	wg.Wait()
}

// breakPoints is the common refinement: it contains every break point of
// every row 1..n, is sorted and distinct, and has at most 3n + 1 points.
func TestBreakPoints(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.4, 1e-5)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			tb := mustTable(t, p, mustSampling(t, SchemePPSWOR, 0.02, 1, nil), m)
			n := int64(400)
			pts, err := tb.breakPoints(n)
			if err != nil {
				t.Fatal(err)
			}
			set := map[float64]bool{}
			for k, x := range pts {
				if k > 0 && !(x > pts[k-1]) {
					t.Fatalf("%s: break points not increasing at %d", m, k)
				}
				set[x] = true
			}
			if pts[0] != 0 || pts[len(pts)-1] != float64(n) || len(pts) > 3*int(n)+1 {
				t.Errorf("%s: %d points from %v to %v", m, len(pts), pts[0], pts[len(pts)-1])
			}
			for _, r := range rowsOf(t, tb, n) {
				for _, pc := range r.Pieces {
					if !set[pc.Lo] || !set[pc.Hi] {
						t.Fatalf("%s: row %d piece (%v, %v] not on the global partition", m, r.Frequency, pc.Lo, pc.Hi)
					}
				}
			}
			t.Logf("%s: %d global tokens for rows 1..%d", m, len(pts)-1, n)
		})
	}
}

// qConstFrom finds the first index from which q is constant, for every
// scheme, and q is indeed constant (exactly 1 for ppswor) from there on.
func TestQConstFrom(t *testing.T) {
	t.Parallel()
	for _, s := range []Sampling{
		{Scheme: SchemeNone},
		mustSampling(t, SchemePPSWOR, 0.01, 1, nil),
		mustSampling(t, SchemePPSWOR, 3, 0.5, nil),
		mustSampling(t, SchemePriority, 0.013, 1.3, nil),
		mustSampling(t, SchemeCustom, 0, 0, []float64{0.1, 0.5, 0.5, 0.5}),
	} {
		t.Run(fmt.Sprintf("%s,tau=%g,power=%g", s.Scheme, s.Threshold, s.Power), func(t *testing.T) {
			i0, v := qConstFrom(s)
			for j := i0; j < i0+2000; j++ {
				if s.Q(j) != v {
					t.Fatalf("%s: q_%d = %v, want constant %v from %d", s.Scheme, j, s.Q(j), v, i0)
				}
			}
			if i0 > 1 && s.Scheme != SchemePPSWOR && s.Q(i0-1) == v {
				t.Errorf("%s: q already constant at %d", s.Scheme, i0-1)
			}
		})
	}
	if i0, _ := qConstFrom(mustSampling(t, SchemePPSWOR, 1e-300, 0.01, nil)); i0 != never {
		t.Errorf("astronomic constant point should be reported as never, got %d", i0)
	}
	if math.IsNaN(float64(MaxFrequency)) {
		t.Fatal("unreachable")
	}
}
