package service

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/store"
)

// Dataset is a privacy budget with what has been spent of it and the
// releases charged to it by basic composition.
type Dataset struct {
	Name          string
	EpsilonBudget float64
	DeltaBudget   float64
	SpentEpsilon  float64
	SpentDelta    float64
	CreatedAt     time.Time
	Releases      []LedgerEntry
}

// LedgerEntry is one charge in a dataset's ledger: a release made by pwsd
// (Kind "sample", "stream", ...) or outside it ("external"), Ref naming it,
// and the (epsilon, delta) it cost.
type LedgerEntry struct {
	Kind      string
	Ref       string
	Epsilon   float64
	Delta     float64
	CreatedAt time.Time
}

// ledgerOf is the service view of a stored ledger.
func ledgerOf(rel []store.Release) []LedgerEntry {
	out := make([]LedgerEntry, len(rel))
	for i, r := range rel {
		out[i] = LedgerEntry(r)
	}
	return out
}

// maxEpsilonBudget caps a dataset's epsilon budget: beyond it no guarantee
// is meaningful (e^epsilon overflows float64 long before), and sums of
// charges stay far from float64 overflow.
const maxEpsilonBudget = 1e6

// CreateDataset creates a dataset with a budget: epsilon_budget a normal
// float64 in (0, maxEpsilonBudget] (no subnormal such as 5e-324) and
// 0 <= delta_budget <= 1 (-0 is taken as 0).
func (s *Service) CreateDataset(ctx context.Context, name string, eps, delta float64) (Dataset, error) {
	if err := inScope(ctx, "name", name); err != nil {
		return Dataset{}, err
	}
	var es checks.Errors
	if err := checks.NormalPositive("epsilon_budget", eps); err != nil {
		es.AddErr("epsilon_budget", err)
	} else if eps > maxEpsilonBudget {
		es.Add("epsilon_budget", fmt.Sprintf("must be at most %g", float64(maxEpsilonBudget)))
	}
	delta, err := checks.UnitDelta("delta_budget", delta)
	es.AddErr("delta_budget", err)
	if err := es.Err(); err != nil {
		return Dataset{}, err
	}
	d := store.Dataset{Name: name, EpsilonBudget: eps, DeltaBudget: delta, CreatedAt: time.Now().UTC()}
	if err := s.store.CreateDataset(ctx, d); err != nil {
		return Dataset{}, storeErr(err, "creating dataset")
	}
	return Dataset{Name: name, EpsilonBudget: eps, DeltaBudget: delta, CreatedAt: d.CreatedAt}, nil
}

// GetDataset returns a dataset and its ledger.
func (s *Service) GetDataset(ctx context.Context, name string) (Dataset, error) {
	d, rel, err := s.store.GetDataset(ctx, name)
	if err != nil {
		return Dataset{}, storeErr(err, "reading dataset")
	}
	return Dataset{Name: d.Name, EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget,
		SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta, CreatedAt: d.CreatedAt, Releases: ledgerOf(rel)}, nil
}

// Charge is a release made outside pwsd (e.g. by the Beam pipeline) and
// charged to a dataset's budget by basic composition.
type Charge struct {
	ID          string
	Dataset     string
	Epsilon     float64
	Delta       float64
	Description string
	CreatedAt   time.Time
}

// chargeConfig is the stored JSON of an external charge.
type chargeConfig struct {
	Epsilon     float64 `json:"epsilon"`
	Delta       float64 `json:"delta"`
	Description string  `json:"description,omitempty"`
}

// ChargeDataset charges an external release of (eps, delta) to a dataset:
// eps a finite normal float64 > 0 (no subnormal such as 5e-324), 0 <= delta
// < 1 (-0 is taken as 0). An overspend returns a *BudgetError (matching
// ErrBudget) and an unknown dataset a *NotFoundError; either way nothing is
// recorded. The charge is recorded
// in the ledger as kind "external" with a fresh id as its ref.
func (s *Service) ChargeDataset(ctx context.Context, dataset string, eps, delta float64, description string) (Charge, error) {
	if err := inScope(ctx, "name", dataset); err != nil {
		return Charge{}, err
	}
	var es checks.Errors
	es.AddErr("epsilon", checks.NormalPositive("epsilon", eps))
	delta, err := checks.UnitDelta("delta", delta)
	if err != nil || delta == 1 {
		es.Add("delta", "must be at least 0 and less than 1")
	}
	es.AddErr("description", checks.PlainText("description", description))
	if err := es.Err(); err != nil {
		return Charge{}, err
	}
	cfg, err := json.Marshal(chargeConfig{Epsilon: eps, Delta: delta, Description: description})
	if err != nil {
		return Charge{}, fmt.Errorf("encoding charge: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: "charge", ID: newID(), Dataset: dataset, Config: cfg, State: []byte{}, CreatedAt: now, UpdatedAt: now}
	c := &store.Charge{Dataset: dataset, Kind: "external", Ref: rec.ID, Epsilon: eps, Delta: delta}
	if err := s.store.CreateState(ctx, rec, c); err != nil {
		// An overspend names the budget's numbers, as a release's does.
		return Charge{}, notFoundAs(s.budgetError(ctx, err, "charging dataset", dataset, eps, delta), "dataset", dataset)
	}
	return Charge{ID: rec.ID, Dataset: dataset, Epsilon: eps, Delta: delta, Description: description, CreatedAt: now}, nil
}
