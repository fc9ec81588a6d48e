package api

import (
	"net/http"
	"strconv"
)

// PrebuildRequest names the parameter set of a scheduled frequencies
// release and how far its tables should reach.
type PrebuildRequest struct {
	Privacy  PrivacyParams  `json:"privacy" validate:"required"`
	Sampling SamplingParams `json:"sampling" validate:"required"`
	Method   string         `json:"method,omitempty" validate:"omitempty,oneof=max_separation discrete" enums:"max_separation,discrete" default:"max_separation"`
	// The tables cover every sanitized value and frequency up to this one.
	MaxFrequency int64 `json:"max_frequency" validate:"required,min=1" minimum:"1" example:"100000"`
}

// PrebuildView says what was built: the chunks of chunk_size frequencies
// covering (0, max_frequency], of which built were computed now (the others
// were cached already).
type PrebuildView struct {
	// Frequencies per chunk (a power of two at least L + 16, and 64).
	ChunkSize int64 `json:"chunk_size"`
	// Chunks covering (0, max_frequency].
	Chunks int64 `json:"chunks"`
	// Chunks computed by this request; the others were cached already.
	Built int64 `json:"built"`
}

// prebuild builds a parameter set's tables ahead of a release.
//
//	@Summary		Build a parameter set's tables ahead of a scheduled release
//	@ID			prebuildTables
//	@Description	Computes and keeps (in memory and, with PostgreSQL, across restarts) the MLE chunks that frequencies releases under these parameters read, for every frequency up to max_frequency, and the sanitizer rows their draws start from, so that the release itself only reads them. Tables depend on the parameters only, never on data: nothing is charged. Chunks already cached are not computed again. The work is bounded like a table request's (422 naming max_frequency above PWSD_MAX_TABLE_WORK). Writers only.
//	@Tags			tables
//	@Accept			json
//	@Produce		json
//	@Param			body	body		PrebuildRequest	true	"parameters of the release to prepare"
//	@Success		200		{object}	PrebuildView
//	@Failure		400,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/tables/prebuild [post]
func (h *handler) prebuild(w http.ResponseWriter, r *http.Request) error {
	var req PrebuildRequest
	if err := h.decodeValid(r, &req); err != nil {
		return err
	}
	if req.MaxFrequency > h.limits.MaxFrequency {
		return invalid("max_frequency", "must be at most "+strconv.FormatInt(h.limits.MaxFrequency, 10)+" (PWSD_MAX_FREQUENCY)")
	}
	spec, err := h.spec(SampleHeader{Privacy: req.Privacy, Sampling: req.Sampling, Release: "frequencies", Method: req.Method})
	if err != nil {
		return err
	}
	p, err := h.svc.Tables.Prebuild(r.Context(), spec, req.MaxFrequency)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, PrebuildView{ChunkSize: p.ChunkSize, Chunks: p.Chunks, Built: p.Built})
	return nil
}
