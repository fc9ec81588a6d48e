package api

import (
	"context"
	"net/http"
	"time"
)

// healthz answers 200 while the process is up.
//
//	@Summary	Liveness
//	@ID			getHealth
//	@Description	200 while the process serves requests; it does not touch the store (use readyz for that). Public: never needs a token.
//	@Tags		operations
//	@Produce	json
//	@Success	200	{object}	map[string]string
//	@Router		/healthz [get]
func (h *handler) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 when the store is reachable and its migrations are at
// head, 503 otherwise.
//
//	@Summary	Readiness: store reachable and migrations applied
//	@ID			getReadiness
//	@Description	200 when the store answers and its migrations are applied, else a 503 problem. Public: never needs a token.
//	@Tags		operations
//	@Produce	json
//	@Success	200	{object}	map[string]string
//	@Failure	503	{object}	Problem
//	@Router		/readyz [get]
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := h.svc.Ready(ctx); err != nil {
		h.outage.failed(err) // logged once per outage, not per probe
		unavailable(w, time.Second, "the store is not reachable or not migrated")
		return nil
	}
	h.outage.succeeded()
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
