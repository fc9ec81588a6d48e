package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// IdempotencyRecord is what is kept for one Idempotency-Key: while the first
// request runs only the reservation (Done false), then a digest of the
// request and the answer it got. Request bodies are never kept.
type IdempotencyRecord struct {
	Key         string // digest of the caller and its key; never the raw key
	Done        bool
	RequestHash []byte
	Status      int
	Header      map[string]string // the answer's headers that matter (Location, Content-Type)
	Body        []byte
	// Ref names the resource the first request created (its Location), so
	// that its answer can be redacted when the resource is deleted.
	Ref       string
	CreatedAt time.Time
	// LockedUntil is the lease of a record not Done: the request holding
	// it renews it while it runs (RenewIdempotency), so a record still not
	// Done after it was abandoned by a server that stopped mid-request.
	LockedUntil time.Time
	// ExpiresAt is when the record is forgotten; a reservation whose lease
	// is still renewed is never forgotten, whatever ExpiresAt says.
	ExpiresAt time.Time
}

// live reports whether r still holds its key at now: unexpired, or a
// reservation whose lease is still renewed (its request still runs).
func (r *IdempotencyRecord) live(now time.Time) bool {
	return now.Before(r.ExpiresAt) || (!r.Done && now.Before(r.LockedUntil))
}

// idemLive is IdempotencyRecord.live in SQL, with $2 the time now.
const idemLive = `(expires_at > $2 OR (NOT done AND locked_until > $2))`

// Idempotency keeps the answers of keyed requests.
type Idempotency interface {
	// ReserveIdempotency claims key for a first request: when no unexpired
	// record holds key it stores rec (Done false) and returns (nil, true);
	// otherwise it returns the existing record and false. Exactly one of
	// concurrent callers reserves.
	ReserveIdempotency(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, bool, error)
	// GetIdempotency returns the unexpired record of key or ErrNotFound.
	GetIdempotency(ctx context.Context, key string) (*IdempotencyRecord, error)
	// CompleteIdempotency stores the request digest and answer of a
	// reserved key and marks it Done; a non-zero rec.ExpiresAt replaces the
	// reservation's.
	CompleteIdempotency(ctx context.Context, rec *IdempotencyRecord) error
	// RenewIdempotency extends the lease of a reservation that is not Done
	// to lockedUntil (the request holding it still runs); a Done or absent
	// record is left alone.
	RenewIdempotency(ctx context.Context, key string, lockedUntil time.Time) error
	// ReleaseIdempotency deletes a reservation that is not Done, so that the
	// key may be used again (the first request changed nothing).
	ReleaseIdempotency(ctx context.Context, key string) error
	// RedactIdempotency replaces the answers recorded with ref (the
	// resource was deleted) by status, header and body, so that the deleted
	// resource's content does not outlive it while repeats still run nothing.
	RedactIdempotency(ctx context.Context, ref string, status int, header map[string]string, body []byte) error
}

func cloneIdem(r *IdempotencyRecord) *IdempotencyRecord {
	c := *r
	c.RequestHash = slices.Clone(r.RequestHash)
	c.Header = maps.Clone(r.Header)
	c.Body = slices.Clone(r.Body)
	return &c
}

// ReserveIdempotency implements Idempotency.
func (m *Memory) ReserveIdempotency(_ context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.idem == nil {
		m.idem = map[string]*IdempotencyRecord{}
	}
	if cur, ok := m.idem[rec.Key]; ok && cur.live(time.Now()) {
		return cloneIdem(cur), false, nil
	}
	c := cloneIdem(rec)
	c.Done = false
	m.idem[rec.Key] = c
	return nil, true, nil
}

// GetIdempotency implements Idempotency.
func (m *Memory) GetIdempotency(_ context.Context, key string) (*IdempotencyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.idem[key]
	if !ok || !cur.live(time.Now()) {
		return nil, ErrNotFound
	}
	return cloneIdem(cur), nil
}

// RenewIdempotency implements Idempotency.
func (m *Memory) RenewIdempotency(_ context.Context, key string, lockedUntil time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.idem[key]; ok && !cur.Done {
		cur.LockedUntil = lockedUntil
	}
	return nil
}

// CompleteIdempotency implements Idempotency.
func (m *Memory) CompleteIdempotency(_ context.Context, rec *IdempotencyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.idem[rec.Key]
	if !ok || cur.Done {
		return fmt.Errorf("completing idempotency key: %w", ErrNotFound)
	}
	c := cloneIdem(rec)
	c.Done, c.CreatedAt, c.LockedUntil = true, cur.CreatedAt, cur.LockedUntil
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = cur.ExpiresAt
	}
	m.idem[rec.Key] = c
	return nil
}

// RedactIdempotency implements Idempotency.
func (m *Memory) RedactIdempotency(_ context.Context, ref string, status int, header map[string]string, body []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.idem {
		if r.Done && r.Ref == ref {
			r.Status, r.Header, r.Body = status, maps.Clone(header), slices.Clone(body)
		}
	}
	return nil
}

// ReleaseIdempotency implements Idempotency.
func (m *Memory) ReleaseIdempotency(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.idem[key]; ok && !cur.Done {
		delete(m.idem, key)
	}
	return nil
}

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
