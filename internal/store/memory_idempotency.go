package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Idempotency keys in memory: Memory.idem.

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

// purgeExpiredIdempotencyLocked deletes the records no longer live at now
// and returns how many; m.mu must be held.
func (m *Memory) purgeExpiredIdempotencyLocked(now time.Time) int64 {
	var n int64
	for k, r := range m.idem {
		if !r.live(now) {
			delete(m.idem, k)
			n++
		}
	}
	return n
}
