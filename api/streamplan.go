package api

import (
	"net/http"
	"strings"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/planner"
)

// streamPlanQuery is what the stream planner reads (streamPlanRequest).
var streamPlanQuery = []string{"universe_size", "epsilon", "alpha", "beta", "sample_size", "density", "release_noise", "reps", "seed"}

// Defaults of the stream planner's query (the planner page shows the same).
const (
	defaultStreamPlanDensity = 0.5
	defaultStreamPlanReps    = 100
)

// streamPlanRequest reads the stream planner's query; planner.StreamPlan
// checks the values and names invalid ones.
func streamPlanRequest(r *http.Request) (planner.StreamPlanRequest, *query) {
	q := newQuery(r)
	num := func(name string, def float64) float64 {
		if !q.has(name) {
			return def
		}
		f, _ := q.float(name, false)
		return f
	}
	req := planner.StreamPlanRequest{
		Epsilon:      num("epsilon", 0),
		Alpha:        num("alpha", 0),
		Beta:         num("beta", 0),
		Density:      num("density", defaultStreamPlanDensity),
		ReleaseNoise: panprivate.ReleaseNoise(strings.TrimSpace(q.v.Get("release_noise"))),
		Reps:         int(q.int("reps", defaultStreamPlanReps, 0, 1<<20)),
		Seed:         uint64(q.int("seed", 1, 0, 1<<53)),
	}
	for _, name := range []string{"universe_size", "epsilon", "alpha", "beta"} {
		if !q.has(name) {
			q.fail(name, "is required")
		}
	}
	if n := q.integer("universe_size"); n >= 0 {
		req.UniverseSize = uint64(n)
	} else {
		q.fail("universe_size", "must be an integer from 1 to 2^53")
	}
	req.SampleSize = int(q.int("sample_size", 0, 0, panprivate.MaxSampleSize))
	return req, q
}

// streamPlan plans a pan-private density stream.
//
//	@Summary		Plan a density stream: the algorithm (dwork, optbern, ppds) and sample size for a universe, epsilon and accuracy, with the theorems' MSE beside a simulation
//	@ID			getStreamPlan
//	@Description	For each pan-private density algorithm: the sample size m* of the (alpha, beta) bound of Digalakis et al. (what POST /v1/streams picks from an accuracy; ppds uses optbern's), the papers' MSE bound (Theorems 3.2, 4.2, 5.2), the exact MSE at the assumed density and release noise, and, with reps > 0, the MSE, bias and probability of an error of at least alpha measured by running the estimators themselves on a synthetic stream of that density (seeded: the same query gives the same answer). The recommendation is the smallest predicted MSE among the algorithms whose sample meets the bound. No private data is read. docs/errorbars-streams.md derives the MSE.
//	@Tags			planner
//	@Produce		json
//	@Param			universe_size	query		int		true	"|U|, 1 to 2^53"
//	@Param			epsilon			query		number	true	"the streams' epsilon, 0 < epsilon <= 0.5"
//	@Param			alpha			query		number	true	"accuracy: the estimate within alpha of the density..."
//	@Param			beta			query		number	true	"...with probability at least 1 - beta"
//	@Param			sample_size		query		int		false	"m for every algorithm instead of m* (1 to min(universe_size, 2^20))"
//	@Param			density			query		number	false	"the density the predictions and the simulation assume, 0 to 1"	default(0.5)
//	@Param			release_noise	query		string	false	"calibrated | paper, as in a stream's config"	default(calibrated)	Enums(calibrated, paper)
//	@Param			reps			query		int		false	"simulated streams per algorithm; 0 skips the simulation; reps x (density x universe_size + users read) x 3 at most 2^25"	default(100)
//	@Param			seed			query		int		false	"seed of the simulation"	default(1)
//	@Success		200				{object}	planner.StreamPlanResult
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/plan/streams [get]
func (h *handler) streamPlan(w http.ResponseWriter, r *http.Request) error {
	req, q := streamPlanRequest(r)
	if err := q.problem(); err != nil {
		return err
	}
	res, err := h.svc.Tables.StreamPlan(r.Context(), req)
	return answerJSON(w, res, err)
}

// plotStreams renders the predicted MSE of the density algorithms.
//
//	@Summary		Plot: predicted MSE of the pan-private density algorithms against epsilon or the sample size (SVG)
//	@ID			plotStreams
//	@Description	The exact MSE (solid) and the papers' theorem bound (dashed) of dwork, optbern and ppds at the assumed density and release noise, as Figures 5-7 of Digalakis et al. plot them: x=epsilon (0.05 to 0.5, each algorithm's sample size held at its plan's) or x=sample_size (m/|U| from 1/1000 to 1). No simulation (reps and seed are accepted so that one query serves this route and GET /v1/plan/streams, but not used); `pwsd figures --paper improved-density` simulates the paper's figures.
//	@Tags			planner
//	@Produce		image/svg+xml
//	@Param			x				query	string	false	"epsilon | sample_size"	default(epsilon)	Enums(epsilon, sample_size)
//	@Param			universe_size	query	int		true	"|U|, 1 to 2^53"
//	@Param			epsilon			query	number	true	"0 < epsilon <= 0.5"
//	@Param			alpha			query	number	true	"accuracy alpha (chooses m*)"
//	@Param			beta			query	number	true	"accuracy beta (chooses m*)"
//	@Param			sample_size		query	int		false	"m instead of m*"
//	@Param			density			query	number	false	"assumed density"	default(0.5)
//	@Param			release_noise	query	string	false	"calibrated | paper"	default(calibrated)	Enums(calibrated, paper)
//	@Param			reps			query	int		false	"not used here: accepted as for GET /v1/plan/streams"
//	@Param			seed			query	int		false	"not used here: as reps"
//	@Success		200	{string}	string	"the SVG image"
//	@Failure		422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/plots/streams [get]
func (h *handler) plotStreams(w http.ResponseWriter, r *http.Request) error {
	req, q := streamPlanRequest(r)
	axis := q.v.Get("x")
	if axis == "" {
		axis = planner.StreamAxisEpsilon
	}
	if err := q.problem(); err != nil {
		return err
	}
	svg, err := h.svc.Tables.PlotStreamMSE(req, axis)
	return answerSVG(w, svg, err)
}
