package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/service"
)

// DatasetRequest creates a dataset with a privacy budget. Accounting is how
// its releases compose: "pld" (privacy loss distributions, the default
// when delta_budget < 1) or "basic" (adding epsilons and deltas; the
// default, and the only choice, when delta_budget is 1). docs/accounting.md.
type DatasetRequest struct {
	Name          string   `json:"name" validate:"required,dataset_name"`
	EpsilonBudget *float64 `json:"epsilon_budget" validate:"required"`
	DeltaBudget   *float64 `json:"delta_budget" validate:"required" minimum:"0" maximum:"1"`
	// Accounting is how releases compose: "pld" (privacy loss
	// distributions; the default when delta_budget < 1) or "basic" (adding
	// epsilons and deltas; the default, and the only choice, when
	// delta_budget is 1).
	Accounting string `json:"accounting,omitempty" enums:"pld,basic"`
}

// Spend is an (epsilon, delta) amount.
type Spend struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// ReleaseView is one charged release in a dataset's ledger; Mechanism is
// how it is composed: "generic" (the dominating pair of any (epsilon,
// delta)-DP release) or "laplace" (a pan-private stream's Laplace release).
type ReleaseView struct {
	Kind string `json:"kind" enums:"sample,stream,external"`
	Ref  string `json:"ref"`
	// Mechanism is how the release is composed: "generic" or "laplace".
	Mechanism string    `json:"mechanism" enums:"generic,laplace"`
	Epsilon   float64   `json:"epsilon"`
	Delta     float64   `json:"delta"`
	CreatedAt time.Time `json:"created_at"`
}

// AdmitsView answers GET /v1/datasets/{name}?epsilon=&delta=: how many more
// releases of (epsilon, delta) the budget admits under the dataset's
// accounting (at most 10000, which then means at least that many).
type AdmitsView struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Releases is how many more releases of (epsilon, delta) the budget
	// admits (10000 means at least 10000).
	Releases int `json:"releases"`
}

// DatasetView is a dataset's budget, spend and ledger. Spent is under the
// dataset's accounting: for "pld" its epsilon is the releases' composed
// epsilon at delta_budget and its delta the sum of their deltas (a
// release's delta always adds); for "basic" the sums. SpentBasic is always
// the sums (basic composition), for comparison.
type DatasetView struct {
	Name          string  `json:"name"`
	EpsilonBudget float64 `json:"epsilon_budget"`
	DeltaBudget   float64 `json:"delta_budget"`
	// Accounting is how the dataset's releases compose: "pld" or "basic".
	Accounting string `json:"accounting" enums:"pld,basic"`
	Spent      Spend  `json:"spent"`
	Remaining  Spend  `json:"remaining"`
	// SpentBasic is the sum of the releases' epsilons and deltas (basic
	// composition), whatever the accounting.
	SpentBasic Spend `json:"spent_basic"`
	// Admits is set when the request gives epsilon and delta: how many more
	// releases of that (epsilon, delta) the budget admits.
	Admits    *AdmitsView   `json:"admits,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	Releases  []ReleaseView `json:"releases"`
}

func datasetView(d service.Dataset) DatasetView {
	v := DatasetView{
		Name: d.Name, EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget, Accounting: d.Accounting, CreatedAt: d.CreatedAt,
		Spent:      Spend{Epsilon: d.ComposedEpsilon, Delta: d.SpentDelta},
		Remaining:  Spend{Epsilon: max(0, d.EpsilonBudget-d.ComposedEpsilon), Delta: max(0, d.DeltaBudget-d.SpentDelta)},
		SpentBasic: Spend{Epsilon: d.SpentEpsilon, Delta: d.SpentDelta},
		Releases:   []ReleaseView{},
	}
	for _, r := range d.Releases {
		v.Releases = append(v.Releases, ReleaseView{Kind: r.Kind, Ref: r.Ref, Mechanism: r.Mechanism, Epsilon: r.Epsilon, Delta: r.Delta, CreatedAt: r.CreatedAt})
	}
	return v
}

// createDataset creates a privacy budget.
//
//	@Summary		Create a dataset with a privacy budget
//	@ID			createDataset
//	@Description	Releases created with "dataset" are charged to it; a release that would overspend is refused with 409 and changes nothing. With accounting "pld" (the default when delta_budget < 1) a release fits when the ledger composed with it by privacy loss distributions spends at most epsilon_budget at delta_budget (or when the sums of epsilons and deltas fit); with "basic" when the sums fit (docs/accounting.md).
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
	d, err := h.svc.Datasets.CreateAccounting(r.Context(), req.Name, *req.EpsilonBudget, *req.DeltaBudget, req.Accounting)
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
//	@Description	The budget (epsilon_budget, delta_budget), what is spent and remains under the dataset's accounting and by basic composition, and the ledger of every release charged to the dataset. With epsilon and delta, also how many more releases of (epsilon, delta) the budget admits.
//	@Tags		budgets
//	@Produce	json
//	@Param		name	path		string	true	"dataset name"
//	@Param		epsilon	query		number	false	"with delta: count the further releases of this epsilon (0 < epsilon <= 50) the budget admits"
//	@Param		delta	query		number	false	"with epsilon: the delta (0 <= delta < 1) of those releases"
//	@Success	200		{object}	DatasetView
//	@Failure	400,404,422		{object}	Problem
//	@Security	bearer
//	@Router		/v1/datasets/{name} [get]
func (h *handler) getDataset(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	var eps, delta float64
	asked := q.has("epsilon") || q.has("delta")
	if asked {
		eps, _ = q.float("epsilon", true)
		delta, _ = q.float("delta", true)
	}
	if err := q.problem(); err != nil {
		return err
	}
	name := chi.URLParam(r, "name")
	var admits *AdmitsView
	if asked {
		n, err := h.svc.Datasets.Admits(r.Context(), name, eps, delta)
		if err != nil {
			return err
		}
		admits = &AdmitsView{Epsilon: eps, Delta: delta, Releases: n}
	}
	d, err := h.svc.Datasets.Get(r.Context(), name)
	if err != nil {
		return err
	}
	v := datasetView(d)
	v.Admits = admits
	writeJSON(w, http.StatusOK, v)
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
	c, err := h.svc.Datasets.Charge(r.Context(), chi.URLParam(r, "name"), *req.Epsilon, *req.Delta, req.Description)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, ChargeView{Ref: c.ID, Dataset: c.Dataset, Epsilon: c.Epsilon, Delta: c.Delta, Description: c.Description, CreatedAt: c.CreatedAt})
	return nil
}
