package api

import "github.com/go-chi/chi/v5"

// routes mounts the /v1 API.
func (h *handler) routes(r chi.Router) {
	r.Post("/samples", h.createSample)
	r.Get("/samples/{id}", h.getSample)
	r.Get("/samples/{id}/estimate", h.estimateSample)
	r.Get("/samples/{id}/top", h.top)
	r.Get("/samples/{id}/rank", h.rank)
	r.Get("/samples/{id}/quantiles", h.quantiles)
	r.Get("/tables/reporting", h.reporting)
	r.Get("/tables/frequencies", h.frequencies)
	r.Get("/tables/estimators", h.estimators)
	r.Get("/plots/reporting", h.plotReporting)
	r.Get("/plots/bias", h.plotBias)
	r.Get("/plots/variance", h.plotVariance)
	r.Get("/plots/nrmse", h.plotNRMSE)
	r.Get("/plan/summary", h.planSummary)
	r.Post("/streams", h.createStream)
	r.Get("/streams/{id}", h.getStream)
	r.Post("/streams/{id}/events", h.postEvents)
	r.Post("/streams/{id}/releases", h.postRelease)
	r.Post("/streams/{id}/intrusions", h.postIntrusion)
	r.Post("/counters", h.createCounter)
	r.Get("/counters/{id}", h.getCounter)
	r.Post("/counters/{id}/steps", h.postSteps)
	r.Post("/datasets", h.createDataset)
	r.Get("/datasets/{name}", h.getDataset)
	r.Post("/datasets/{name}/charges", h.createCharge)
}
