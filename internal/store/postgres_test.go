package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
	"github.com/pwsd/pwsd/migrations"
)

// openPostgres opens the PostgreSQL store on a fresh database and a plain
// connection to the same database, both closed when the test ends.
func openPostgres(t *testing.T) (*store.Postgres, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	p, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return p, conn
}

// TestPostgresReady: Ready holds at migrations.Head and clean, and refuses
// a schema that is dirty (a migration failed half way), behind the code
// (an older release's schema) or ahead of it (a newer release migrated the
// database); /readyz answers 503 on each.
func TestPostgresReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, conn := openPostgres(t)
	if err := p.Ready(ctx); err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	head := int64(migrations.Head())
	for _, c := range []struct {
		name    string
		version int64
		dirty   bool
		ready   bool
	}{
		{"dirty", head, true, false},
		{"behind", head - 1, false, false},
		{"ahead", head + 1, false, false},
		{"at head again", head, false, true},
	} {
		if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET version = $1, dirty = $2`, c.version, c.dirty); err != nil {
			t.Fatal(err)
		}
		if err := p.Ready(ctx); (err == nil) != c.ready {
			t.Errorf("%s (version %d, dirty %v): Ready() = %v, want ready %v", c.name, c.version, c.dirty, err, c.ready)
		}
	}
}

// TestPostgresPoolMinConns: the pool opens DefaultPoolMinConns connections
// by itself (a restarted pwsd's first release finds them open), and a URL's
// own pool_min_conns (above the default) is obeyed, the migrations running
// with it in the URL.
func TestPostgresPoolMinConns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		param string
		want  int
	}{{"default", "", store.DefaultPoolMinConns}, {"pool_min_conns=6", "&pool_min_conns=6&pool_max_conns=6", 6}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabase(t)
			p, err := store.OpenPostgres(ctx, url+c.param)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			// The pool's connections to this database, besides conn; the
			// pool opens them in the background, so wait (at most a minute).
			// (Ping may open one of its own beside them.)
			var n int
			pollRow(t, conn, `SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()`, func() bool { return n >= c.want }, &n)
			if n < c.want {
				t.Fatalf("the pool holds %d connections, want at least %d", n, c.want)
			}
		})
	}
}

// TestPostgresConnectionsWarmed: each connection the pool opens runs a
// sample's write before any request (PostgreSQL counts the rows inserted,
// committed or not) and writes nothing (its transaction is rolled back).
func TestPostgresConnectionsWarmed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, conn := openPostgres(t)
	// Server processes report their counts within about ten seconds once
	// idle.
	var ins, chunkIns int64
	pollRow(t, conn, `SELECT COALESCE(sum(n_tup_ins) FILTER (WHERE relname = 'samples'), 0), COALESCE(sum(n_tup_ins) FILTER (WHERE relname = 'sample_chunks'), 0) FROM pg_stat_user_tables`,
		func() bool { return ins >= store.DefaultPoolMinConns && chunkIns >= store.DefaultPoolMinConns }, &ins, &chunkIns)
	if ins < store.DefaultPoolMinConns || chunkIns < store.DefaultPoolMinConns {
		t.Fatalf("the pool's %d connections inserted %d sample rows and %d chunk rows, want one each per connection", store.DefaultPoolMinConns, ins, chunkIns)
	}
	var samples, chunks int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM samples), (SELECT count(*) FROM sample_chunks)`).Scan(&samples, &chunks); err != nil {
		t.Fatal(err)
	}
	if samples != 0 || chunks != 0 {
		t.Fatalf("the warm-ups left %d samples and %d chunks behind", samples, chunks)
	}
}

// pollRow scans query's row into dest until done reports true or a minute
// has passed: what PostgreSQL does in the background (the connections a
// pool opens, the counts a server process reports) is waited for, not
// timed.
func pollRow(t *testing.T, conn *pgx.Conn, query string, done func() bool, dest ...any) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if err := conn.QueryRow(context.Background(), query).Scan(dest...); err != nil {
			t.Fatal(err)
		}
		if done() || time.Now().After(deadline) {
			return
		}
	}
}

// TestPostgresClosedIsUnavailable: every call on a closed store fails with
// an error IsUnavailable recognises (the API answers 503, not 500).
func TestPostgresClosedIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := openPostgres(t)
	p.Close()
	for name, call := range map[string]func() error{
		"Ping":  func() error { return p.Ping(ctx) },
		"Ready": func() error { return p.Ready(ctx) },
		"GetSample": func() error {
			_, err := p.GetSample(ctx, "s")
			return err
		},
		"CreateDataset": func() error { return p.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1}) },
		"PutTable":      func() error { return p.PutTable(ctx, "k", []byte("v")) },
		"PurgeExpired": func() error {
			_, err := p.PurgeExpired(ctx, time.Now())
			return err
		},
	} {
		if err := call(); !store.IsUnavailable(err) {
			t.Errorf("%s on a closed store: %v, want an unavailable error", name, err)
		}
	}
}

// TestPostgresSampleChunksGo: deleting or purging a sample deletes its
// element chunks too (ON DELETE CASCADE): no element of a deleted sample
// stays on disk.
func TestPostgresSampleChunksGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, conn := openPostgres(t)
	els := make([]store.Element, 70_000) // two chunks
	for i := range els {
		els[i] = store.Element{Key: strings.Repeat("k", i%7), Value: float64(i)}
	}
	now := time.Now().UTC()
	for _, s := range []*store.Sample{
		{ID: "deleted", CreatedAt: now, Header: []byte(`{}`), Elements: els},
		{ID: "purged", CreatedAt: now, Header: []byte(`{}`), Elements: els, ExpiresAt: now.Add(time.Minute)},
		{ID: "kept", CreatedAt: now, Header: []byte(`{}`), Elements: els[:1]},
	} {
		if err := p.CreateSample(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	chunks := func() map[string]int {
		rows, _ := conn.Query(ctx, `SELECT sample_id, count(*) FROM sample_chunks GROUP BY sample_id`)
		n := map[string]int{}
		for rows.Next() {
			var id string
			var c int
			if err := rows.Scan(&id, &c); err != nil {
				t.Fatal(err)
			}
			n[id] = c
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := chunks(); got["deleted"] != 2 || got["purged"] != 2 || got["kept"] != 1 {
		t.Fatalf("chunks stored: %v, want 2, 2 and 1", got)
	}
	if err := p.DeleteSample(ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.PurgeExpired(ctx, now.Add(time.Hour)); err != nil || n.Samples != 1 {
		t.Fatalf("purge: %+v %v", n, err)
	}
	if got := chunks(); len(got) != 1 || got["kept"] != 1 {
		t.Fatalf("chunks left: %v, want only the kept sample's", got)
	}
}

// TestPostgresTableCacheUncompressed: from migration 8 on, table_cache
// values are stored uncompressed (storage EXTERNAL): a compressible table
// of 1 MiB is stored whole, where the default would have compressed it.
func TestPostgresTableCacheUncompressed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, conn := openPostgres(t)
	if err := p.PutTable(ctx, "zeros", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	var size int64
	var method string
	if err := conn.QueryRow(ctx, `SELECT pg_column_size(data), coalesce(pg_column_compression(data)::text, 'none') FROM table_cache`).Scan(&size, &method); err != nil {
		t.Fatal(err)
	}
	if size < 1<<20 || method != "none" {
		t.Fatalf("a table of 1 MiB of zeros is stored in %d bytes, compression %s: want it whole", size, method)
	}
}
