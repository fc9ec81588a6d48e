package store

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pwsd/pwsd/internal/accounting"
	"github.com/pwsd/pwsd/migrations"
)

// The PostgreSQL store's connection, migration and health, the SQL helpers
// the domains share, and PurgeExpired. Each domain's SQL is in its own
// postgres_<domain>.go (docs/store.md).

// Postgres is the PostgreSQL store (pgxpool). Tables, samples, state and the
// privacy ledger survive restarts and are shared by every pwsd replica.
type Postgres struct {
	pool *pgxpool.Pool
	// tableCacheBytes bounds table_cache (see PutTable).
	tableCacheBytes atomic.Int64
	// ledgers caches each dataset's composed ledger (bounded), keyed by
	// name with the id of the last release composed.
	ledgers *accounting.Cache
}

// Migrate applies every pending migration embedded in package migrations to
// the database at url (a postgres:// or postgresql:// URL).
func Migrate(url string) error {
	return runMigrations(url, "applying migrations", (*migrate.Migrate).Up)
}

// MigrateTo migrates the database at url up or down to schema version
// version. Tests of upgrades use it to build a database as an older release
// left it; pwsd itself always migrates to the head (Migrate).
func MigrateTo(url string, version uint) error {
	return runMigrations(url, fmt.Sprintf("migrating to version %d", version), func(m *migrate.Migrate) error { return m.Migrate(version) })
}

// runMigrations runs step with a migrator of the embedded migrations on the
// database at url; "no change" is success.
func runMigrations(url, what string, step func(*migrate.Migrate) error) error {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("opening embedded migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, migrateURL(url))
	if err != nil {
		return fmt.Errorf("connecting migrator: %w", err)
	}
	defer m.Close()
	if err := step(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// migrateURL rewrites a libpq URL to the scheme of golang-migrate's pgx v5
// driver, without pgx's pool settings (pool_min_conns and the like), which
// that driver would send to the server as parameters it does not know.
func migrateURL(raw string) string {
	for _, p := range []string{"postgresql://", "postgres://"} {
		if strings.HasPrefix(raw, p) {
			raw = "pgx5://" + strings.TrimPrefix(raw, p)
			break
		}
	}
	u, err := neturl.Parse(raw)
	if err != nil || !strings.Contains(u.RawQuery, "pool_") {
		return raw
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// DefaultPoolMinConns is how many connections the pool keeps open when url
// does not say (pgx's pool_min_conns; at most the pool's pool_max_conns).
// pgx's own default is none: a connection is opened when a request finds
// none idle, and closed after 30 minutes idle. Opening one costs 5-35 ms
// on this project's machines, which the first release of a restarted pwsd
// paid, and the nightly release of a running one, while the writes behind
// the release held the connections the warm start had opened
// (docs/performance.md, "A restarted pwsd's connections").
const DefaultPoolMinConns = 4

// OpenPostgres applies pending migrations and connects a pool to url. The
// pool opens DefaultPoolMinConns connections in the background unless url
// sets pool_min_conns, and warms each new connection for a release's write
// (warmSampleWrite).
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	if err := Migrate(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgres: %w", err)
	}
	if !strings.Contains(url, "pool_min_conns") {
		cfg.MinConns = min(DefaultPoolMinConns, cfg.MaxConns)
	}
	cfg.AfterConnect = warmSampleWrite
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pinging postgres: %w", err)
	}
	p := &Postgres{pool: pool, ledgers: accounting.NewCache(ledgerCachePoints)}
	p.tableCacheBytes.Store(DefaultTableCacheBytes)
	return p, nil
}

// Ping implements Store.
func (p *Postgres) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// Ready implements Store: reachable, and golang-migrate's schema_migrations
// at migrations.Head and not dirty.
func (p *Postgres) Ready(ctx context.Context) error {
	var version int64
	var dirty bool
	err := p.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty)
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if dirty || version != int64(migrations.Head()) {
		return fmt.Errorf("schema at version %d (dirty %v), want %d", version, dirty, migrations.Head())
	}
	return nil
}

// Close implements Store.
func (p *Postgres) Close() { p.pool.Close() }

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// cursorArgs turns c into the (created_at, id) lower bound of a listing; the
// zero cursor is before everything.
func cursorArgs(c Cursor) (time.Time, string) {
	if c.IsZero() {
		return time.Time{}.Add(-1), ""
	}
	return c.CreatedAt, c.ID
}

// PurgeExpired implements Purger: each expiring domain purges its own rows
// (purgeExpiredSamples, purgeExpiredIdempotency).
func (p *Postgres) PurgeExpired(ctx context.Context, now time.Time) (PurgeCount, error) {
	var n PurgeCount
	var err error
	if n.Samples, err = p.purgeExpiredSamples(ctx, now); err != nil {
		return n, err
	}
	n.IdempotencyKeys, err = p.purgeExpiredIdempotency(ctx, now)
	return n, err
}
