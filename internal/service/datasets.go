package service

import (
	"context"
	"math"
	"time"

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
	Releases      []store.Release
}

// MaxEpsilonBudget caps a dataset's epsilon budget: beyond it no guarantee
// is meaningful (e^epsilon overflows float64 long before), and sums of
// charges stay far from float64 overflow.
const MaxEpsilonBudget = 1e6

// CreateDataset creates a dataset with a budget; epsilon_budget > 0 and
// 0 <= delta_budget <= 1.
func (s *Service) CreateDataset(ctx context.Context, name string, eps, delta float64) (Dataset, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return Dataset{}, fieldErr("epsilon_budget", "must be a finite number greater than 0")
	}
	if eps > MaxEpsilonBudget {
		return Dataset{}, fieldErr("epsilon_budget", "must be at most %g", float64(MaxEpsilonBudget))
	}
	if !(delta >= 0) || delta > 1 {
		return Dataset{}, fieldErr("delta_budget", "must be at least 0 and at most 1")
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
		SpentEpsilon: d.SpentEpsilon, SpentDelta: d.SpentDelta, CreatedAt: d.CreatedAt, Releases: rel}, nil
}
