package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Idempotency keys in PostgreSQL: table idempotency_keys.

// idemLive is IdempotencyRecord.live in SQL, with $2 the time now.
const idemLive = `(expires_at > $2 OR (NOT done AND locked_until > $2))`

const idemColumns = `key, done, request_hash, status, header, body, coalesce(ref, ''), created_at, locked_until, expires_at`

func scanIdem(row pgx.Row) (*IdempotencyRecord, error) {
	r := &IdempotencyRecord{}
	err := row.Scan(&r.Key, &r.Done, &r.RequestHash, &r.Status, &r.Header, &r.Body, &r.Ref, &r.CreatedAt, &r.LockedUntil, &r.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading idempotency key: %w", err)
	}
	r.CreatedAt, r.LockedUntil, r.ExpiresAt = r.CreatedAt.UTC(), r.LockedUntil.UTC(), r.ExpiresAt.UTC()
	return r, nil
}

// ReserveIdempotency implements Idempotency: an expired record is replaced;
// INSERT ... ON CONFLICT DO NOTHING lets exactly one concurrent caller in.
func (p *Postgres) ReserveIdempotency(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, bool, error) {
	var cur *IdempotencyRecord
	reserved := false
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE key = $1 AND NOT `+idemLive, rec.Key, time.Now()); err != nil {
			return fmt.Errorf("expiring idempotency key: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (key, created_at, locked_until, expires_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (key) DO NOTHING`, rec.Key, rec.CreatedAt, rec.LockedUntil, rec.ExpiresAt)
		if err != nil {
			return fmt.Errorf("reserving idempotency key: %w", err)
		}
		if tag.RowsAffected() == 1 {
			reserved = true
			return nil
		}
		cur, err = scanIdem(tx.QueryRow(ctx, `SELECT `+idemColumns+` FROM idempotency_keys WHERE key = $1`, rec.Key))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return cur, reserved, nil
}

// GetIdempotency implements Idempotency.
func (p *Postgres) GetIdempotency(ctx context.Context, key string) (*IdempotencyRecord, error) {
	return scanIdem(p.pool.QueryRow(ctx, `SELECT `+idemColumns+` FROM idempotency_keys WHERE key = $1 AND `+idemLive, key, time.Now()))
}

// RenewIdempotency implements Idempotency.
func (p *Postgres) RenewIdempotency(ctx context.Context, key string, lockedUntil time.Time) error {
	if _, err := p.pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = $2 WHERE key = $1 AND NOT done`, key, lockedUntil); err != nil {
		return fmt.Errorf("renewing idempotency lease: %w", err)
	}
	return nil
}

// CompleteIdempotency implements Idempotency.
func (p *Postgres) CompleteIdempotency(ctx context.Context, rec *IdempotencyRecord) error {
	header := rec.Header
	if header == nil {
		header = map[string]string{}
	}
	body := rec.Body
	if body == nil {
		body = []byte{}
	}
	var ref any
	if rec.Ref != "" {
		ref = rec.Ref
	}
	var expires any
	if !rec.ExpiresAt.IsZero() {
		expires = rec.ExpiresAt
	}
	tag, err := p.pool.Exec(ctx, `UPDATE idempotency_keys SET done = true, request_hash = $2, status = $3, header = $4, body = $5, ref = $6,
		expires_at = coalesce($7, expires_at) WHERE key = $1 AND NOT done`, rec.Key, rec.RequestHash, rec.Status, header, body, ref, expires)
	if err != nil {
		return fmt.Errorf("completing idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("completing idempotency key: %w", ErrNotFound)
	}
	return nil
}

// RedactIdempotency implements Idempotency.
func (p *Postgres) RedactIdempotency(ctx context.Context, ref string, status int, header map[string]string, body []byte) error {
	if header == nil {
		header = map[string]string{}
	}
	if _, err := p.pool.Exec(ctx, `UPDATE idempotency_keys SET status = $2, header = $3, body = $4 WHERE ref = $1 AND done`, ref, status, header, body); err != nil {
		return fmt.Errorf("redacting idempotent answers: %w", err)
	}
	return nil
}

// ReleaseIdempotency implements Idempotency.
func (p *Postgres) ReleaseIdempotency(ctx context.Context, key string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE key = $1 AND NOT done`, key); err != nil {
		return fmt.Errorf("releasing idempotency key: %w", err)
	}
	return nil
}

// purgeExpiredIdempotency deletes the records no longer live at now
// (PurgeExpired).
func (p *Postgres) purgeExpiredIdempotency(ctx context.Context, now time.Time) (int64, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE NOT `+strings.ReplaceAll(idemLive, "$2", "$1"), now)
	if err != nil {
		return 0, fmt.Errorf("purging expired idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
