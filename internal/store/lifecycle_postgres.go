package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// cursorArgs turns c into the (created_at, id) lower bound of a listing; the
// zero cursor is before everything.
func cursorArgs(c Cursor) (time.Time, string) {
	if c.IsZero() {
		return time.Time{}.Add(-1), ""
	}
	return c.CreatedAt, c.ID
}

// ListSamples implements Lifecycle.
func (p *Postgres) ListSamples(ctx context.Context, c Cursor, limit int) ([]*Sample, error) {
	if err := checkCursor(c); err != nil {
		return nil, err
	}
	t, id := cursorArgs(c)
	rows, err := p.pool.Query(ctx, `SELECT id, created_at, coalesce(dataset, ''), header, reported, expires_at FROM samples
		WHERE (created_at, id) > ($1, $2) AND (expires_at IS NULL OR expires_at > $3)
		ORDER BY created_at, id LIMIT $4`, t, id, time.Now(), limit)
	if err != nil {
		return nil, fmt.Errorf("listing samples: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Sample, error) {
		s := &Sample{}
		var reported int64
		var expires *time.Time
		if err := r.Scan(&s.ID, &s.CreatedAt, &s.Dataset, &s.Header, &reported, &expires); err != nil {
			return nil, err
		}
		s.CreatedAt, s.Reported = s.CreatedAt.UTC(), int(reported)
		if expires != nil {
			s.ExpiresAt = expires.UTC()
		}
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing samples: %w", err)
	}
	return out, nil
}

// DeleteSample implements Lifecycle; its chunks go by ON DELETE CASCADE.
func (p *Postgres) DeleteSample(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `DELETE FROM samples WHERE id = $1 AND (expires_at IS NULL OR expires_at > $2)`, id, time.Now())
	if err != nil {
		return fmt.Errorf("deleting sample: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ListDatasets implements Lifecycle.
func (p *Postgres) ListDatasets(ctx context.Context, c Cursor, limit int) ([]Dataset, [][]Release, error) {
	if err := checkCursor(c); err != nil {
		return nil, nil, err
	}
	t, name := cursorArgs(c)
	rows, err := p.pool.Query(ctx, `SELECT name, epsilon_budget, delta_budget, spent_epsilon, spent_delta, created_at FROM datasets
		WHERE (created_at, name) > ($1, $2) ORDER BY created_at, name LIMIT $3`, t, name, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("listing datasets: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Dataset, error) {
		var d Dataset
		err := r.Scan(&d.Name, &d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta, &d.CreatedAt)
		d.CreatedAt = d.CreatedAt.UTC()
		return d, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing datasets: %w", err)
	}
	names := make([]string, len(ds))
	idx := make(map[string]int, len(ds))
	for i, d := range ds {
		names[i], idx[d.Name] = d.Name, i
	}
	rel := make([][]Release, len(ds))
	rows, err = p.pool.Query(ctx, `SELECT dataset, kind, ref, epsilon, delta, created_at FROM releases WHERE dataset = ANY($1) ORDER BY id`, names)
	if err != nil {
		return nil, nil, fmt.Errorf("reading ledgers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		var x Release
		if err := rows.Scan(&d, &x.Kind, &x.Ref, &x.Epsilon, &x.Delta, &x.CreatedAt); err != nil {
			return nil, nil, fmt.Errorf("reading ledgers: %w", err)
		}
		x.CreatedAt = x.CreatedAt.UTC()
		rel[idx[d]] = append(rel[idx[d]], x)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading ledgers: %w", err)
	}
	return ds, rel, nil
}

// ListStates implements Lifecycle.
func (p *Postgres) ListStates(ctx context.Context, kind string, c Cursor, limit int) ([]*StateRecord, error) {
	if err := checkCursor(c); err != nil {
		return nil, err
	}
	t, id := cursorArgs(c)
	rows, err := p.pool.Query(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND (created_at, id) > ($2, $3)
		ORDER BY created_at, id LIMIT $4`, kind, t, id, limit)
	if err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	defer rows.Close()
	var out []*StateRecord
	for rows.Next() {
		r, err := scanState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing %ss: %w", kind, err)
	}
	return out, nil
}

// DeleteState implements Lifecycle. The DELETE waits for the row lock of a
// running UpdateState.
func (p *Postgres) DeleteState(ctx context.Context, kind, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `DELETE FROM states WHERE kind = $1 AND id = $2`, kind, id)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", kind, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// PurgeExpired implements Lifecycle.
func (p *Postgres) PurgeExpired(ctx context.Context, now time.Time) (PurgeCount, error) {
	var n PurgeCount
	tag, err := p.pool.Exec(ctx, `DELETE FROM samples WHERE expires_at <= $1`, now)
	if err != nil {
		return n, fmt.Errorf("purging expired samples: %w", err)
	}
	n.Samples = tag.RowsAffected()
	tag, err = p.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE NOT `+strings.ReplaceAll(idemLive, "$2", "$1"), now)
	if err != nil {
		return n, fmt.Errorf("purging expired idempotency keys: %w", err)
	}
	n.IdempotencyKeys = tag.RowsAffected()
	return n, nil
}
