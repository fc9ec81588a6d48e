package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/store"
)

// Dataset is a privacy budget with what has been spent of it and the
// releases charged to it.
type Dataset struct {
	Name          string
	EpsilonBudget float64
	DeltaBudget   float64
	// Accounting is how releases compose: store.AccountingPLD or
	// store.AccountingBasic.
	Accounting string
	// SpentEpsilon and SpentDelta are the sums of the charges (basic
	// composition), whatever Accounting says.
	SpentEpsilon float64
	SpentDelta   float64
	// ComposedEpsilon is the epsilon spent at DeltaBudget under Accounting:
	// for PLD accounting the smaller of the composed PLD's epsilon and (when
	// SpentDelta fits) SpentEpsilon; for basic accounting SpentEpsilon. Set
	// by GetDataset and ListDatasets.
	ComposedEpsilon float64
	CreatedAt       time.Time
	Releases        []LedgerEntry
}

// LedgerEntry is one charge in a dataset's ledger: a release made by pwsd
// (Kind "sample", "stream", ...) or outside it ("external"), Ref naming it,
// the (epsilon, delta) it cost and the Mechanism it is composed as
// (accounting.MechanismGeneric or accounting.MechanismLaplace).
type LedgerEntry struct {
	Kind      string
	Ref       string
	Epsilon   float64
	Delta     float64
	CreatedAt time.Time
	Mechanism string
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

// Create creates a dataset with a budget and PLD accounting (see
// CreateDatasetAccounting).
func (s *Datasets) Create(ctx context.Context, name string, eps, delta float64) (Dataset, error) {
	return s.CreateAccounting(ctx, name, eps, delta, "")
}

// CreateAccounting creates a dataset with a budget: epsilon_budget a
// normal float64 in (0, maxEpsilonBudget] (no subnormal such as 5e-324),
// 0 <= delta_budget <= 1 (-0 is taken as 0), and accounting "pld" or
// "basic". Empty accounting is "pld" when delta_budget < 1, else "basic": a
// delta budget of 1 promises nothing under exact composition (every
// release is (0, 1)-DP, so PLD accounting would admit anything), and PLD
// accounting with it is refused.
func (s *Datasets) CreateAccounting(ctx context.Context, name string, eps, delta float64, acct string) (Dataset, error) {
	if err := inScope(ctx, "name", name); err != nil {
		return Dataset{}, err
	}
	var es checks.Errors
	switch {
	case acct == "" && delta >= 1:
		acct = store.AccountingBasic
	case acct == "":
		acct = store.AccountingPLD
	case acct == store.AccountingPLD && delta >= 1:
		es.Add("accounting", "must be \"basic\" with a delta_budget of 1: under composition by privacy loss distributions a delta of 1 admits any release")
	case acct != store.AccountingPLD && acct != store.AccountingBasic:
		es.Add("accounting", fmt.Sprintf("must be %q or %q", store.AccountingPLD, store.AccountingBasic))
	}
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
	d := store.Dataset{Name: name, EpsilonBudget: eps, DeltaBudget: delta, CreatedAt: time.Now().UTC(), Accounting: acct}
	if err := s.store.CreateDataset(ctx, d); err != nil {
		return Dataset{}, storeErr(err, "creating dataset")
	}
	return datasetOf(d, nil), nil
}

// Get returns a dataset and its ledger, with ComposedEpsilon set.
func (s *Datasets) Get(ctx context.Context, name string) (Dataset, error) {
	d, rel, err := s.store.GetDataset(ctx, name)
	if err != nil {
		return Dataset{}, storeErr(err, "reading dataset")
	}
	out := datasetOf(d, rel)
	if err := s.compose(ctx, &out); err != nil {
		return Dataset{}, err
	}
	return out, nil
}

// maxAdmits caps DatasetAdmits: counting further is costly (the composed
// PLD grows with every release) and says nothing a planner needs.
const maxAdmits = 10000

// Admits returns how many more generic (eps, delta) releases the
// dataset's budget admits under its accounting, up to maxAdmits (which
// then means at least that many): eps a finite number in (0, 50], 0 <=
// delta < 1. A release is admitted when basic composition fits or the
// composed PLD does (the store's rule), so the count is the larger of both
// counts.
func (s *Datasets) Admits(ctx context.Context, name string, eps, delta float64) (int, error) {
	var es checks.Errors
	if !(eps > 0 && eps <= 50) {
		es.Add("epsilon", "must be a number greater than 0 and at most 50")
	}
	if !(delta >= 0 && delta < 1) {
		es.Add("delta", "must be at least 0 and less than 1")
	}
	if err := es.Err(); err != nil {
		return 0, err
	}
	d, _, err := s.store.GetDataset(ctx, name)
	if err != nil {
		return 0, notFoundAs(storeErr(err, "reading dataset"), "dataset", name)
	}
	basic := 0
	for basic < maxAdmits && store.Fits(store.Dataset{EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget,
		SpentEpsilon: d.SpentEpsilon + float64(basic)*eps, SpentDelta: d.SpentDelta + float64(basic)*delta}, eps, delta) {
		basic++
	}
	if d.Accounting != store.AccountingPLD {
		return basic, nil
	}
	pld, err := s.store.ComposedLedger(ctx, name)
	if err != nil {
		return 0, storeErr(err, "composing the ledger")
	}
	q, err := accounting.Generic(pld.Grid(), eps, delta)
	if err != nil {
		return 0, err
	}
	n, err := pld.Admits(q, d.EpsilonBudget*(1+accounting.BudgetSlack), d.DeltaBudget, maxAdmits)
	if err != nil {
		return 0, fmt.Errorf("counting admitted releases: %w", err)
	}
	return max(n, basic), nil
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

// Charge charges an external release of (eps, delta) to a dataset:
// eps a finite normal float64 > 0 (no subnormal such as 5e-324), 0 <= delta
// < 1 (-0 is taken as 0). An overspend returns a *BudgetError (matching
// ErrBudget) and an unknown dataset a *NotFoundError; either way nothing is
// recorded. The charge is recorded
// in the ledger as kind "external" with a fresh id as its ref.
func (s *Datasets) Charge(ctx context.Context, dataset string, eps, delta float64, description string) (Charge, error) {
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
	c := &store.Charge{Dataset: dataset, Kind: "external", Ref: rec.ID, Epsilon: eps, Delta: delta, Mechanism: accounting.MechanismGeneric}
	if err := s.store.CreateState(ctx, rec, c); err != nil {
		// An overspend names the budget's numbers, as a release's does.
		return Charge{}, notFoundAs(s.budgetError(ctx, err, "charging dataset", dataset, eps, delta), "dataset", dataset)
	}
	return Charge{ID: rec.ID, Dataset: dataset, Epsilon: eps, Delta: delta, Description: description, CreatedAt: now}, nil
}

// compose sets d.ComposedEpsilon for a PLD dataset from its composed ledger
// (the store's cache extended by the releases recorded since).
func (s *Datasets) compose(ctx context.Context, d *Dataset) error {
	if d.Accounting != store.AccountingPLD {
		return nil
	}
	pld, err := s.store.ComposedLedger(ctx, d.Name)
	if err != nil {
		return storeErr(err, "composing the ledger")
	}
	d.ComposedEpsilon = accounting.Spent(pld, d.SpentEpsilon, d.SpentDelta, d.DeltaBudget)
	return nil
}

// datasetOf is the service view of a stored dataset and its ledger.
func datasetOf(d store.Dataset, rel []store.Release) Dataset {
	acct := d.Accounting
	if acct == "" {
		acct = store.AccountingBasic
	}
	return Dataset{Name: d.Name, EpsilonBudget: d.EpsilonBudget, DeltaBudget: d.DeltaBudget, Accounting: acct,
		SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta, ComposedEpsilon: d.SpentEpsilon, CreatedAt: d.CreatedAt, Releases: ledgerOf(rel)}
}

// BudgetError is a release refused because it would overspend its
// dataset's budget; it says what was asked, what is spent and what remains.
// It matches ErrBudget with errors.Is.
type BudgetError struct {
	Dataset                          string
	RequestedEpsilon, RequestedDelta float64
	BudgetEpsilon, BudgetDelta       float64
	SpentEpsilon, SpentDelta         float64
	// Composed is true when SpentEpsilon is the dataset's ledger composed
	// by PLD at BudgetDelta, below BasicEpsilon, the sum of its epsilons
	// (SpentDelta stays the sum of deltas).
	Composed     bool
	BasicEpsilon float64
}

// remainingEpsilon is what is left of the epsilon budget.
func (e *BudgetError) remainingEpsilon() float64 { return max(0, e.BudgetEpsilon-e.SpentEpsilon) }

// remainingDelta is what is left of the delta budget.
func (e *BudgetError) remainingDelta() float64 { return max(0, e.BudgetDelta-e.SpentDelta) }

// Error says what was asked, spent and remains; it names the dataset
// (the client's own name) and no request data.
func (e *BudgetError) Error() string {
	if e.Composed {
		return fmt.Sprintf("the release asks epsilon %g and delta %g but dataset %q has spent epsilon %.6g and delta %g of its budget (%g, %g): remaining epsilon %.6g and delta %g (epsilon composed by privacy loss distributions at delta %g, against %g by adding epsilons; the release composed with the ledger would exceed epsilon %g)",
			e.RequestedEpsilon, e.RequestedDelta, e.Dataset, e.SpentEpsilon, e.SpentDelta, e.BudgetEpsilon, e.BudgetDelta, e.remainingEpsilon(), e.remainingDelta(),
			e.BudgetDelta, e.BasicEpsilon, e.BudgetEpsilon)
	}
	return fmt.Sprintf("the release asks epsilon %g and delta %g but dataset %q has spent epsilon %g and delta %g of its budget (%g, %g): remaining epsilon %g and delta %g",
		e.RequestedEpsilon, e.RequestedDelta, e.Dataset, e.SpentEpsilon, e.SpentDelta, e.BudgetEpsilon, e.BudgetDelta, e.remainingEpsilon(), e.remainingDelta())
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// checkBudget reports, without charging, whether (eps, delta) fits
// dataset's remaining budget: nil, a *BudgetError, or ErrNotFound for an
// unknown dataset. The charge itself stays atomic in the store; this only
// refuses early what the store would refuse.
func (s *Datasets) checkBudget(ctx context.Context, dataset string, eps, delta float64) error {
	d, _, err := s.store.GetDataset(ctx, dataset)
	if err != nil {
		return notFoundAs(storeErr(err, fmt.Sprintf("dataset %q", dataset)), "dataset", dataset)
	}
	c := &store.Charge{Dataset: dataset, Epsilon: eps, Delta: delta, Mechanism: accounting.MechanismGeneric}
	err = store.Admit(d, c, func() (*accounting.PLD, error) { return s.store.ComposedLedger(ctx, dataset) })
	if errors.Is(err, store.ErrBudget) {
		return s.budgetErrorOfComposed(ctx, d, eps, delta)
	}
	if err != nil {
		return storeErr(err, "checking the budget")
	}
	return nil
}

// budgetError turns a store.ErrBudget for a charge of (eps, delta) to
// dataset into a *BudgetError with the dataset's current spend; other
// errors pass through storeErr.
func (s *Datasets) budgetError(ctx context.Context, err error, what, dataset string, eps, delta float64) error {
	if !errors.Is(err, store.ErrBudget) {
		return storeErr(err, what)
	}
	d, _, gerr := s.store.GetDataset(ctx, dataset)
	if gerr != nil {
		return ErrBudget
	}
	return s.budgetErrorOfComposed(ctx, d, eps, delta)
}

// budgetErrorOfComposed is the *BudgetError of a refused charge of (eps,
// delta) to d, with what d has spent under its accounting.
func (s *Datasets) budgetErrorOfComposed(ctx context.Context, d store.Dataset, eps, delta float64) *BudgetError {
	e := &BudgetError{Dataset: d.Name, RequestedEpsilon: eps, RequestedDelta: delta, BudgetEpsilon: d.EpsilonBudget,
		BudgetDelta: d.DeltaBudget, SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta}
	if d.Accounting == store.AccountingPLD {
		if pld, err := s.store.ComposedLedger(ctx, d.Name); err == nil {
			if spent := accounting.Spent(pld, d.SpentEpsilon, d.SpentDelta, d.DeltaBudget); spent < d.SpentEpsilon {
				e.Composed, e.BasicEpsilon, e.SpentEpsilon = true, d.SpentEpsilon, spent
			}
		}
	}
	return e
}

// List lists datasets with their ledgers, oldest first.
func (s *Datasets) List(ctx context.Context, p Page) ([]Dataset, string, error) {
	type row struct {
		d   store.Dataset
		rel []store.Release
	}
	rows, next, err := pageOf(p, cursorDatasets, func(c store.Cursor, n int) ([]row, error) {
		ds, rel, err := s.store.ListDatasets(ctx, c, n)
		out := make([]row, len(ds))
		for i := range ds {
			out[i] = row{ds[i], rel[i]}
		}
		return out, err
	}, func(r row) (time.Time, string) { return r.d.CreatedAt, r.d.Name })
	if err != nil {
		return nil, "", storeErr(err, "listing datasets")
	}
	out := make([]Dataset, len(rows))
	for i, r := range rows {
		out[i] = datasetOf(r.d, r.rel)
		if err := s.compose(ctx, &out[i]); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}
