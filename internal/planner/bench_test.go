package planner

import (
	"context"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

func benchStats(b *testing.B, s sanitize.Sampling) {
	sb := mustSbH(b, mustPrivacy(b, 0.1, 1e-3), s)
	g := estimate.G{Kind: estimate.GIdentity}
	b.ResetTimer()
	for k := 0; b.Loop(); k++ {
		if _, err := sb.stats(g, int64(k%500)+1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSbHStatsClosedForm: one frequency's sampled-SbH statistics with
// priority sampling (closed form).
func BenchmarkSbHStatsClosedForm(b *testing.B) {
	benchStats(b, mustSampling(b, sanitize.SchemePriority, 0.01, 1, nil))
}

// BenchmarkSbHStatsQuadrature: the same with ppswor (variance by quadrature).
func BenchmarkSbHStatsQuadrature(b *testing.B) {
	benchStats(b, mustSampling(b, sanitize.SchemePPSWOR, 0.01, 1, nil))
}

func benchPlan(b *testing.B, r PlanRequest) {
	for b.Loop() {
		if _, err := Plan(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanSummary: the planner page's default summary.
func BenchmarkPlanSummary(b *testing.B) {
	benchPlan(b, PlanRequest{Privacy: mustPrivacy(b, 0.1, 1e-3), Sampling: mustSampling(b, sanitize.SchemePPSWOR, 0.01, 1, nil), Distribution: "zipf", Alpha: 1, N: 1000})
}

// BenchmarkPlanSweep: the same with the default 13-point sweep (NRMSE plot).
func BenchmarkPlanSweep(b *testing.B) {
	benchPlan(b, PlanRequest{Privacy: mustPrivacy(b, 0.1, 1e-3), Sampling: mustSampling(b, sanitize.SchemePPSWOR, 0.01, 1, nil), Distribution: "zipf", Alpha: 1, N: 1000, Sweep: true})
}
