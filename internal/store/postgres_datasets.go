package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/accounting"
)

// Datasets and the privacy ledger in PostgreSQL: tables datasets and
// releases. charge is called by the other domains' writes, in their
// transaction.

// charge applies c inside tx with the dataset row locked: the budget check
// (basic, or the PLD of the ledger composed with c) and the write happen
// under one lock, so concurrent charges from any number of instances are
// decided one after the other. The returned function, run once tx has
// committed, caches the ledger composed with c (nil when nothing is to be
// cached).
func (p *Postgres) charge(ctx context.Context, tx pgx.Tx, c *Charge) (func(), error) {
	if err := checkID(c.Dataset); err != nil {
		return nil, fmt.Errorf("charging dataset: %w", err)
	}
	d := Dataset{Name: c.Dataset}
	err := tx.QueryRow(ctx, `SELECT epsilon_budget, delta_budget, spent_epsilon, spent_delta, accounting FROM datasets WHERE name = $1 FOR UPDATE`, c.Dataset).
		Scan(&d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta, &d.Accounting)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("charging dataset: %w", ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("locking dataset: %w", err)
	}
	after, err := admit(d, c, func() (*accounting.PLD, error) { return p.composed(ctx, tx, c.Dataset) })
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE datasets SET spent_epsilon = spent_epsilon + $2, spent_delta = spent_delta + $3 WHERE name = $1`, c.Dataset, c.Epsilon, c.Delta); err != nil {
		return nil, fmt.Errorf("charging dataset: %w", err)
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO releases (dataset, kind, ref, epsilon, delta, mechanism) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
		c.Dataset, c.Kind, c.Ref, c.Epsilon, c.Delta, c.mechanism()).Scan(&id); err != nil {
		return nil, fmt.Errorf("recording release: %w", err)
	}
	if after == nil {
		return nil, nil
	}
	return func() { p.ledgers.Put(c.Dataset, id, after) }, nil
}

// chargeTx runs write in a transaction that first charges c (nil: none)
// and, once the transaction has committed, caches the composed ledger.
func (p *Postgres) chargeTx(ctx context.Context, c func(tx pgx.Tx) (*Charge, error), write func(tx pgx.Tx) error) error {
	var committed func()
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		ch, err := c(tx)
		if err != nil {
			return err
		}
		if ch != nil {
			if committed, err = p.charge(ctx, tx, ch); err != nil {
				return err
			}
		}
		return write(tx)
	})
	if err == nil && committed != nil {
		committed()
	}
	return err
}

// composed returns the PLD of name's ledger as q sees it: the cached
// composition extended by the releases recorded after the cache's position
// (a release id; ids grow, and a charge made by another instance since is
// read here). Called with the dataset row locked, every release read is
// committed, so the extended composition is cached at once.
func (p *Postgres) composed(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, name string) (*accounting.PLD, error) {
	pos, pld, ok := p.ledgers.Get(name)
	if !ok {
		pos, pld = 0, nil
	}
	var rel []Release
	last := pos
	rows, err := q.Query(ctx, `SELECT id, mechanism, epsilon, delta FROM releases WHERE dataset = $1 AND id > $2 ORDER BY id`, name, pos)
	if err != nil {
		return nil, fmt.Errorf("reading ledger: %w", err)
	}
	var x Release
	if _, err := pgx.ForEachRow(rows, []any{&last, &x.Mechanism, &x.Epsilon, &x.Delta}, func() error {
		rel = append(rel, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading ledger: %w", err)
	}
	if pld, err = composeReleases(pld, rel); err != nil {
		return nil, err
	}
	p.ledgers.Put(name, last, pld)
	return pld, nil
}

// ComposedLedger implements Datasets.
func (p *Postgres) ComposedLedger(ctx context.Context, name string) (*accounting.PLD, error) {
	if err := checkID(name); err != nil {
		return nil, err
	}
	var one int
	if err := p.pool.QueryRow(ctx, `SELECT 1 FROM datasets WHERE name = $1`, name).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	return p.composed(ctx, p.pool, name)
}

// CreateDataset implements Datasets.
func (p *Postgres) CreateDataset(ctx context.Context, d Dataset) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now().UTC()
	}
	_, err := p.pool.Exec(ctx, `INSERT INTO datasets (name, epsilon_budget, delta_budget, created_at, accounting) VALUES ($1, $2, $3, $4, $5)`,
		d.Name, d.EpsilonBudget, d.DeltaBudget, d.CreatedAt, d.accounting())
	if isUniqueViolation(err) {
		return ErrExists
	}
	if err != nil {
		return fmt.Errorf("creating dataset: %w", err)
	}
	return nil
}

// GetDataset implements Datasets.
func (p *Postgres) GetDataset(ctx context.Context, name string) (Dataset, []Release, error) {
	if err := checkID(name); err != nil {
		return Dataset{}, nil, err
	}
	d := Dataset{Name: name}
	err := p.pool.QueryRow(ctx, `SELECT epsilon_budget, delta_budget, spent_epsilon, spent_delta, created_at, accounting FROM datasets WHERE name = $1`, name).
		Scan(&d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta, &d.CreatedAt, &d.Accounting)
	if errors.Is(err, pgx.ErrNoRows) {
		return Dataset{}, nil, ErrNotFound
	}
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading dataset: %w", err)
	}
	d.CreatedAt = d.CreatedAt.UTC()
	rows, err := p.pool.Query(ctx, `SELECT kind, ref, epsilon, delta, created_at, mechanism FROM releases WHERE dataset = $1 ORDER BY id`, name)
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading ledger: %w", err)
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Release, error) {
		var x Release
		err := r.Scan(&x.Kind, &x.Ref, &x.Epsilon, &x.Delta, &x.CreatedAt, &x.Mechanism)
		x.CreatedAt = x.CreatedAt.UTC()
		return x, err
	})
	if err != nil {
		return Dataset{}, nil, fmt.Errorf("reading ledger: %w", err)
	}
	return d, rs, nil
}

// ListDatasets implements Datasets.
func (p *Postgres) ListDatasets(ctx context.Context, c Cursor, limit int) ([]Dataset, [][]Release, error) {
	if err := checkCursor(c); err != nil {
		return nil, nil, err
	}
	t, name := cursorArgs(c)
	rows, err := p.pool.Query(ctx, `SELECT name, epsilon_budget, delta_budget, spent_epsilon, spent_delta, created_at, accounting FROM datasets
		WHERE (created_at, name) > ($1, $2) ORDER BY created_at, name LIMIT $3`, t, name, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("listing datasets: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Dataset, error) {
		var d Dataset
		err := r.Scan(&d.Name, &d.EpsilonBudget, &d.DeltaBudget, &d.SpentEpsilon, &d.SpentDelta, &d.CreatedAt, &d.Accounting)
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
	rows, err = p.pool.Query(ctx, `SELECT dataset, kind, ref, epsilon, delta, created_at, mechanism FROM releases WHERE dataset = ANY($1) ORDER BY id`, names)
	if err != nil {
		return nil, nil, fmt.Errorf("reading ledgers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		var x Release
		if err := rows.Scan(&d, &x.Kind, &x.Ref, &x.Epsilon, &x.Delta, &x.CreatedAt, &x.Mechanism); err != nil {
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
