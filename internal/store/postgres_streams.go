package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Streams and counters in PostgreSQL: table states.

// CreateState implements States.
func (p *Postgres) CreateState(ctx context.Context, r *StateRecord, c *Charge) error {
	var dataset any
	if r.Dataset != "" {
		dataset = r.Dataset
	}
	return p.chargeTx(ctx, func(pgx.Tx) (*Charge, error) { return c, nil }, func(tx pgx.Tx) error {
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

// GetState implements States.
func (p *Postgres) GetState(ctx context.Context, kind, id string) (*StateRecord, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return scanState(p.pool.QueryRow(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND id = $2`, kind, id))
}

// UpdateState implements States: SELECT ... FOR UPDATE, fn, UPDATE, commit.
func (p *Postgres) UpdateState(ctx context.Context, kind, id string, fn func(*StateRecord) (*Charge, error)) error {
	if err := checkID(id); err != nil {
		return err
	}
	var r *StateRecord
	return p.chargeTx(ctx, func(tx pgx.Tx) (*Charge, error) {
		var err error
		if r, err = scanState(tx.QueryRow(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND id = $2 FOR UPDATE`, kind, id)); err != nil {
			return nil, err
		}
		return fn(r)
	}, func(tx pgx.Tx) error {
		r.UpdatedAt = time.Now().UTC()
		_, err := tx.Exec(ctx, `UPDATE states SET config = $3, state = $4, events = $5, releases = $6, updated_at = $7 WHERE kind = $1 AND id = $2`,
			kind, id, r.Config, r.State, r.Events, r.Releases, r.UpdatedAt)
		if err != nil {
			return fmt.Errorf("writing state: %w", err)
		}
		return nil
	})
}

// ListStates implements States.
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

// DeleteState implements States. The DELETE waits for the row lock of a
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

const legacyConfig = `coalesce((config->>'format')::int, 0) < $2`

// RewriteStates implements FormatRewriter.
func (p *Postgres) RewriteStates(ctx context.Context, kind string, format int, fn func(*StateRecord) error) (int, error) {
	rows, err := p.pool.Query(ctx, `SELECT id FROM states WHERE kind = $1 AND `+legacyConfig+` ORDER BY id`, kind, format)
	if err != nil {
		return 0, fmt.Errorf("listing %ss to rewrite: %w", kind, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("listing %ss to rewrite: %w", kind, err)
	}
	n := 0
	for _, id := range ids {
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			r, err := scanState(tx.QueryRow(ctx, `SELECT `+stateColumns+` FROM states WHERE kind = $1 AND `+legacyConfig+` AND id = $3 FOR UPDATE`, kind, format, id))
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE states SET config = $3, state = $4, events = $5 WHERE kind = $1 AND id = $2`,
				kind, id, r.Config, r.State, r.Events); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("rewriting %s %s: %w", kind, id, err)
		}
	}
	return n, nil
}
