package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// BenchmarkPLDChargeAfter1000 measures one charge of (0.1, 1e-9) to a PLD
// dataset holding 1000 earlier ones (budget (25, 1e-5): basic composition
// is long exhausted, so every charge composes the cached ledger with the
// new release; the cache already holds the 1000). Run with a bounded count,
// the budget admits a few hundred more: go test -run - -bench PLDCharge
// -benchtime 50x ./internal/store/
func BenchmarkPLDChargeAfter1000(b *testing.B) {
	for _, mech := range []string{"generic"} {
		b.Run(mech, func(b *testing.B) {
			ctx := context.Background()
			s := store.NewMemory()
			if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 25, DeltaBudget: 1e-5, Accounting: store.AccountingPLD}); err != nil {
				b.Fatal(err)
			}
			delta := 1e-9
			if mech == "laplace" {
				delta = 0
			}
			charge := func(i int) error {
				id := fmt.Sprint("s", i)
				return s.CreateSample(ctx, &store.Sample{ID: id, Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)},
					&store.Charge{Dataset: "d", Kind: "sample", Ref: id, Epsilon: 0.1, Delta: delta, Mechanism: mech})
			}
			for i := range 1000 {
				if err := charge(i); err != nil {
					b.Fatal(err)
				}
			}
			p, err := s.ComposedLedger(ctx, "d")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(p.Len()), "grid-points")
			b.ResetTimer()
			for i := range b.N {
				if err := charge(1000 + i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
