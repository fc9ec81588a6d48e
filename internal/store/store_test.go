package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
	"github.com/pwsd/pwsd/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// implementations returns a fresh store of each kind; the PostgreSQL one runs
// against a real server in a new database.
func implementations(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return store.NewMemory() },
		"postgres": func(t *testing.T) store.Store {
			u := pgtest.NewDatabase(t)
			p, err := store.OpenPostgres(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return p
		},
	}
}

// TestStoreBehaviour runs the one behavioural suite (package storetest)
// against both implementations.
func TestStoreBehaviour(t *testing.T) {
	t.Parallel()
	for name, open := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, open)
		})
	}
}
