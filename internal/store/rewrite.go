package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// FormatRewriter rewrites rows stored in an older shape. A row is in an
// older shape when its JSON (a sample's header, a state's config) has no
// "format" key or one below the format asked for; its rewrite function
// returns the new shape, and each row is rewritten in its own transaction
// with the row locked, so the rewrite can run beside live traffic and be
// resumed after a crash. Both stores implement it.
type FormatRewriter interface {
	// RewriteSampleHeaders replaces the header h of every sample whose
	// header format is below format by fn(h) and returns how many it
	// rewrote.
	RewriteSampleHeaders(ctx context.Context, format int, fn func(header []byte) ([]byte, error)) (int, error)
	// RewriteStates runs fn on every record of kind whose config format is
	// below format and writes back its config, state and events; it returns
	// how many it rewrote.
	RewriteStates(ctx context.Context, kind string, format int, fn func(rec *StateRecord) error) (int, error)
}

// jsonFormat returns the "format" member of a JSON object, 0 when absent.
func jsonFormat(data []byte) int {
	var v struct {
		Format int `json:"format"`
	}
	_ = json.Unmarshal(data, &v)
	return v.Format
}

// RewriteSampleHeaders implements FormatRewriter.
func (m *Memory) RewriteSampleHeaders(_ context.Context, format int, fn func([]byte) ([]byte, error)) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, s := range m.samples {
		if jsonFormat(s.Header) >= format {
			continue
		}
		h, err := fn(s.Header)
		if err != nil {
			return n, fmt.Errorf("rewriting sample %s: %w", id, err)
		}
		s.Header = h
		n++
	}
	return n, nil
}

// RewriteStates implements FormatRewriter.
func (m *Memory) RewriteStates(ctx context.Context, kind string, format int, fn func(*StateRecord) error) (int, error) {
	m.mu.Lock()
	var ids []string
	for _, r := range m.states {
		if r.Kind == kind && jsonFormat(r.Config) < format {
			ids = append(ids, r.ID)
		}
	}
	m.mu.Unlock()
	n := 0
	for _, id := range ids {
		err := m.UpdateState(ctx, kind, id, func(r *StateRecord) (*Charge, error) {
			if jsonFormat(r.Config) >= format {
				return nil, nil
			}
			n++
			return nil, fn(r)
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return n, fmt.Errorf("rewriting %s %s: %w", kind, id, err)
		}
	}
	return n, nil
}

const legacyHeader = `coalesce((header->>'format')::int, 0) < $1`

// RewriteSampleHeaders implements FormatRewriter.
func (p *Postgres) RewriteSampleHeaders(ctx context.Context, format int, fn func([]byte) ([]byte, error)) (int, error) {
	rows, err := p.pool.Query(ctx, `SELECT id FROM samples WHERE `+legacyHeader+` ORDER BY id`, format)
	if err != nil {
		return 0, fmt.Errorf("listing samples to rewrite: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("listing samples to rewrite: %w", err)
	}
	n := 0
	for _, id := range ids {
		err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
			var h []byte
			err := tx.QueryRow(ctx, `SELECT header FROM samples WHERE id = $2 AND `+legacyHeader+` FOR UPDATE`, format, id).Scan(&h)
			if errors.Is(err, pgx.ErrNoRows) { // deleted or rewritten meanwhile
				return nil
			}
			if err != nil {
				return err
			}
			if h, err = fn(h); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE samples SET header = $2 WHERE id = $1`, id, h); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("rewriting sample %s: %w", id, err)
		}
	}
	return n, nil
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
