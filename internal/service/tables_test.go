package service

import (
	"context"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestAuditRowsSpendsExactlyDelta: the sanitizers meet the DP constraints
// with equality, so the exact audit of rows 1..60 finds, in each direction,
// a worst loss equal to delta (not above it: Holds; not far below it: the
// audit measures rather than bounds); the answer is cached, so a repeat
// computes nothing; a range past the scheme's limit is named "frequency".
func TestAuditRowsSpendsExactlyDelta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			p, _ := sanitize.NewPrivacy(1, 1e-3)
			none, _ := sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)
			a, err := svc.Tables.AuditRows(ctx, p, none, m, 1, 60)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Holds || a.From != 1 || a.To != 60 {
				t.Fatalf("audit %+v", a)
			}
			for _, d := range []AuditDirection{a.Up, a.Down} {
				if math.Abs(d.Loss-p.Delta) > 1e-6*p.Delta || d.Frequency < 1 || d.Frequency > 60 {
					t.Fatalf("worst loss %g at %d, want delta %g", d.Loss, d.Frequency, p.Delta)
				}
			}
			before := svc.cache.Computed()
			if b, err := svc.Tables.AuditRows(ctx, p, none, m, 1, 60); err != nil || b != a || svc.cache.Computed() != before {
				t.Fatalf("repeat: %+v %v, %d computations", b, err, svc.cache.Computed()-before)
			}
		})
	}
}

// TestEstimatorRowsWithoutPrivacy: at delta = 1 the discrete sanitizer is
// the identity and every key is reported, so the MLE of g = identity is
// exact at every frequency: expected value i, no bias, no variance, and the
// non-private reference without sampling has no variance either. With
// sampling (priority, tau) the reference variance is eq. 8's
// i^2 (1 - q_i)/q_i.
func TestEstimatorRowsWithoutPrivacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	p, _ := sanitize.NewPrivacy(1, 1)
	identity, _ := estimate.ParseG("identity")
	none, _ := sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)
	rows, err := svc.Tables.EstimatorRows(ctx, p, none, sanitize.MethodDiscrete, identity, estimate.MLE, 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 40", len(rows))
	}
	for _, r := range rows {
		i := float64(r.Frequency)
		if r.Reported != 1 || math.Abs(r.Expected-i) > 1e-9*i || math.Abs(r.Bias) > 1e-9*i || r.Variance > 1e-9*i*i || r.MSE > 1e-9*i*i || r.ReferenceVariance != 0 {
			t.Fatalf("row %+v, want an exact estimate", r)
		}
	}
	prio, _ := sanitize.NewSampling(sanitize.SchemePriority, 0.05, 1, nil)
	rows, err = svc.Tables.EstimatorRows(ctx, p, prio, sanitize.MethodDiscrete, identity, estimate.MLE, 40)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		i := float64(r.Frequency)
		q := prio.Q(r.Frequency)
		if want := i * i * (1 - q) / q; math.Abs(r.ReferenceVariance-want) > 1e-9*math.Max(want, 1) {
			t.Fatalf("frequency %d: reference variance %g, want %g", r.Frequency, r.ReferenceVariance, want)
		}
	}
}

// TestReportingTable: Algorithm 3's table is q_i and pi_i for i = 1..n
// with L(eps, delta), equal to package sanitize's, and cached.
func TestReportingTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	s, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	r, err := svc.Tables.Reporting(ctx, p, s, 200)
	if err != nil {
		t.Fatal(err)
	}
	pi := sanitize.ReportingProbabilities(p, s, 200)
	if r.L != sanitize.L(p) || len(r.Pi) != 200 || len(r.Q) != 200 {
		t.Fatalf("L %g, %d pi, %d q", r.L, len(r.Pi), len(r.Q))
	}
	for i := range r.Pi {
		if r.Pi[i] != pi[i] || r.Q[i] != s.Q(int64(i+1)) || r.Pi[i] > r.Q[i] {
			t.Fatalf("i = %d: pi %g q %g, want pi %g <= q %g", i+1, r.Pi[i], r.Q[i], pi[i], s.Q(int64(i+1)))
		}
	}
	before := svc.cache.Computed()
	if _, err := svc.Tables.Reporting(ctx, p, s, 200); err != nil || svc.cache.Computed() != before {
		t.Fatalf("repeat computed again (%v)", err)
	}
}
