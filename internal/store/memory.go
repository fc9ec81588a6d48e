package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the embedded in-process store, used when no database is
// configured. Its contents live as long as the process.
type Memory struct {
	mu       sync.Mutex
	tables   *tableLRU
	samples  map[string]*Sample
	datasets map[string]*Dataset
	ledger   map[string][]Release
	states   map[string]*StateRecord
	// stateLocks serialise UpdateState per record without holding mu while
	// fn runs, as a row lock does in PostgreSQL.
	stateLocks map[string]*sync.Mutex
	// idem holds idempotency records by key (idempotency.go).
	idem map[string]*IdempotencyRecord
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		tables:     newTableLRU(DefaultTableCacheBytes),
		samples:    map[string]*Sample{},
		datasets:   map[string]*Dataset{},
		ledger:     map[string][]Release{},
		states:     map[string]*StateRecord{},
		stateLocks: map[string]*sync.Mutex{},
	}
}

// Ping always succeeds.
func (m *Memory) Ping(context.Context) error { return nil }

// Ready always succeeds: the in-memory store has no schema.
func (m *Memory) Ready(context.Context) error { return nil }

// Close is a no-op.
func (m *Memory) Close() {}

// GetTable implements Store.
func (m *Memory) GetTable(_ context.Context, key string) ([]byte, bool, error) {
	d, ok := m.tables.get(key)
	return d, ok, nil
}

// PutTable implements Store.
func (m *Memory) PutTable(_ context.Context, key string, data []byte) error {
	m.tables.put(key, data)
	return nil
}

// chargeLocked applies c; m.mu must be held.
func (m *Memory) chargeLocked(c *Charge, now time.Time) error {
	d, ok := m.datasets[c.Dataset]
	if !ok {
		return fmt.Errorf("charging dataset: %w", ErrNotFound)
	}
	if !fits(*d, c.Epsilon, c.Delta) {
		return ErrBudget
	}
	d.SpentEpsilon += c.Epsilon
	d.SpentDelta += c.Delta
	m.ledger[c.Dataset] = append(m.ledger[c.Dataset], Release{Kind: c.Kind, Ref: c.Ref, Epsilon: c.Epsilon, Delta: c.Delta, CreatedAt: now})
	return nil
}

// CreateSample implements Store.
func (m *Memory) CreateSample(_ context.Context, s *Sample, charge *Charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.samples[s.ID]; ok {
		return ErrExists
	}
	if charge != nil {
		if err := m.chargeLocked(charge, s.CreatedAt); err != nil {
			return err
		}
	}
	c := *s
	c.Header = slices.Clone(s.Header)
	c.Elements = slices.Clone(s.Elements)
	m.samples[s.ID] = &c
	return nil
}

// GetSample implements Store.
func (m *Memory) GetSample(_ context.Context, id string) (*Sample, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.samples[id]
	if !ok {
		return nil, ErrNotFound
	}
	if expired(s.ExpiresAt, time.Now()) { // lazy purge
		delete(m.samples, id)
		return nil, ErrNotFound
	}
	c := *s // elements are never mutated after creation: share them
	return &c, nil
}

// CreateDataset implements Store.
func (m *Memory) CreateDataset(_ context.Context, d Dataset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.datasets[d.Name]; ok {
		return ErrExists
	}
	d.SpentEpsilon, d.SpentDelta = 0, 0
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now().UTC()
	}
	m.datasets[d.Name] = &d
	return nil
}

// GetDataset implements Store.
func (m *Memory) GetDataset(_ context.Context, name string) (Dataset, []Release, error) {
	if err := checkID(name); err != nil {
		return Dataset{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.datasets[name]
	if !ok {
		return Dataset{}, nil, ErrNotFound
	}
	return *d, slices.Clone(m.ledger[name]), nil
}

func stateKey(kind, id string) string { return kind + "/" + id }

func cloneState(r *StateRecord) *StateRecord {
	c := *r
	c.Config = slices.Clone(r.Config)
	c.State = slices.Clone(r.State)
	return &c
}

// CreateState implements Store.
func (m *Memory) CreateState(_ context.Context, rec *StateRecord, charge *Charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := stateKey(rec.Kind, rec.ID)
	if _, ok := m.states[k]; ok {
		return ErrExists
	}
	if rec.Dataset != "" {
		if _, ok := m.datasets[rec.Dataset]; !ok {
			return fmt.Errorf("creating state for dataset: %w", ErrNotFound)
		}
	}
	if charge != nil {
		if err := m.chargeLocked(charge, rec.CreatedAt); err != nil {
			return err
		}
	}
	m.states[k] = cloneState(rec)
	m.stateLocks[k] = &sync.Mutex{}
	return nil
}

// GetState implements Store.
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

// lockState takes the per-record lock of state record k (what a row lock
// is in PostgreSQL), waiting for a running update of it, and returns its
// release; ErrNotFound when the record does not exist.
func (m *Memory) lockState(k string) (unlock func(), err error) {
	m.mu.Lock()
	lock, ok := m.stateLocks[k]
	m.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	lock.Lock()
	return lock.Unlock, nil
}

// UpdateState implements Store.
func (m *Memory) UpdateState(_ context.Context, kind, id string, fn func(*StateRecord) (*Charge, error)) error {
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
