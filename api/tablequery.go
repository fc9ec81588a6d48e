package api

import (
	"net/http"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// The typed queries of the table and plot routes: one reader per kind of
// request, so that each route's handler only calls the service.

// reportingQuery is the query of the reporting table and its plot.
type reportingQuery struct {
	privacy      sanitize.Privacy
	sampling     sanitize.Sampling
	maxFrequency int64
	baseline     bool // add sampled-SbH's baseline
}

// reportingQuery reads epsilon, delta, the sampling scheme, max_frequency
// and baseline; the error names every invalid parameter.
func (h *handler) reportingQuery(r *http.Request) (reportingQuery, error) {
	q := newQuery(r)
	rq := reportingQuery{privacy: q.privacy(), sampling: q.sampling(h.limits.MaxCustomQ)}
	rq.maxFrequency = q.maxFrequency(h.limits)
	rq.baseline = q.baseline()
	return rq, q.problem()
}

// rowsQuery is the query of the frequency sanitizer's rows and their audit.
type rowsQuery struct {
	privacy  sanitize.Privacy
	sampling sanitize.Sampling
	method   sanitize.Method
	lo, hi   int64 // frequency=lo-hi (lo = hi for one frequency)
}

// rowsQuery reads epsilon, delta, the sampling scheme, method and the
// frequency range; the error names every invalid parameter.
func (h *handler) rowsQuery(r *http.Request) (rowsQuery, error) {
	q := newQuery(r)
	rq := rowsQuery{privacy: q.privacy(), sampling: q.sampling(h.limits.MaxCustomQ), method: q.method()}
	rq.lo, rq.hi = q.frequencyRange(h.limits.MaxFrequency, h.limits.MaxRangeRows)
	return rq, q.problem()
}

// estimatorQuery is the query of the estimator table and of the bias and
// variance plots.
type estimatorQuery struct {
	privacy      sanitize.Privacy
	sampling     sanitize.Sampling
	method       sanitize.Method
	g            estimate.G
	estimator    estimate.Estimator
	maxFrequency int64
	baseline     bool // add sampled-SbH's baseline
	normalized   bool // plots: divide by g(i)^2 (default true)
}

// estimatorQuery reads the estimator table's parameters and, for the
// plots (plot true), normalized; the error names every invalid parameter.
func (h *handler) estimatorQuery(r *http.Request, plot bool) (estimatorQuery, error) {
	q := newQuery(r)
	eq := estimatorQuery{privacy: q.privacy(), sampling: q.sampling(h.limits.MaxCustomQ), method: q.method(), g: q.g(), estimator: q.estimator()}
	eq.maxFrequency = q.maxFrequency(h.limits)
	eq.baseline = q.baseline()
	eq.normalized = true
	if plot {
		switch q.v.Get("normalized") {
		case "", "true", "1":
		case "false", "0":
			eq.normalized = false
		default:
			q.fail("normalized", "must be true or false")
		}
	}
	return eq, q.problem()
}
