package service

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestPlotsRefuseWorkUpFront: an estimator plot or table whose work passes
// the limit is refused before anything is computed, naming max_frequency
// when fewer frequencies would fit and epsilon when even one row would
// not; a WithWorkLimit context tightens the service's own limit.
func TestPlotsRefuseWorkUpFront(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{MaxTableWork: 1_000_000})
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	tiny, _ := sanitize.NewPrivacy(1e-4, 1e-6) // L about 39,000: one row is too much
	// Priority sampling at a tiny threshold keeps q < 1, so no row is
	// stationary and every frequency asked for costs its window.
	s, _ := sanitize.NewSampling(sanitize.SchemePriority, 1e-9, 1, nil)
	identity, _ := estimate.ParseG("identity")
	w, _ := tableWork(p, s, 0, 1000, 1)
	if base, _ := tableWork(p, s, 1, 1, 1); !(base < w/2) {
		t.Fatalf("one row costs %g of the %g of 1000", base, w)
	}
	reader := int64(w / 2) // 1000 frequencies do not fit, one would
	for _, tc := range []struct {
		name  string
		call  func(ctx context.Context) error
		field string
	}{
		{"bias plot, many frequencies", func(ctx context.Context) error {
			_, err := svc.Tables.PlotEstimator(ctx, PlotBias, p, s, sanitize.MethodDiscrete, identity, estimate.MLE, 1_000_000, false, false)
			return err
		}, "max_frequency"},
		{"variance plot, small epsilon", func(ctx context.Context) error {
			_, err := svc.Tables.PlotEstimator(ctx, PlotVariance, tiny, s, sanitize.MethodDiscrete, identity, estimate.MLE, 10, false, true)
			return err
		}, "epsilon"},
		{"estimator rows, many frequencies", func(ctx context.Context) error {
			_, err := svc.Tables.EstimatorRows(ctx, p, s, sanitize.MethodDiscrete, identity, estimate.MLE, 1_000_000)
			return err
		}, "max_frequency"},
		{"reader's tighter limit", func(ctx context.Context) error {
			_, err := svc.Tables.EstimatorRows(WithWorkLimit(ctx, reader, "PWSD_MAX_READER_TABLE_WORK"), p, s, sanitize.MethodDiscrete, identity, estimate.MLE, 1000)
			return err
		}, "max_frequency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(ctx); !slices.Equal(fieldsOf(err), []string{tc.field}) {
				t.Fatalf("%v, want a field error naming %s", err, tc.field)
			}
		})
	}
	if n := svc.cache.Computed(); n != 0 {
		t.Fatalf("refused requests computed %d tables", n)
	}
}

// TestPlotsAndBaselines: plots are SVG and, computed from exact tables,
// the same bytes every time (the second from the cache); the SbH baselines
// are planner's and cached.
func TestPlotsAndBaselines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	p, _ := sanitize.NewPrivacy(0.5, 1e-3)
	s, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.05, 1, nil)
	identity, _ := estimate.ParseG("identity")
	a, err := svc.Tables.PlotReporting(ctx, p, s, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Tables.PlotReporting(ctx, p, s, 100, true)
	if err != nil || !bytes.Equal(a, b) || !bytes.Contains(a, []byte("<svg")) {
		t.Fatalf("reporting plot: %d and %d bytes (%v), want the same SVG twice", len(a), len(b), err)
	}
	bias, err := svc.Tables.PlotEstimator(ctx, PlotBias, p, s, sanitize.MethodDiscrete, identity, estimate.MLE, 100, true, false)
	if err != nil {
		t.Fatal(err)
	}
	variance, err := svc.Tables.PlotEstimator(ctx, PlotVariance, p, s, sanitize.MethodDiscrete, identity, estimate.MLE, 100, true, true)
	if err != nil || bytes.Equal(bias, variance) || !bytes.Contains(variance, []byte("<svg")) {
		t.Fatalf("bias and variance plots: %v", err)
	}
	want, err := planner.SbHReporting(p, s, 100)
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Tables.ReportingBaseline(ctx, p, s, 100)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("reporting baseline differs from planner.SbHReporting (%v)", err)
	}
	before := svc.cache.Computed()
	if _, err := svc.Tables.ReportingBaseline(ctx, p, s, 100); err != nil || svc.cache.Computed() != before {
		t.Fatalf("the baseline was computed again (%v)", err)
	}
	rows, err := svc.Tables.EstimatorBaseline(ctx, p, s, identity, 50)
	if err != nil || len(rows) != 50 {
		t.Fatalf("estimator baseline: %d rows, %v", len(rows), err)
	}
}
