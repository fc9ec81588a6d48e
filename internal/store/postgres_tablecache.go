package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Tables in PostgreSQL: table table_cache (also holds the service's grid
// chunks, stored as tables).

// GetTable implements Tables: the row is found by the digest of key
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

// PutTable implements Tables.
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
