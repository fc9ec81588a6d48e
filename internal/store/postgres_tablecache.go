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

// GetTables implements TableBatcher: one statement for all keys, which
// marks the rows found used, as GetTable does; a row counts only for the
// key it holds.
func (p *Postgres) GetTables(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	digests := make([][]byte, len(keys))
	for i, k := range keys {
		d := tableDigest(k)
		digests[i] = d[:]
	}
	rows, err := p.pool.Query(ctx, `UPDATE table_cache SET last_used = clock_timestamp() WHERE digest = ANY($1) RETURNING params, data`, digests)
	if err != nil {
		return nil, fmt.Errorf("reading cached tables: %w", err)
	}
	found := map[string][]byte{}
	for rows.Next() {
		var params, data []byte
		if err := rows.Scan(&params, &data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading cached tables: %w", err)
		}
		found[string(params)] = data
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading cached tables: %w", err)
	}
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}

// PutTable implements Tables.
// The table is stored under the digest of key with key beside it (see
// GetTable); its size counts both. The insert and the eviction of the
// least recently used tables until the total size is within the bound run
// in one transaction, serialised by an advisory lock, so table_cache never
// stays above the bound. A table larger than the bound is not stored.
func (p *Postgres) PutTable(ctx context.Context, key string, data []byte) error {
	return p.PutTables(ctx, []TableEntry{{Key: key, Data: data}})
}

// PutTables implements TableBatcher: PutTable for every entry, in one
// transaction with one eviction pass.
func (p *Postgres) PutTables(ctx context.Context, entries []TableEntry) error {
	limit := p.tableCacheBytes.Load()
	batch := &pgx.Batch{}
	for _, e := range entries {
		size := tableSize(e.Key, e.Data)
		if size > limit {
			continue
		}
		d := tableDigest(e.Key)
		batch.Queue(`INSERT INTO table_cache (digest, params, data, size, last_used) VALUES ($1, $2, $3, $4, clock_timestamp()) ON CONFLICT (digest) DO NOTHING`,
			d[:], []byte(e.Key), e.Data, size)
	}
	if batch.Len() == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7316001)`); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
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

// DeleteTable implements TableDeleter: the row of key's digest goes only
// when it holds key (another key with the same digest stays).
func (p *Postgres) DeleteTable(ctx context.Context, key string) error {
	d := tableDigest(key)
	if _, err := p.pool.Exec(ctx, `DELETE FROM table_cache WHERE digest = $1 AND params = $2`, d[:], []byte(key)); err != nil {
		return fmt.Errorf("deleting cached table: %w", err)
	}
	return nil
}

// TouchTables implements TableToucher: one statement, matching each key's
// digest and key (as DeleteTable does).
func (p *Postgres) TouchTables(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	digests, params := make([][]byte, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		d := tableDigest(k)
		digests[i], params[i] = d[:], []byte(k)
	}
	if _, err := p.pool.Exec(ctx, `UPDATE table_cache AS t SET last_used = clock_timestamp()
		FROM unnest($1::bytea[], $2::bytea[]) AS k(digest, params) WHERE t.digest = k.digest AND t.params = k.params`, digests, params); err != nil {
		return fmt.Errorf("marking cached tables used: %w", err)
	}
	return nil
}

// RecentTables implements TableLister: one statement, ordered by last use
// alone so that PostgreSQL may walk index table_cache_last_used backwards
// and stop at the limit-th key with the prefix (tables used at the same
// instant come in any order).
func (p *Postgres) RecentTables(ctx context.Context, prefix string, limit int) ([]TableUse, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, `SELECT params, size FROM table_cache WHERE substring(params from 1 for $2) = $1
		ORDER BY last_used DESC LIMIT $3`, []byte(prefix), len(prefix), limit)
	if err != nil {
		return nil, fmt.Errorf("listing cached tables: %w", err)
	}
	defer rows.Close()
	var out []TableUse
	for rows.Next() {
		var params []byte
		var size int64
		if err := rows.Scan(&params, &size); err != nil {
			return nil, fmt.Errorf("listing cached tables: %w", err)
		}
		out = append(out, TableUse{Key: string(params), Size: size})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing cached tables: %w", err)
	}
	return out, nil
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
