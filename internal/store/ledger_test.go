package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
	"github.com/pwsd/pwsd/internal/store/storetest"
)

// TestPLDChargesAcrossInstances: 100 concurrent charges of (0.25, 1e-8)
// from 3 store instances (3 servers' caches) on one PostgreSQL database,
// against a PLD budget (5, 1e-5), admit exactly the 24 that optimal
// composition allows (basic composition: 20); the others are refused and
// write nothing.
func TestPLDChargesAcrossInstances(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	var stores []*store.Postgres
	for range 3 {
		pg, err := store.OpenPostgres(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pg.Close)
		stores = append(stores, pg)
	}
	if err := stores[0].CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 5, DeltaBudget: 1e-5, Accounting: store.AccountingPLD}); err != nil {
		t.Fatal(err)
	}
	// Warm two caches with an empty ledger, so that they must catch up.
	for _, pg := range stores[:2] {
		if _, err := pg.ComposedLedger(ctx, "d"); err != nil {
			t.Fatal(err)
		}
	}
	var tally storetest.Tally
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			tally.Add(t, stores[i%3].CreateSample(ctx, &store.Sample{ID: id, Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)},
				&store.Charge{Dataset: "d", Kind: "sample", Ref: id, Epsilon: 0.25, Delta: 1e-8, Mechanism: "generic"}))
		})
	}
	wg.Wait()
	if ok, refused := tally.Admitted.Load(), tally.Refused.Load(); ok != 24 || refused != 76 {
		t.Fatalf("%d admitted, %d refused; want 24 and 76", ok, refused)
	}
	for i, pg := range stores {
		_, rel, err := pg.GetDataset(ctx, "d")
		if err != nil || len(rel) != 24 {
			t.Fatalf("instance %d: %d releases (%v), want 24", i, len(rel), err)
		}
		p, err := pg.ComposedLedger(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		if eps := p.Epsilon(1e-5); eps > 5 || eps < 4.5 {
			t.Errorf("instance %d: composed epsilon %g, want in [4.5, 5]", i, eps)
		}
	}
}

// TestMigration7Accounting: a dataset and releases written before
// migration 7 keep basic accounting and read as generic charges, so a
// charge basic composition refuses is still refused (PLD would admit it);
// the down migration drops the columns and keeps every row.
func TestMigration7Accounting(t *testing.T) {
	t.Parallel()
	url, conn := storetest.DatabaseAt(t, 6)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `INSERT INTO datasets (name, epsilon_budget, delta_budget, spent_epsilon, spent_delta) VALUES ('old', 5, 1e-5, 5, 5e-8)`); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := conn.Exec(ctx, `INSERT INTO releases (dataset, kind, ref, epsilon, delta) VALUES ('old', 'external', $1, 0.1, 1e-9)`, fmt.Sprint("r", i)); err != nil {
			t.Fatal(err)
		}
	}
	pg, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	d, rel, err := pg.GetDataset(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if d.Accounting != store.AccountingBasic || len(rel) != 50 || rel[0].Mechanism != "generic" || d.SpentEpsilon != 5 {
		t.Fatalf("migrated dataset: accounting %q, %d releases, mechanism %q, spent %g", d.Accounting, len(rel), rel[0].Mechanism, d.SpentEpsilon)
	}
	err = pg.CreateSample(ctx, &store.Sample{ID: "x", Dataset: "old", CreatedAt: time.Now(), Header: []byte(`{}`)},
		&store.Charge{Dataset: "old", Kind: "sample", Ref: "x", Epsilon: 0.1, Delta: 1e-9, Mechanism: "generic"})
	if !errors.Is(err, store.ErrBudget) {
		t.Fatalf("the 51st release of a basic budget: %v, want ErrBudget", err)
	}
	pg.Close()
	if err := store.MigrateTo(url, 6); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM releases WHERE dataset = 'old'`).Scan(&n); err != nil || n != 50 {
		t.Fatalf("after the down migration: %d releases (%v), want 50", n, err)
	}
}
