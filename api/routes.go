package api

import "github.com/go-chi/chi/v5"

// routes mounts the /v1 API; every handler returns its error to adapt.
func (h *handler) routes(cr chi.Router) {
	// Path identifiers are checked once, for every route, after
	// authentication and before the route's own middleware (idempotency
	// included) or handler sees them.
	r := errRouter{Router: cr.With(validPathIDs), adapt: h.adapt}
	r.With(h.idempotent).Post("/samples", h.createSample)
	r.With(h.idempotent).Post("/samples:import", h.importSample)
	r.Get("/samples", h.listSamples)
	r.Delete("/samples/{id}", h.deleteSample)
	r.Get("/samples/{id}", h.getSample)
	r.Get("/samples/{id}/estimate", h.estimateSample)
	r.Get("/samples/{id}/top", h.top)
	r.Get("/samples/{id}/rank", h.rank)
	r.Get("/samples/{id}/quantiles", h.quantiles)
	r.Get("/tables/reporting", h.reporting)
	r.Get("/tables/frequencies", h.frequencies)
	r.Get("/tables/estimators", h.estimators)
	r.Get("/tables/audit", h.audit)
	r.Post("/tables/prebuild", h.prebuild)
	r.Get("/plots/reporting", h.plotReporting)
	r.Get("/plots/bias", h.plotBias)
	r.Get("/plots/variance", h.plotVariance)
	r.Get("/plots/nrmse", h.plotNRMSE)
	r.Get("/plan/summary", h.planSummary)
	r.With(h.idempotent).Post("/streams", h.createStream)
	r.Get("/streams", h.listStreams)
	r.Delete("/streams/{id}", h.deleteStream)
	r.Get("/streams/{id}", h.getStream)
	r.With(h.idempotent).Post("/streams/{id}/events", h.postEvents)
	r.With(h.idempotent).Post("/streams/{id}/releases", h.postRelease)
	r.With(notIdempotent).Post("/streams/{id}/intrusions", h.postIntrusion)
	r.With(h.idempotent).Post("/counters", h.createCounter)
	r.Get("/counters", h.listCounters)
	r.Delete("/counters/{id}", h.deleteCounter)
	r.Get("/counters/{id}", h.getCounter)
	r.With(h.idempotent).Post("/counters/{id}/steps", h.postSteps)
	r.With(h.idempotent).Post("/datasets", h.createDataset)
	r.Get("/datasets", h.listDatasets)
	r.Get("/datasets/{name}", h.getDataset)
	r.With(h.idempotent).Post("/datasets/{name}/charges", h.createCharge)
}
