package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Streams and counters in memory: Memory.states, serialised per record by
// Memory.stateLocks.

func stateKey(kind, id string) string { return kind + "/" + id }

func cloneState(r *StateRecord) *StateRecord {
	c := *r
	c.Config = slices.Clone(r.Config)
	c.State = slices.Clone(r.State)
	return &c
}

// CreateState implements States.
func (m *Memory) CreateState(_ context.Context, rec *StateRecord, charge *Charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := stateKey(rec.Kind, rec.ID)
	if _, ok := m.states[k]; ok {
		return ErrExists
	}
	if err := m.admitLocked(rec.Dataset, charge, rec.CreatedAt, "creating state"); err != nil {
		return err
	}
	m.states[k] = cloneState(rec)
	m.stateLocks[k] = &sync.Mutex{}
	return nil
}

// GetState implements States.
func (m *Memory) GetState(_ context.Context, kind, id string) (*StateRecord, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.states[stateKey(kind, id)]
	if !ok {
		return nil, ErrNotFound
	}
	return cloneState(r), nil
}

// lockState checks id and takes the per-record lock of state record
// (kind, id) (what a row lock is in PostgreSQL), waiting for a running
// update of it; it returns the record's key and the lock's release, and
// ErrNotFound when the record does not exist.
func (m *Memory) lockState(kind, id string) (k string, unlock func(), err error) {
	if err := checkID(id); err != nil {
		return "", nil, err
	}
	k = stateKey(kind, id)
	m.mu.Lock()
	lock, ok := m.stateLocks[k]
	m.mu.Unlock()
	if !ok {
		return "", nil, ErrNotFound
	}
	lock.Lock()
	return k, lock.Unlock, nil
}

// UpdateState implements States.
func (m *Memory) UpdateState(_ context.Context, kind, id string, fn func(*StateRecord) (*Charge, error)) error {
	k, unlock, err := m.lockState(kind, id)
	if err != nil {
		return err
	}
	defer unlock()

	m.mu.Lock()
	cur, ok := m.states[k]
	if !ok { // deleted while we waited for the lock
		m.mu.Unlock()
		return ErrNotFound
	}
	work := cloneState(cur)
	m.mu.Unlock()
	charge, err := fn(work)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if charge != nil {
		if err := m.chargeLocked(charge, time.Now().UTC()); err != nil {
			return err
		}
	}
	work.Kind, work.ID = kind, id
	work.UpdatedAt = time.Now().UTC()
	m.states[k] = work
	return nil
}

// ListStates implements States.
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

// DeleteState implements States. It waits for a running UpdateState of
// the record, as a row lock does in PostgreSQL.
func (m *Memory) DeleteState(_ context.Context, kind, id string) error {
	k, unlock, err := m.lockState(kind, id)
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
