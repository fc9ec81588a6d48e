package api

import (
	_ "embed"
	"net/http"
	"strings"

	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/service"
)

//go:embed web/planner.html
var plannerPage []byte

// plannerHTML serves the planner page: one self-contained HTML page (no
// external assets) calling the plot and plan endpoints.
func plannerHTML(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob: data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(plannerPage)
}

func writeSVG(w http.ResponseWriter, svg []byte) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_, _ = w.Write(svg)
}

// baseline reads baseline=sbh.
func (q *query) baseline() bool {
	switch q.v.Get("baseline") {
	case "":
		return false
	case "sbh":
		return true
	default:
		q.fail("baseline", "must be sbh")
		return false
	}
}

// plotReporting renders pi_i vs q_i.
//
//	@Summary	Plot: reporting probabilities pi_i against q_i (SVG), optional SbH baseline
//	@ID			plotReporting
//	@Description	An SVG line plot of pi_i (the probability that a key of frequency i is reported) against q_i (its sampling probability), per frequency i, for PWS (and sampled-SbH with baseline=sbh). Computed exactly from the parameters; no data is read.
//	@Tags		planner
//	@Produce	image/svg+xml
//	@Param		epsilon			query	number	true	"epsilon > 0"
//	@Param		delta			query	number	true	"0 < delta <= 1"
//	@Param		scheme			query	string	false	"ppswor | priority | none | custom"
//	@Param		threshold		query	number	false	"tau"
//	@Param		power			query	number	false	"p"
//	@Param		probabilities	query	string	false	"custom: q_1,...,q_n"
//	@Param		max_frequency	query	int		false	"n"	default(100)
//	@Param		baseline		query	string	false	"sbh"
//	@Success	200	{string}	string	"the SVG image"
//	@Failure	422	{object}	Problem
//	@Security	bearer
//	@Router		/v1/plots/reporting [get]
func (h *handler) plotReporting(w http.ResponseWriter, r *http.Request) error {
	rq, err := h.reportingQuery(r)
	if err != nil {
		return err
	}
	svg, err := h.svc.Tables.PlotReporting(r.Context(), rq.privacy, rq.sampling, rq.maxFrequency, rq.baseline)
	return answerSVG(w, svg, err)
}

// plotBias renders the bias per frequency.
//
//	@Summary	Plot: normalized bias of the per-key estimate per frequency (SVG)
//	@ID			plotBias
//	@Description	An SVG line plot of the per-key estimate's bias divided by g(i), per true frequency i, for PWS (and sampled-SbH with baseline=sbh). Computed exactly from the parameters; no data is read.
//	@Tags		planner
//	@Produce	image/svg+xml
//	@Param		epsilon			query	number	true	"epsilon > 0"
//	@Param		delta			query	number	true	"0 < delta <= 1"
//	@Param		scheme			query	string	false	"ppswor | priority | none | custom"
//	@Param		threshold		query	number	false	"tau"
//	@Param		power			query	number	false	"p"	default(1)
//	@Param		probabilities	query	string	false	"custom: q_1,...,q_n"
//	@Param		method			query	string	false	"discrete | max_separation"
//	@Param		g				query	string	false	"identity | count | power:P | cap:T"
//	@Param		estimator		query	string	false	"mle | biased_down | unbiased"
//	@Param		max_frequency	query	int		false	"n"	default(100)
//	@Param		baseline		query	string	false	"sbh"
//	@Success	200	{string}	string	"the SVG image"
//	@Failure	422	{object}	Problem
//	@Security	bearer
//	@Router		/v1/plots/bias [get]
func (h *handler) plotBias(w http.ResponseWriter, r *http.Request) error {
	return h.plotEstimator(w, r, service.PlotBias)
}

// plotVariance renders the variance per frequency.
//
//	@Summary	Plot: variance of the per-key estimate per frequency (SVG), normalized by g(i)^2 unless normalized=false
//	@ID			plotVariance
//	@Description	An SVG line plot of the per-key estimate's variance per true frequency i, divided by g(i)^2 unless normalized=false, for PWS (and sampled-SbH with baseline=sbh). Computed exactly from the parameters; no data is read.
//	@Tags		planner
//	@Produce	image/svg+xml
//	@Param		epsilon			query	number	true	"epsilon > 0"
//	@Param		delta			query	number	true	"0 < delta <= 1"
//	@Param		scheme			query	string	false	"ppswor | priority | none | custom"
//	@Param		threshold		query	number	false	"tau"
//	@Param		power			query	number	false	"p"	default(1)
//	@Param		probabilities	query	string	false	"custom: q_1,...,q_n"
//	@Param		method			query	string	false	"discrete | max_separation"
//	@Param		g				query	string	false	"identity | count | power:P | cap:T"
//	@Param		estimator		query	string	false	"mle | biased_down | unbiased"
//	@Param		max_frequency	query	int		false	"n"	default(100)
//	@Param		baseline		query	string	false	"sbh"
//	@Param		normalized		query	bool	false	"divide by g(i)^2"	default(true)
//	@Success	200	{string}	string	"the SVG image"
//	@Failure	422	{object}	Problem
//	@Security	bearer
//	@Router		/v1/plots/variance [get]
func (h *handler) plotVariance(w http.ResponseWriter, r *http.Request) error {
	return h.plotEstimator(w, r, service.PlotVariance)
}

func (h *handler) plotEstimator(w http.ResponseWriter, r *http.Request, kind service.PlotKind) error {
	eq, err := h.estimatorQuery(r, true)
	if err != nil {
		return err
	}
	svg, err := h.svc.Tables.PlotEstimator(r.Context(), kind, eq.privacy, eq.sampling, eq.method, eq.g, eq.estimator, eq.maxFrequency, eq.baseline, eq.normalized)
	return answerSVG(w, svg, err)
}

// planRequest reads the planner's query into a typed planner.PlanRequest:
// the privacy, sampling, method, g and estimator with the table routes'
// readers (so the same rules and defaults apply), the distribution and
// sweep settings as parsed numbers (planner.Plan checks them). sweep asks
// for a threshold sweep (the NRMSE plot). When a typed value is invalid,
// the planner's own invalid parameters are named in the same answer.
func (h *handler) planRequest(r *http.Request, sweep bool) (planner.PlanRequest, error) {
	q := newQuery(r)
	req := planner.PlanRequest{
		Privacy:   q.privacy(),
		Sampling:  q.sampling(h.limits.MaxCustomQ),
		Method:    q.method(),
		G:         q.g(),
		Estimator: q.estimator(),
		Sweep:     sweep,
	}
	typed := len(q.errs)
	num := func(name string) float64 {
		f, _ := q.float(name, false)
		return f
	}
	req.Distribution = strings.TrimSpace(q.v.Get("distribution"))
	req.Alpha = num("alpha")
	req.N, req.A, req.B = q.integer("n"), q.integer("a"), q.integer("b")
	req.SweepFrom, req.SweepTo = num("sweep_from"), num("sweep_to")
	req.SweepPoints = int(q.integer("sweep_points"))
	if typed > 0 && len(q.errs) == typed {
		q.failErr(req.Validate())
	}
	return req, q.problem()
}

// plotNRMSE renders NRMSE against the threshold.
//
//	@Summary		Plot: NRMSE of the sum estimate over a synthetic distribution as the threshold tau sweeps (SVG)
//	@ID			plotNRMSE
//	@Description	PWS vs sampled-SbH vs non-private sampling, from exact expressions (eq. 12). distribution=zipf&alpha&n or distribution=uniform&a&b; sweep_from, sweep_to, sweep_points.
//	@Tags			planner
//	@Produce		image/svg+xml
//	@Param			epsilon			query	number	true	"epsilon > 0"
//	@Param			delta			query	number	true	"0 < delta <= 1"
//	@Param			scheme			query	string	false	"ppswor | priority (none sweeps priority)"
//	@Param			threshold		query	number	false	"tau, checked as for the tables; the plot sweeps tau instead"
//	@Param			power			query	number	false	"p"	default(1)
//	@Param			probabilities	query	string	false	"custom: q_1,...,q_n (custom cannot sweep: a 422)"
//	@Param			method			query	string	false	"discrete | max_separation"
//	@Param			g				query	string	false	"identity | count | power:P | cap:T"
//	@Param			estimator		query	string	false	"mle | biased_down | unbiased"
//	@Param			distribution	query	string	true	"zipf | uniform"
//	@Param			alpha			query	number	false	"zipf exponent"
//	@Param			n				query	int		false	"keys"
//	@Param			a				query	int		false	"uniform: smallest frequency"
//	@Param			b				query	int		false	"uniform: largest frequency"
//	@Param			sweep_from		query	number	false	"smallest tau of the sweep"	default(1e-6)
//	@Param			sweep_to		query	number	false	"largest tau of the sweep"	default(1)
//	@Param			sweep_points	query	int		false	"thresholds in the sweep, 2 to 50, log-spaced"	default(13)
//	@Success		200	{string}	string	"the SVG image"
//	@Failure		422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/plots/nrmse [get]
func (h *handler) plotNRMSE(w http.ResponseWriter, r *http.Request) error {
	req, err := h.planRequest(r, true)
	if err != nil {
		return err
	}
	svg, err := h.svc.Tables.PlotNRMSE(r.Context(), req)
	return answerSVG(w, svg, err)
}

// planSummary returns the key planning numbers.
//
//	@Summary		Plan a release: L, where pi reaches q, expected reported fraction and NRMSE (PWS, sampled-SbH, non-private)
//	@ID			getPlanSummary
//	@Description	Exact expressions on a synthetic frequency distribution (no private data): distribution=zipf&alpha&n or distribution=uniform&a&b. The summary is at the given threshold; the same quantities as tau sweeps are plotted by GET /v1/plots/nrmse, whose query this route also accepts (sweep_from, sweep_to and sweep_points must be numbers here but are not used).
//	@Tags			planner
//	@Produce		json
//	@Param			epsilon			query		number	true	"epsilon > 0"
//	@Param			delta			query		number	true	"0 < delta <= 1"
//	@Param			scheme			query		string	false	"ppswor | priority | none | custom"
//	@Param			threshold		query		number	false	"tau"
//	@Param			power			query		number	false	"p"	default(1)
//	@Param			probabilities	query		string	false	"custom: q_1,...,q_n"
//	@Param			method			query		string	false	"discrete | max_separation"
//	@Param			g				query		string	false	"identity | count | power:P | cap:T"
//	@Param			estimator		query		string	false	"mle | biased_down | unbiased"
//	@Param			distribution	query		string	true	"zipf | uniform"
//	@Param			alpha			query		number	false	"zipf exponent"
//	@Param			n				query		int		false	"keys"
//	@Param			a				query		int		false	"uniform: smallest frequency"
//	@Param			b				query		int		false	"uniform: largest frequency"
//	@Param			sweep_from		query		number	false	"not used here: accepted so that one query serves this route and GET /v1/plots/nrmse"
//	@Param			sweep_to		query		number	false	"not used here: as sweep_from"
//	@Param			sweep_points	query		int		false	"not used here: as sweep_from"
//	@Success		200				{object}	planner.PlanResult
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/plan/summary [get]
func (h *handler) planSummary(w http.ResponseWriter, r *http.Request) error {
	req, err := h.planRequest(r, false)
	if err != nil {
		return err
	}
	res, err := h.svc.Tables.Plan(r.Context(), req)
	return answerJSON(w, res, err)
}
