package service

import (
	"context"

	"github.com/pwsd/pwsd/internal/tablecache"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/planner/plotsvg"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// ReportingBaseline returns the sampled-SbH reporting probabilities
// phi_1..phi_n (Appendix G), cached.
func (s *Tables) ReportingBaseline(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, n int64) ([]float64, error) {
	key := s.cache.Key("sbh-reporting", p, smp, "", tablecache.Int("n", n))
	return cached(ctx, s.deps, key, func() ([]float64, error) {
		phi, err := planner.SbHReporting(p, smp, n)
		return phi, err
	})
}

// EstimatorBaseline returns sampled-SbH's per-frequency statistics, cached.
func (s *Tables) EstimatorBaseline(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, g estimate.G, n int64) ([]estimate.FrequencyStats, error) {
	key := s.cache.Key("sbh-estimators", p, smp, "", tablecache.Str("g", g.String()), tablecache.Int("n", n))
	return cached(ctx, s.deps, key, func() ([]estimate.FrequencyStats, error) {
		rows, err := planner.SbHEstimatorRows(p, smp, g, n)
		return rows, err
	})
}

// PlotReporting renders pi_i against q_i (and the SbH baseline) as SVG.
func (s *Tables) PlotReporting(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, n int64, baseline bool) ([]byte, error) {
	rep, err := s.Reporting(ctx, p, smp, n)
	if err != nil {
		return nil, err
	}
	d, err := planner.ReportingFrom(p, smp, rep.Pi, baseline)
	if err != nil {
		return nil, err
	}
	return plotsvg.Reporting(d)
}

// PlotKind selects an estimator plot.
type PlotKind string

// The estimator plots.
const (
	PlotBias     PlotKind = "bias"
	PlotVariance PlotKind = "variance"
)

// PlotEstimator renders the bias or variance of the per-key estimate per
// frequency (optionally with the SbH baseline, normalized by g(i)^2) as SVG.
func (s *Tables) PlotEstimator(ctx context.Context, kind PlotKind, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, g estimate.G, e estimate.Estimator, n int64, baseline, normalized bool) ([]byte, error) {
	if err := s.checkWork(ctx, p, smp, 0, n, 1, "epsilon", "max_frequency"); err != nil {
		return nil, err
	}
	et, err := s.estimatorTableFor(ctx, p, smp, m, estimate.Spec{MaxFrequency: n, G: g, Estimator: e})
	if err != nil {
		return nil, err
	}
	d, err := planner.EstimatorsFrom(et, p, smp, m, baseline)
	if err != nil {
		return nil, err
	}
	if kind == PlotBias {
		return plotsvg.Bias(d)
	}
	return plotsvg.Variance(d, normalized)
}

// Plan compares PWS, sampled-SbH and non-private sampling on a synthetic
// frequency distribution (exact expressions, no simulation).
func (s *Tables) Plan(ctx context.Context, req planner.PlanRequest) (*planner.PlanResult, error) {
	res, err := planner.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// PlotNRMSE renders the NRMSE of the sum estimate as the threshold sweeps.
func (s *Tables) PlotNRMSE(ctx context.Context, req planner.PlanRequest) ([]byte, error) {
	req.Sweep = true
	res, err := s.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return plotsvg.NRMSE(res)
}

// StreamPlan plans a pan-private density stream: the algorithm and sample
// size for a universe, epsilon and accuracy target, with the theorems'
// and exact MSE beside a seeded simulation (planner.StreamPlan).
func (s *Tables) StreamPlan(ctx context.Context, req planner.StreamPlanRequest) (*planner.StreamPlanResult, error) {
	return planner.StreamPlan(ctx, req)
}

// PlotStreamMSE renders the predicted MSE of the density algorithms against
// epsilon or the sample size (planner.StreamChart) as SVG.
func (s *Tables) PlotStreamMSE(req planner.StreamPlanRequest, axis string) ([]byte, error) {
	c, err := planner.StreamChart(req, axis)
	if err != nil {
		return nil, err
	}
	return plotsvg.StreamMSE(c)
}
