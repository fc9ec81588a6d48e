package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/service"
)

// DatasetRequest creates a dataset with a privacy budget.
type DatasetRequest struct {
	Name          string   `json:"name" validate:"required,dataset_name"`
	EpsilonBudget *float64 `json:"epsilon_budget" validate:"required"`
	DeltaBudget   *float64 `json:"delta_budget" validate:"required" minimum:"0" maximum:"1"`
}

// Spend is an (epsilon, delta) amount.
type Spend struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// ReleaseView is one charged release in a dataset's ledger.
type ReleaseView struct {
	Kind      string    `json:"kind" enums:"sample,stream,external"`
	Ref       string    `json:"ref"`
	Epsilon   float64   `json:"epsilon"`
	Delta     float64   `json:"delta"`
	CreatedAt time.Time `json:"created_at"`
}

// DatasetView is a dataset's budget, spend and ledger.
type DatasetView struct {
	Name          string        `json:"name"`
	EpsilonBudget float64       `json:"epsilon_budget"`
	DeltaBudget   float64       `json:"delta_budget"`
	Spent         Spend         `json:"spent"`
	Remaining     Spend         `json:"remaining"`
	CreatedAt     time.Time     `json:"created_at"`
	Releases      []ReleaseView `json:"releases"`
}

func datasetView(d service.Dataset) DatasetView {
	v := DatasetView{
		Name: d.Name, EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget, CreatedAt: d.CreatedAt,
		Spent:     Spend{Epsilon: d.SpentEpsilon, Delta: d.SpentDelta},
		Remaining: Spend{Epsilon: max(0, d.EpsilonBudget-d.SpentEpsilon), Delta: max(0, d.DeltaBudget-d.SpentDelta)},
		Releases:  []ReleaseView{},
	}
	for _, r := range d.Releases {
		v.Releases = append(v.Releases, ReleaseView{Kind: r.Kind, Ref: r.Ref, Epsilon: r.Epsilon, Delta: r.Delta, CreatedAt: r.CreatedAt})
	}
	return v
}

// createDataset creates a privacy budget.
//
//	@Summary		Create a dataset with a privacy budget
//	@ID			createDataset
//	@Description	Releases created with "dataset" are charged to it by basic composition; a release that would overspend is refused with 409 and changes nothing.
//	@Tags			budgets
//	@Accept			json
//	@Produce		json
//	@Param			body	body		DatasetRequest	true	"name and budget"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		201		{object}	DatasetView
//	@Failure		400,409,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/datasets [post]
func (h *handler) createDataset(w http.ResponseWriter, r *http.Request) error {
	var req DatasetRequest
	if err := h.decodeValid(r, &req); err != nil {
		return err
	}
	d, err := h.svc.CreateDataset(r.Context(), req.Name, *req.EpsilonBudget, *req.DeltaBudget)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/datasets/"+d.Name)
	writeJSON(w, http.StatusCreated, datasetView(d))
	return nil
}

// getDataset returns a dataset's budget, spend and ledger.
//
//	@Summary	A dataset's budget, what is spent and remains, and the releases charged
//	@ID			getDataset
//	@Description	The budget (epsilon_budget, delta_budget), what is spent and remains by basic composition, and the ledger of every release charged to the dataset.
//	@Tags		budgets
//	@Produce	json
//	@Param		name	path		string	true	"dataset name"
//	@Success	200		{object}	DatasetView
//	@Failure	404		{object}	Problem
//	@Security	bearer
//	@Router		/v1/datasets/{name} [get]
func (h *handler) getDataset(w http.ResponseWriter, r *http.Request) error {
	d, err := h.svc.GetDataset(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, datasetView(d))
	return nil
}

// ChargeRequest charges a release made outside pwsd (e.g. by the Beam
// pipeline, beam/cmd/pwsd-beam) to a dataset's budget.
type ChargeRequest struct {
	Epsilon     *float64 `json:"epsilon" validate:"required" example:"0.5"`
	Delta       *float64 `json:"delta" validate:"required" minimum:"0" example:"0.000001"`
	Description string   `json:"description,omitempty" validate:"max=200" example:"pwsd-beam run 2026-11-23"`
}

// ChargeView is a recorded external charge; Ref is its ref in the ledger.
type ChargeView struct {
	Ref         string    `json:"ref"`
	Dataset     string    `json:"dataset"`
	Epsilon     float64   `json:"epsilon"`
	Delta       float64   `json:"delta"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// createCharge charges an external release to a dataset.
//
//	@Summary		Charge a release made outside pwsd to a dataset's budget
//	@ID			createDatasetCharge
//	@Description	For releases computed elsewhere with pwsd's tables (the Beam pipeline charges here before it writes any output). Recorded in the ledger with kind "external"; a charge that would overspend is refused with 409 and changes nothing.
//	@Tags			budgets
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string			true	"dataset name"
//	@Param			body	body		ChargeRequest	true	"the release's (epsilon, delta)"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and charges nothing (see README, Idempotency)"
//	@Success		201		{object}	ChargeView
//	@Failure		400,404,409,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/datasets/{name}/charges [post]
func (h *handler) createCharge(w http.ResponseWriter, r *http.Request) error {
	var req ChargeRequest
	if err := h.decodeValid(r, &req); err != nil {
		return err
	}
	c, err := h.svc.ChargeDataset(r.Context(), chi.URLParam(r, "name"), *req.Epsilon, *req.Delta, req.Description)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ChargeView{Ref: c.ID, Dataset: c.Dataset, Epsilon: c.Epsilon, Delta: c.Delta, Description: c.Description, CreatedAt: c.CreatedAt})
	return nil
}
