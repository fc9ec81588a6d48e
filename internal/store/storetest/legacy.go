package storetest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// DatabaseAt creates a fresh test database migrated only up to schema
// version and opens a connection to it, closed when the test ends: the
// set-up of tests that write rows as an older release did and then check
// what the later migrations and rewrites make of them.
func DatabaseAt(t testing.TB, version uint) (url string, conn *pgx.Conn) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	if err := store.MigrateTo(url, version); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return url, conn
}
