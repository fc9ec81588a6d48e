package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// route declares one /v1 endpoint, in the one place a new endpoint is
// added (v1Routes): the router, the query-parameter allow-list (checkQuery)
// and the admission class are all derived from it. TestRouteTableIsTheRouter
// proves that every mounted route is declared, TestRoutesAreDocumented that
// every declared one is in the OpenAPI document with the same query
// parameters (see docs/routes.md).
type route struct {
	method  string // http.MethodGet, MethodPost or MethodDelete (HEAD is served with GET)
	pattern string // chi pattern under /v1
	handle  func(*handler, http.ResponseWriter, *http.Request) error
	query   queryParams // the query parameters it accepts (noQuery: none)
	cost    cost        // whether admission bounds it
	key     keyUse      // what a POST does with an Idempotency-Key
}

// cost is a route's admission class. It must be declared: the zero value
// is refused by TestRouteTableIsTheRouter.
type cost int

const (
	// light routes read or write a bounded amount (a stream's state, a
	// counter's step, a dataset's ledger) and are always admitted.
	light cost = iota + 1
	// heavy routes may cost memory or CPU in proportion to their parameters
	// or body (releases, tables, plots, plans, estimates over a sample):
	// admission bounds them (PWSD_MAX_HEAVY_REQUESTS,
	// PWSD_MAX_INFLIGHT_BYTES) and answers 503 with Retry-After when full.
	heavy
)

// keyUse is what a route does with an Idempotency-Key header.
type keyUse int

const (
	// ignoresKey: GET, DELETE and the POSTs that neither create nor charge.
	ignoresKey keyUse = iota
	// honoursKey: a repeat with the same key and body replays the first
	// answer (idempotent).
	honoursKey
	// refusesKey: the answer may not be replayed; a key is a 400
	// (notIdempotent).
	refusesKey
)

// queryParams is the set of query parameters one route accepts: single-valued
// ones (given at most once) and repeatable ones. An unknown parameter or a
// repeated single-valued one is a 400 naming it (checkQuery) before the
// handler runs; handlers read the values with query.
type queryParams struct {
	single, repeated []string
	declared         bool // set by takes: a route says what it takes, even nothing
}

// takes declares the single-valued query parameters of a route, joined
// from groups.
func takes(groups ...[]string) queryParams {
	return queryParams{single: join(groups...), declared: true}
}

// repeating adds repeatable parameters (key=a&key=b) to q.
func (q queryParams) repeating(names ...string) queryParams {
	q.repeated = append(append([]string(nil), q.repeated...), names...)
	return q
}

// noQuery is the declaration of a route that takes no query parameter.
var noQuery = takes()

// v1Routes is every /v1 route: its method, pattern, handler, query
// parameters, admission class and use of Idempotency-Key. Its documentation
// is the swag annotation on the handler (make openapi).
func v1Routes() []route {
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	type h = handler
	table := join(privacyQuery, samplingQuery)
	return []route{
		{post, "/samples", (*h).createSample, takes([]string{"estimator"}, table, []string{"dataset", "release", "method"}), heavy, honoursKey},
		{post, "/samples:import", (*h).importSample, noQuery, heavy, honoursKey},
		{get, "/samples", (*h).listSamples, takes(listQuery), light, ignoresKey},
		{del, "/samples/{id}", (*h).deleteSample, noQuery, light, ignoresKey},
		{get, "/samples/{id}", (*h).getSample, takes([]string{"estimator"}, listQuery), light, ignoresKey},
		{get, "/samples/{id}/estimate", (*h).estimateSample, takes([]string{"estimator", "level", "group_by", "delimiter", "length", "g", "key_prefix", "key_regex"}).repeating("key"), heavy, ignoresKey},
		{get, "/samples/{id}/top", (*h).top, takes([]string{"k"}), heavy, ignoresKey},
		{get, "/samples/{id}/rank", (*h).rank, takes([]string{"key"}), heavy, ignoresKey},
		{get, "/samples/{id}/quantiles", (*h).quantiles, takes([]string{"population"}).repeating("q"), heavy, ignoresKey},
		{get, "/tables/reporting", (*h).reporting, takes(table, []string{"max_frequency", "baseline"}), heavy, ignoresKey},
		{get, "/tables/frequencies", (*h).frequencies, takes(table, []string{"method", "frequency"}), heavy, ignoresKey},
		{get, "/tables/estimators", (*h).estimators, takes(table, []string{"method", "g", "estimator", "max_frequency", "baseline"}), heavy, ignoresKey},
		{get, "/tables/audit", (*h).audit, takes(table, []string{"method", "frequency"}), heavy, ignoresKey},
		{post, "/tables/prebuild", (*h).prebuild, noQuery, heavy, ignoresKey},
		{get, "/plots/reporting", (*h).plotReporting, takes(table, []string{"max_frequency", "baseline"}), heavy, ignoresKey},
		{get, "/plots/bias", (*h).plotBias, takes(table, []string{"method", "g", "estimator", "max_frequency", "baseline"}), heavy, ignoresKey},
		{get, "/plots/variance", (*h).plotVariance, takes(table, []string{"method", "g", "estimator", "max_frequency", "baseline", "normalized"}), heavy, ignoresKey},
		{get, "/plots/nrmse", (*h).plotNRMSE, takes(planQuery), heavy, ignoresKey},
		{get, "/plan/summary", (*h).planSummary, takes(planQuery), heavy, ignoresKey},
		{get, "/plan/streams", (*h).streamPlan, takes(streamPlanQuery), heavy, ignoresKey},
		{get, "/plots/streams", (*h).plotStreams, takes(streamPlanQuery, []string{"x"}), heavy, ignoresKey},
		{post, "/streams", (*h).createStream, noQuery, heavy, honoursKey},
		{get, "/streams", (*h).listStreams, takes(listQuery), light, ignoresKey},
		{del, "/streams/{id}", (*h).deleteStream, noQuery, light, ignoresKey},
		{get, "/streams/{id}", (*h).getStream, noQuery, light, ignoresKey},
		{post, "/streams/{id}/events", (*h).postEvents, noQuery, heavy, honoursKey},
		{post, "/streams/{id}/releases", (*h).postRelease, takes([]string{"level"}), heavy, honoursKey},
		{post, "/streams/{id}/intrusions", (*h).postIntrusion, noQuery, heavy, refusesKey},
		{post, "/counters", (*h).createCounter, noQuery, light, honoursKey},
		{get, "/counters", (*h).listCounters, takes(listQuery), light, ignoresKey},
		{del, "/counters/{id}", (*h).deleteCounter, noQuery, light, ignoresKey},
		{get, "/counters/{id}", (*h).getCounter, noQuery, light, ignoresKey},
		{post, "/counters/{id}/steps", (*h).postSteps, noQuery, light, honoursKey},
		{post, "/datasets", (*h).createDataset, noQuery, light, honoursKey},
		{get, "/datasets", (*h).listDatasets, takes(listQuery), light, ignoresKey},
		{get, "/datasets/{name}", (*h).getDataset, takes([]string{"epsilon", "delta"}), light, ignoresKey},
		{post, "/datasets/{name}/charges", (*h).createCharge, noQuery, light, honoursKey},
	}
}

// Shared groups of query parameters.
var (
	privacyQuery  = []string{"epsilon", "delta"}
	samplingQuery = []string{"scheme", "threshold", "power", "probabilities"}
	// planQuery is what the planner reads (planRequest): the typed release
	// parameters as the tables read them, the synthetic distribution and
	// the threshold sweep.
	planQuery = join(privacyQuery, samplingQuery, []string{"method", "g", "estimator", "distribution", "alpha", "n", "a", "b",
		"sweep_from", "sweep_to", "sweep_points"})
	listQuery = []string{"limit", "cursor"}
	// plannerPageQuery is what a shared link to the planner page carries
	// (api/web/planner.html: the plan's fields; never the token): the page
	// fills its form from it.
	plannerPageQuery = takes(planQuery, []string{"max_frequency", "baseline"}, prefixed("stream_", streamPlanQuery))
)

// prefixed returns names with prefix before each.
func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

func join(groups ...[]string) []string {
	var out []string
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// routes mounts rs on cr; every handler returns its error to adapt. Each
// route's own middleware runs in this order: admission (heavy routes),
// the check of path identifiers, then idempotency.
func (h *handler) routes(cr chi.Router, rs []route, adm *admission) {
	for _, rt := range rs {
		var mw []func(http.Handler) http.Handler
		if rt.cost == heavy {
			mw = append(mw, adm.middleware)
		}
		// Path identifiers are checked once, for every route, after
		// authentication and admission and before the route's own
		// idempotency or handler sees them.
		mw = append(mw, validPathIDs)
		switch rt.key {
		case honoursKey:
			mw = append(mw, h.idempotent)
		case refusesKey:
			mw = append(mw, notIdempotent)
		}
		cr.With(mw...).Method(rt.method, rt.pattern, h.adapt(func(w http.ResponseWriter, r *http.Request) error {
			return rt.handle(h, w, r)
		}))
	}
}

// queryIndex maps "METHOD /prefix/pattern" to the query parameters of each
// route of rs mounted under prefix, for checkQuery.
func queryIndex(prefix string, rs []route) map[string]queryParams {
	idx := make(map[string]queryParams, len(rs))
	for _, rt := range rs {
		idx[rt.method+" "+prefix+rt.pattern] = rt.query
	}
	return idx
}

// routeOf returns the method and the pattern of the route of root that r
// matches, a HEAD request as its GET; the pattern is "" when none matches.
func routeOf(root chi.Routes, r *http.Request) (method, pattern string) {
	method = r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	return method, root.Find(chi.NewRouteContext(), method, r.URL.Path)
}
