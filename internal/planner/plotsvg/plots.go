package plotsvg

import (
	"errors"

	"github.com/pwsd/pwsd/internal/planner"
)

// Reporting renders planner.ReportingChart: q_i, pi_i and phi_i against the
// frequency (the paper's Figures 1 and 4).
func Reporting(d *planner.ReportingData) ([]byte, error) { return render(planner.ReportingChart(d)) }

// Bias renders planner.BiasChart: the normalized bias of the PWS and
// sampled-SbH estimates against the frequency (Figure 8, top).
func Bias(d *planner.EstimatorData) ([]byte, error) { return render(planner.BiasChart(d)) }

// Variance renders planner.VarianceChart, normalized by g(i)^2 or not
// (Figure 9).
func Variance(d *planner.EstimatorData, normalized bool) ([]byte, error) {
	return render(planner.VarianceChart(d, normalized))
}

// errNoSweep is returned for a sweep plot of a plan computed without one.
var errNoSweep = errors.New("plotsvg: the plan has no threshold sweep")

// NRMSE renders planner.PlanChart: the NRMSE of the sum estimate against the
// sampling threshold (Figure 8, bottom); res must come from a Plan with
// Sweep.
func NRMSE(res *planner.PlanResult) ([]byte, error) {
	if len(res.Sweep) == 0 {
		return nil, errNoSweep
	}
	return render(planner.PlanChart(res))
}

// reportedFraction renders planner.FractionChart: the expected fraction of
// keys reported against the sampling threshold (Figure 5); res must come
// from a Plan with Sweep.
func reportedFraction(res *planner.PlanResult) ([]byte, error) {
	if len(res.Sweep) == 0 {
		return nil, errNoSweep
	}
	return render(planner.FractionChart(res))
}

// StreamMSE renders planner.StreamChart: the predicted MSE of the
// pan-private density algorithms against epsilon or the sample size.
func StreamMSE(c planner.Chart) ([]byte, error) { return render(c) }
