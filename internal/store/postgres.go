package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pwsd/pwsd/migrations"
)

// Postgres is the PostgreSQL store (pgxpool). Tables, samples, state and the
// privacy ledger survive restarts and are shared by every pwsd replica.
type Postgres struct {
	pool *pgxpool.Pool
	// tableCacheBytes bounds table_cache (see PutTable).
	tableCacheBytes atomic.Int64
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

// migrateURL rewrites a libpq URL to the scheme of golang-migrate's pgx v5 driver.
func migrateURL(url string) string {
	for _, p := range []string{"postgresql://", "postgres://"} {
		if strings.HasPrefix(url, p) {
			return "pgx5://" + strings.TrimPrefix(url, p)
		}
	}
	return url
}

// OpenPostgres applies pending migrations and connects a pool to url.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	if err := Migrate(url); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pinging postgres: %w", err)
	}
	p := &Postgres{pool: pool}
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

// GetTable implements Store: the row is found by the digest of key
// (tableDigest) and counts only when its stored parameters equal key.
func (p *Postgres) GetTable(ctx context.Context, key string) ([]byte, bool, error) {
	var data []byte
	var params []byte
	d := tableDigest(key)
	// Reading marks the table used, for least-recently-used eviction.
	err := p.pool.QueryRow(ctx, `UPDATE table_cache SET last_used = clock_timestamp() WHERE digest = $1 RETURNING params, data`, d[:]).Scan(&params, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading cached table: %w", err)
	}
	if string(params) != key {
		return nil, false, nil // another parameter set with this digest: never served
	}
	return data, true, nil
}

// PutTable implements Store.
// The table is stored under the digest of key with key beside it (see
// GetTable); its size counts both. The insert and the eviction of the
// least recently used tables until the total size is within the bound run
// in one transaction, serialised by an advisory lock, so table_cache never
// stays above the bound. A table larger than the bound is not stored.
func (p *Postgres) PutTable(ctx context.Context, key string, data []byte) error {
	limit := p.tableCacheBytes.Load()
	size := tableSize(key, data)
	if size > limit {
		return nil
	}
	d := tableDigest(key)
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7316001)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO table_cache (digest, params, data, size, last_used) VALUES ($1, $2, $3, $4, clock_timestamp()) ON CONFLICT (digest) DO NOTHING`,
			d[:], []byte(key), data, size); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM table_cache WHERE digest IN (
			SELECT digest FROM (SELECT digest, sum(size) OVER (ORDER BY last_used DESC, digest) AS total FROM table_cache) t WHERE total > $1)`, limit)
		return err
	})
	if err != nil {
		return fmt.Errorf("caching table: %w", err)
	}
	return nil
}

// LimitTableCache implements TableCacheLimiter.
func (p *Postgres) LimitTableCache(bytes int64) { p.tableCacheBytes.Store(bytes) }

// TableCacheBytes returns the total size of the cached tables.
func (p *Postgres) TableCacheBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(sum(size), 0) FROM table_cache`).Scan(&n); err != nil {
		return 0, fmt.Errorf("measuring table cache: %w", err)
	}
	return n, nil
}

// charge applies c inside tx with the dataset row locked.
func charge(ctx context.Context, tx pgx.Tx, c *Charge) error {
	if err := checkID(c.Dataset); err != nil {
		return fmt.Errorf("charging dataset: %w", err)
	}
	var d Dataset
	err := tx.QueryRow(ctx, `SELECT epsilon_budget, delta_budget, spent_epsilon, spent_delta FROM datasets WHERE name = $1 FOR UPDATE`, c.Dataset).
		Scan(&d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("charging dataset: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("locking dataset: %w", err)
	}
	if !fits(d, c.Epsilon, c.Delta) {
		return ErrBudget
	}
	if _, err := tx.Exec(ctx, `UPDATE datasets SET spent_epsilon = spent_epsilon + $2, spent_delta = spent_delta + $3 WHERE name = $1`, c.Dataset, c.Epsilon, c.Delta); err != nil {
		return fmt.Errorf("charging dataset: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO releases (dataset, kind, ref, epsilon, delta) VALUES ($1, $2, $3, $4, $5)`, c.Dataset, c.Kind, c.Ref, c.Epsilon, c.Delta); err != nil {
		return fmt.Errorf("recording release: %w", err)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503"
}

// CreateSample implements Store.
func (p *Postgres) CreateSample(ctx context.Context, s *Sample, c *Charge) error {
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if c != nil {
			if err := charge(ctx, tx, c); err != nil {
				return err
			}
		}
		var dataset any
		if s.Dataset != "" {
			dataset = s.Dataset
		}
		var expires any
		if !s.ExpiresAt.IsZero() {
			expires = s.ExpiresAt
		}
		_, err := tx.Exec(ctx, `INSERT INTO samples (id, created_at, dataset, header, reported, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			s.ID, s.CreatedAt, dataset, s.Header, int64(len(s.Elements)), expires)
		switch {
		case isUniqueViolation(err):
			return ErrExists
		case isForeignKeyViolation(err):
			return fmt.Errorf("storing sample for dataset: %w", ErrNotFound)
		case err != nil:
			return fmt.Errorf("storing sample: %w", err)
		}
		var rows [][]any
		buf := []byte{}
		for seq, start := 0, 0; start < len(s.Elements); seq, start = seq+1, start+chunkSize {
			end := min(start+chunkSize, len(s.Elements))
			buf = encodeElements(buf[:0], s.Elements[start:end])
			rows = append(rows, []any{s.ID, int32(seq), append([]byte(nil), buf...)})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sample_chunks"}, []string{"sample_id", "seq", "data"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("storing sample elements: %w", err)
		}
		return nil
	})
}

// GetSample implements Store.
func (p *Postgres) GetSample(ctx context.Context, id string) (*Sample, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s := &Sample{ID: id}
	var dataset *string
	var reported int64
	var expires *time.Time
	err := p.pool.QueryRow(ctx, `SELECT created_at, dataset, header, reported, expires_at FROM samples WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)`, id, time.Now()).
		Scan(&s.CreatedAt, &dataset, &s.Header, &reported, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading sample: %w", err)
	}
	if dataset != nil {
		s.Dataset = *dataset
	}
	if expires != nil {
		s.ExpiresAt = expires.UTC()
	}
	s.CreatedAt = s.CreatedAt.UTC()
	s.Elements = make([]Element, 0, reported)
	rows, err := p.pool.Query(ctx, `SELECT data FROM sample_chunks WHERE sample_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("reading sample elements: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("reading sample chunk: %w", err)
		}
		if s.Elements, err = decodeElements(s.Elements, data); err != nil {
			return nil, fmt.Errorf("decoding sample %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading sample elements: %w", err)
	}
	if int64(len(s.Elements)) != reported { // deleted or purged between the two reads
		return nil, ErrNotFound
	}
	return s, nil
}

// CreateDataset implements Store.
func (p *Postgres) CreateDataset(ctx context.Context, d Dataset) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now().UTC()
	}
	_, err := p.pool.Exec(ctx, `INSERT INTO datasets (name, epsilon_budget, delta_budget, created_at) VALUES ($1, $2, $3, $4)`,
		d.Name, d.EpsilonBudget, d.DeltaBudget, d.CreatedAt)
	if isUniqueViolation(err) {
		return ErrExists
	}
	if err != nil {
		return fmt.Errorf("creating dataset: %w", err)
	}
	return nil
}

// GetDataset implements Store.
func (p *Postgres) GetDataset(ctx context.Context, name string) (Dataset, []Release, error) {
	if err := checkID(name); err != nil {
		return Dataset{}, nil, err
	}
	d := Dataset{Name: name}
	err := p.pool.QueryRow(ctx, `SELECT epsilon_budget, delta_budget, spent_epsilon, spent_delta, created_at FROM datasets WHERE name = $1`, name).
		Scan(&d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta, &d.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Dataset{}, nil, ErrNotFound
	}
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading dataset: %w", err)
	}
	d.CreatedAt = d.CreatedAt.UTC()
	rows, err := p.pool.Query(ctx, `SELECT kind, ref, epsilon, delta, created_at FROM releases WHERE dataset = $1 ORDER BY id`, name)
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading ledger: %w", err)
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Release, error) {
		var x Release
		err := r.Scan(&x.Kind, &x.Ref, &x.Epsilon, &x.Delta, &x.CreatedAt)
		x.CreatedAt = x.CreatedAt.UTC()
		return x, err
	})
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading ledger: %w", err)
	}
	return d, rs, nil
}

// CreateState implements Store.
func (p *Postgres) CreateState(ctx context.Context, r *StateRecord, c *Charge) error {
	var dataset any
	if r.Dataset != "" {
		dataset = r.Dataset
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if c != nil {
			if err := charge(ctx, tx, c); err != nil {
				return err
			}
		}
		return insertState(ctx, tx, r, dataset)
	})
}

func insertState(ctx context.Context, tx pgx.Tx, r *StateRecord, dataset any) error {
	_, err := tx.Exec(ctx, `INSERT INTO states (kind, id, dataset, config, state, events, releases, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		r.Kind, r.ID, dataset, r.Config, r.State, r.Events, r.Releases, r.CreatedAt, r.UpdatedAt)
	switch {
	case isUniqueViolation(err):
		return ErrExists
	case isForeignKeyViolation(err):
		return fmt.Errorf("creating state for dataset: %w", ErrNotFound)
	case err != nil:
		return fmt.Errorf("creating state: %w", err)
	}
	return nil
}

const stateColumns = `kind, id, coalesce(dataset, ''), config, state, events, releases, created_at, updated_at`

func scanState(row pgx.Row) (*StateRecord, error) {
	r := &StateRecord{}
	err := row.Scan(&r.Kind, &r.ID, &r.Dataset, &r.Config, &r.State, &r.Events, &r.Releases, &r.CreatedAt, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading state: %w", err)
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, nil
}

// GetState implements Store.
func (p *Postgres) GetState(ctx context.Context, kind, id string) (*StateRecord, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return scanState(p.pool.QueryRow(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND id = $2`, kind, id))
}

// UpdateState implements Store: SELECT ... FOR UPDATE, fn, UPDATE, commit.
func (p *Postgres) UpdateState(ctx context.Context, kind, id string, fn func(*StateRecord) (*Charge, error)) error {
	if err := checkID(id); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		r, err := scanState(tx.QueryRow(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND id = $2 FOR UPDATE`, kind, id))
		if err != nil {
			return err
		}
		c, err := fn(r)
		if err != nil {
			return err
		}
		if c != nil {
			if err := charge(ctx, tx, c); err != nil {
				return err
			}
		}
		r.UpdatedAt = time.Now().UTC()
		_, err = tx.Exec(ctx, `UPDATE states SET config = $3, state = $4, events = $5, releases = $6, updated_at = $7 WHERE kind = $1 AND id = $2`,
			kind, id, r.Config, r.State, r.Events, r.Releases, r.UpdatedAt)
		if err != nil {
			return fmt.Errorf("writing state: %w", err)
		}
		return nil
	})
}
