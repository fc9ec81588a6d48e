package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/storetest"
)

// TestMigration5Chunks: migration 0005 prefixes every sample chunk the
// previous release wrote with format byte 1 (after which GetSample decodes
// it), zeroes stream event counts and leaves counters' steps; its down
// migration restores the chunks byte for byte.
func TestMigration5Chunks(t *testing.T) {
	t.Parallel()
	url, conn := storetest.DatabaseAt(t, 4)
	ctx := context.Background()
	// One element as the previous release encoded it: key length 1, "k",
	// value 2.0, estimate 3.0 (little-endian float64 bits), no format byte.
	old := []byte{1, 'k', 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0x08, 0x40}
	now := time.Now().UTC()
	for _, q := range []string{
		`INSERT INTO samples (id, created_at, header, reported) VALUES ('s', $1, '{}', 1)`,
		`INSERT INTO states (kind, id, config, state, events, created_at, updated_at) VALUES ('stream', 'a', '{}', '\x00', 7, $1, $1)`,
		`INSERT INTO states (kind, id, config, state, events, created_at, updated_at) VALUES ('counter', 'b', '{}', '\x00', 7, $1, $1)`,
	} {
		if _, err := conn.Exec(ctx, q, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO sample_chunks (sample_id, seq, data) VALUES ('s', 0, $1)`, old); err != nil {
		t.Fatal(err)
	}
	if err := store.MigrateTo(url, 5); err != nil {
		t.Fatal(err)
	}
	var data []byte
	if err := conn.QueryRow(ctx, `SELECT data FROM sample_chunks WHERE sample_id = 's'`).Scan(&data); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, append([]byte{store.ChunkFormat}, old...)) {
		t.Errorf("migrated chunk % x", data)
	}
	var streamEvents, counterSteps int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT events FROM states WHERE kind = 'stream'), (SELECT events FROM states WHERE kind = 'counter')`).Scan(&streamEvents, &counterSteps); err != nil {
		t.Fatal(err)
	}
	if streamEvents != 0 || counterSteps != 7 {
		t.Errorf("stream events %d (want 0), counter steps %d (want 7)", streamEvents, counterSteps)
	}
	pg, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := pg.GetSample(ctx, "s")
	pg.Close()
	if err != nil || len(smp.Elements) != 1 || smp.Elements[0] != (store.Element{Key: "k", Value: 2, Estimate: 3}) {
		t.Fatalf("migrated sample: %+v %v", smp, err)
	}
	if err := store.MigrateTo(url, 4); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT data FROM sample_chunks WHERE sample_id = 's'`).Scan(&data); err != nil || !bytes.Equal(data, old) {
		t.Errorf("down migration left % x (%v)", data, err)
	}
}

// TestMigration6TableCacheDigest: migration 0006 re-keys the tables cached
// under text keys by the SHA-256 digest of the key, keeps the key beside
// it (GetTable finds each table again), and its down migration restores
// the text keys.
func TestMigration6TableCacheDigest(t *testing.T) {
	t.Parallel()
	url, conn := storetest.DatabaseAt(t, 5)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `INSERT INTO table_cache (key, data, size) VALUES ('k2|v|reporting', 'abc', 3)`); err != nil {
		t.Fatal(err)
	}
	pg, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := pg.GetTable(ctx, "k2|v|reporting")
	pg.Close()
	if err != nil || !ok || string(d) != "abc" {
		t.Fatalf("migrated table: %q %v %v", d, ok, err)
	}
	if err := store.MigrateTo(url, 5); err != nil {
		t.Fatal(err)
	}
	var data []byte
	if err := conn.QueryRow(ctx, `SELECT data FROM table_cache WHERE key = 'k2|v|reporting'`).Scan(&data); err != nil || string(data) != "abc" {
		t.Fatalf("down migration: %q %v", data, err)
	}
}
