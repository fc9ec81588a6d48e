package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/service"
)

// Query parameters of the listings and of GET /v1/samples/{id}.
const (
	paramLimit  = "limit"
	paramCursor = "cursor"
)

// page reads limit and cursor. limit 0 stands for the default.
func page(r *http.Request) (service.Page, error) {
	q := newQuery(r)
	limit := q.int(paramLimit, 0, 1, service.MaxPageLimit)
	if !validCursor(q.v.Get(paramCursor)) {
		q.fail(paramCursor, service.CursorReason)
	}
	if err := q.problem(); err != nil {
		return service.Page{}, err
	}
	return service.Page{Limit: int(limit), Cursor: q.v.Get(paramCursor)}, nil
}

// paged reports whether the request asks for a page (limit or cursor given).
func paged(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has(paramLimit) || q.Has(paramCursor)
}

// SampleList is one page of stored samples, without their elements.
type SampleList struct {
	// Items are the samples of this page, oldest first.
	Items []SampleMeta `json:"items"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DatasetList is one page of datasets with their ledgers.
type DatasetList struct {
	// Items are the datasets of this page, oldest first.
	Items []DatasetView `json:"items"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// StreamList is one page of streams.
type StreamList struct {
	// Items are the streams of this page, oldest first.
	Items []StreamView `json:"items"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// CounterList is one page of counters.
type CounterList struct {
	// Items are the counters of this page, oldest first.
	Items []CounterView `json:"items"`
	// NextCursor is the cursor of the next page; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// listSamples lists stored samples.
//
//	@Summary		List stored samples (metadata only)
//	@ID			listSamples
//	@Description	Oldest first, ordered by (created_at, id). Pass next_cursor as cursor for the next page; the last page has no next_cursor. Expired samples (PWSD_SAMPLE_TTL) are not listed.
//	@Tags			samples
//	@Produce		json
//	@Param			limit	query		int		false	"items per page (1 to 1000, default 100)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page (opaque)"
//	@Success		200		{object}	SampleList
//	@Failure		400,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples [get]
func (h *handler) listSamples(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	items, next, err := h.svc.Samples.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := SampleList{Items: make([]SampleMeta, len(items)), NextCursor: next}
	for i, s := range items {
		out.Items[i] = sampleMeta(s)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteSample deletes a sample.
//
//	@Summary		Delete a sample
//	@ID			deleteSample
//	@Description	Deletes the sanitized sample and its elements. The release stays in its dataset's ledger: the budget it spent is never returned.
//	@Tags			samples
//	@Param			id	path	string	true	"sample id"
//	@Success		204
//	@Failure		404	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id} [delete]
func (h *handler) deleteSample(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := h.svc.Samples.Delete(r.Context(), id); err != nil {
		return err
	}
	h.redactAnswers(r, "/v1/samples/"+id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listDatasets lists datasets with their ledgers.
//
//	@Summary		List datasets with their budgets, spend and ledgers
//	@ID			listDatasets
//	@Description	Oldest first, ordered by (created_at, name). Pass next_cursor as cursor for the next page. Datasets and ledgers are never deleted: they are the audit trail.
//	@Tags			budgets
//	@Produce		json
//	@Param			limit	query		int		false	"items per page (1 to 1000, default 100)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page (opaque)"
//	@Success		200		{object}	DatasetList
//	@Failure		400,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/datasets [get]
func (h *handler) listDatasets(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	items, next, err := h.svc.Datasets.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := DatasetList{Items: make([]DatasetView, len(items)), NextCursor: next}
	for i, d := range items {
		out.Items[i] = datasetView(d)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listStreams lists streams.
//
//	@Summary		List streams (configuration and counts)
//	@ID			listStreams
//	@Description	Oldest first, ordered by (created_at, id). Pass next_cursor as cursor for the next page.
//	@Tags			streams
//	@Produce		json
//	@Param			limit	query		int		false	"items per page (1 to 1000, default 100)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page (opaque)"
//	@Success		200		{object}	StreamList
//	@Failure		400,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams [get]
func (h *handler) listStreams(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	items, next, err := h.svc.Streams.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := StreamList{Items: make([]StreamView, len(items)), NextCursor: next}
	for i, s := range items {
		out.Items[i] = streamView(s)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteStream deletes a stream.
//
//	@Summary		Delete a stream
//	@ID			deleteStream
//	@Description	Deletes the stream and its pan-private state. Its releases stay in its dataset's ledger.
//	@Tags			streams
//	@Param			id	path	string	true	"stream id"
//	@Success		204
//	@Failure		404	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams/{id} [delete]
func (h *handler) deleteStream(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := h.svc.Streams.Delete(r.Context(), id); err != nil {
		return err
	}
	h.redactAnswers(r, "/v1/streams/"+id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listCounters lists counters.
//
//	@Summary		List counters
//	@ID			listCounters
//	@Description	Oldest first, ordered by (created_at, id). Pass next_cursor as cursor for the next page.
//	@Tags			counters
//	@Produce		json
//	@Param			limit	query		int		false	"items per page (1 to 1000, default 100)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page (opaque)"
//	@Success		200		{object}	CounterList
//	@Failure		400,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/counters [get]
func (h *handler) listCounters(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	items, next, err := h.svc.Counters.List(r.Context(), p)
	if err != nil {
		return err
	}
	out := CounterList{Items: make([]CounterView, len(items)), NextCursor: next}
	for i, c := range items {
		out.Items[i] = counterView(c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteCounter deletes a counter.
//
//	@Summary	Delete a counter
//	@ID			deleteCounter
//	@Description	Deletes the counter and its state; its outputs so far stay published. A repeat is a 404.
//	@Tags		counters
//	@Param		id	path	string	true	"counter id"
//	@Success	204
//	@Failure	404	{object}	Problem
//	@Security	bearer
//	@Router		/v1/counters/{id} [delete]
func (h *handler) deleteCounter(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := h.svc.Counters.Delete(r.Context(), id); err != nil {
		return err
	}
	h.redactAnswers(r, "/v1/counters/"+id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
