package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// Cursor is a position in a listing ordered by (CreatedAt, ID): a page holds
// the items strictly after it. The zero Cursor starts at the beginning. For
// datasets ID is the name.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// IsZero reports whether c is the start of a listing.
func (c Cursor) IsZero() bool { return c.CreatedAt.IsZero() && c.ID == "" }

// after reports whether (t, id) comes strictly after c in listing order.
func (c Cursor) after(t time.Time, id string) bool {
	if c.IsZero() {
		return true
	}
	if d := t.Compare(c.CreatedAt); d != 0 {
		return d > 0
	}
	return id > c.ID
}

// PurgeCount says what PurgeExpired deleted.
type PurgeCount struct {
	Samples         int64
	IdempotencyKeys int64
}

// Lifecycle lists, deletes and expires stored resources. Listings are in
// (created_at, id) order, which is stable under inserts (new resources sort
// last, up to clock resolution) and deletions.
type Lifecycle interface {
	// ListSamples returns up to limit unexpired samples after c, without
	// their elements (Elements nil, Reported set).
	ListSamples(ctx context.Context, c Cursor, limit int) ([]*Sample, error)
	// DeleteSample deletes a sample and its elements, or returns
	// ErrNotFound. The ledger entry charged for it stays.
	DeleteSample(ctx context.Context, id string) error
	// ListDatasets returns up to limit datasets after c (Cursor.ID is the
	// name), each with its ledger, oldest release first.
	ListDatasets(ctx context.Context, c Cursor, limit int) ([]Dataset, [][]Release, error)
	// ListStates returns up to limit records of kind after c.
	ListStates(ctx context.Context, kind string, c Cursor, limit int) ([]*StateRecord, error)
	// DeleteState deletes a stream or counter, or returns ErrNotFound. The
	// ledger entries charged for it stay.
	DeleteState(ctx context.Context, kind, id string) error
	// PurgeExpired deletes the samples and idempotency keys expired at now.
	PurgeExpired(ctx context.Context, now time.Time) (PurgeCount, error)
}

// expired reports whether a sample expiring at exp is gone at now.
func expired(exp, now time.Time) bool { return !exp.IsZero() && !now.Before(exp) }

// ListSamples implements Lifecycle.
func (m *Memory) ListSamples(_ context.Context, c Cursor, limit int) ([]*Sample, error) {
	if err := checkCursor(c); err != nil {
		return nil, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Sample
	for _, s := range m.samples {
		if expired(s.ExpiresAt, now) || !c.after(s.CreatedAt, s.ID) {
			continue
		}
		x := *s
		x.Reported, x.Elements = len(s.Elements), nil
		out = append(out, &x)
	}
	slices.SortFunc(out, func(a, b *Sample) int {
		if d := a.CreatedAt.Compare(b.CreatedAt); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))], nil
}

// DeleteSample implements Lifecycle.
func (m *Memory) DeleteSample(_ context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.samples[id]
	if !ok {
		return ErrNotFound
	}
	delete(m.samples, id)
	if expired(s.ExpiresAt, time.Now()) {
		return ErrNotFound
	}
	return nil
}

// ListDatasets implements Lifecycle.
func (m *Memory) ListDatasets(_ context.Context, c Cursor, limit int) ([]Dataset, [][]Release, error) {
	if err := checkCursor(c); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ds []Dataset
	for _, d := range m.datasets {
		if c.after(d.CreatedAt, d.Name) {
			ds = append(ds, *d)
		}
	}
	slices.SortFunc(ds, func(a, b Dataset) int {
		if d := a.CreatedAt.Compare(b.CreatedAt); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	ds = ds[:min(limit, len(ds))]
	rel := make([][]Release, len(ds))
	for i, d := range ds {
		rel[i] = slices.Clone(m.ledger[d.Name])
	}
	return ds, rel, nil
}

// ListStates implements Lifecycle.
func (m *Memory) ListStates(_ context.Context, kind string, c Cursor, limit int) ([]*StateRecord, error) {
	if err := checkCursor(c); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*StateRecord
	for _, r := range m.states {
		if r.Kind == kind && c.after(r.CreatedAt, r.ID) {
			out = append(out, cloneState(r))
		}
	}
	slices.SortFunc(out, func(a, b *StateRecord) int {
		if d := a.CreatedAt.Compare(b.CreatedAt); d != 0 {
			return d
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))], nil
}

// DeleteState implements Lifecycle. It waits for a running UpdateState of
// the record, as a row lock does in PostgreSQL.
func (m *Memory) DeleteState(_ context.Context, kind, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	k := stateKey(kind, id)
	unlock, err := m.lockState(k)
	if err != nil {
		return err
	}
	defer unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.states[k]; !ok {
		return ErrNotFound
	}
	delete(m.states, k)
	delete(m.stateLocks, k)
	return nil
}

// PurgeExpired implements Lifecycle.
func (m *Memory) PurgeExpired(_ context.Context, now time.Time) (PurgeCount, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n PurgeCount
	for id, s := range m.samples {
		if expired(s.ExpiresAt, now) {
			delete(m.samples, id)
			n.Samples++
		}
	}
	for k, r := range m.idem {
		if !r.live(now) {
			delete(m.idem, k)
			n.IdempotencyKeys++
		}
	}
	return n, nil
}

// Fits reports whether charging (eps, delta) to d stays within its budget,
// with the same rounding slack the stores apply when they charge.
func Fits(d Dataset, eps, delta float64) bool { return fits(d, eps, delta) }
