package service

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/store"
)

// fieldsOf lists the fields err names (nil when it is no field error).
func fieldsOf(err error) []string {
	fs, _ := checks.Fields(err)
	var out []string
	for _, f := range fs {
		out = append(out, f.Field)
	}
	return out
}

// TestCreateDataset: a budget is a normal epsilon in (0, 1e6] and a delta
// in [0, 1] (-0 stored as +0); every bad value is named, all at once; a
// second dataset of the same name is ErrExists and leaves the first as it
// was; a refused dataset is not stored (GetDataset: ErrNotFound).
func TestCreateDataset(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			name       string
			eps, delta float64
			fields     []string
		}{
			{"fits", 1, 1e-5, nil},
			{"largest epsilon", maxEpsilonBudget, 1, nil},
			{"delta zero", 0.5, 0, nil},
			{"negative zero delta", 0.5, math.Copysign(0, -1), nil},
			{"zero epsilon", 0, 1e-5, []string{"epsilon_budget"}},
			{"subnormal epsilon", 5e-324, 1e-5, []string{"epsilon_budget"}},
			{"epsilon above the cap", 2 * maxEpsilonBudget, 0, []string{"epsilon_budget"}},
			{"infinite epsilon", math.Inf(1), 0, []string{"epsilon_budget"}},
			{"NaN delta", 1, math.NaN(), []string{"delta_budget"}},
			{"both bad", -1, 2, []string{"epsilon_budget", "delta_budget"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d, err := svc.Datasets.Create(ctx, tc.name, tc.eps, tc.delta)
				if got := fieldsOf(err); !slices.Equal(got, tc.fields) {
					t.Fatalf("fields %v (%v), want %v", got, err, tc.fields)
				}
				_, gerr := svc.Datasets.Get(ctx, tc.name)
				if tc.fields != nil {
					if !errors.Is(gerr, ErrNotFound) {
						t.Fatalf("a refused dataset was stored: %v", gerr)
					}
					return
				}
				back, gerr := svc.Datasets.Get(ctx, tc.name)
				if gerr != nil || back.EpsilonBudget != tc.eps || back.DeltaBudget != tc.delta || math.Signbit(back.DeltaBudget) ||
					back.SpentEpsilon != 0 || back.SpentDelta != 0 || len(back.Releases) != 0 || d.Name != tc.name {
					t.Fatalf("stored %+v (%v), created %+v", back, gerr, d)
				}
			})
		}
		if _, err := svc.Datasets.Create(ctx, "fits", 7, 0); !errors.Is(err, ErrExists) {
			t.Fatalf("second dataset of one name: %v, want ErrExists", err)
		}
		if d, _ := svc.Datasets.Get(ctx, "fits"); d.EpsilonBudget != 1 {
			t.Fatalf("the refused duplicate changed the dataset: %+v", d)
		}
	})
}

// TestChargeDataset: an external charge is recorded in the ledger as kind
// "external" with the charge's id as ref; an overspend is a *BudgetError
// carrying the dataset's numbers (issue 27: it was a bare ErrBudget, so the
// 409 of POST /v1/datasets/{name}/charges said nothing of the remaining
// budget while a release's did), an unknown dataset a *NotFoundError naming
// it, and bad values are named; a refused charge changes nothing.
func TestChargeDataset(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			name        string
			dataset     string // "" is the case's own fresh dataset
			eps, delta  float64
			description string
			fields      []string
			budget      bool // a *BudgetError
			notFound    bool
		}{
			{name: "fits", eps: 0.25, delta: 1e-6, description: "beam run 7"},
			{name: "spends the rest exactly", eps: 0.5, delta: 9e-6},
			{name: "overspends epsilon", eps: 0.6, budget: true},
			{name: "overspends delta", eps: 0.1, delta: 1e-5, budget: true},
			{name: "unknown dataset", dataset: "nope", eps: 0.1, notFound: true},
			{name: "zero epsilon", eps: 0, fields: []string{"epsilon"}},
			{name: "subnormal epsilon", eps: 5e-324, fields: []string{"epsilon"}},
			{name: "delta one", eps: 0.1, delta: 1, fields: []string{"delta"}},
			{name: "negative delta", eps: 0.1, delta: -1e-9, fields: []string{"delta"}},
			{name: "NUL in description", eps: 0.1, description: "a\x00b", fields: []string{"description"}},
			{name: "all bad", eps: math.NaN(), delta: 2, description: "\n", fields: []string{"epsilon", "delta", "description"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				// Each case has its own dataset: budget (1, 1e-5), (0.5, 1e-6) spent,
				// by basic composition (TestPLDDataset covers the default).
				if _, err := svc.Datasets.CreateAccounting(ctx, tc.name, 1, 1e-5, "basic"); err != nil {
					t.Fatal(err)
				}
				if _, err := svc.Datasets.Charge(ctx, tc.name, 0.5, 1e-6, ""); err != nil {
					t.Fatal(err)
				}
				ds := tc.dataset
				if ds == "" {
					ds = tc.name
				}
				c, err := svc.Datasets.Charge(ctx, ds, tc.eps, tc.delta, tc.description)
				var be *BudgetError
				var nf *NotFoundError
				switch {
				case tc.fields != nil:
					if got := fieldsOf(err); !slices.Equal(got, tc.fields) {
						t.Fatalf("fields %v (%v), want %v", got, err, tc.fields)
					}
				case tc.budget:
					if !errors.As(err, &be) || !errors.Is(err, ErrBudget) {
						t.Fatalf("overspend: %v, want a *BudgetError", err)
					}
					want := BudgetError{Dataset: tc.name, RequestedEpsilon: tc.eps, RequestedDelta: tc.delta,
						BudgetEpsilon: 1, BudgetDelta: 1e-5, SpentEpsilon: 0.5, SpentDelta: 1e-6}
					if *be != want {
						t.Fatalf("budget error %+v, want %+v", *be, want)
					}
				case tc.notFound:
					if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) || nf.Kind != "dataset" || nf.Name != tc.dataset {
						t.Fatalf("unknown dataset: %v (%+v)", err, nf)
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
				}
				d, err := svc.Datasets.Get(ctx, tc.name)
				if err != nil {
					t.Fatal(err)
				}
				if tc.fields != nil || tc.budget || tc.notFound {
					if len(d.Releases) != 1 || d.SpentEpsilon != 0.5 || d.SpentDelta != 1e-6 {
						t.Fatalf("a refused charge changed the dataset: %+v", d)
					}
					return
				}
				last := d.Releases[len(d.Releases)-1]
				if len(d.Releases) != 2 || last.Kind != "external" || last.Ref != c.ID || last.Epsilon != tc.eps || last.Delta != tc.delta ||
					d.SpentEpsilon != 0.5+tc.eps || c.Dataset != tc.name || c.Description != tc.description {
					t.Fatalf("ledger %+v, spent (%g, %g), charge %+v", d.Releases, d.SpentEpsilon, d.SpentDelta, c)
				}
			})
		}
	})
}
