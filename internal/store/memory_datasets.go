package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
)

// Datasets and the privacy ledger in memory: Memory.datasets and
// Memory.ledger. chargeLocked is called by the other domains' writes under
// the same lock.

// chargeLocked applies c; m.mu must be held.
func (m *Memory) chargeLocked(c *Charge, now time.Time) error {
	d, ok := m.datasets[c.Dataset]
	if !ok {
		return fmt.Errorf("charging dataset: %w", ErrNotFound)
	}
	after, err := admit(*d, c, func() (*accounting.PLD, error) { return m.composedLocked(c.Dataset) })
	if err != nil {
		return err
	}
	d.SpentEpsilon += c.Epsilon
	d.SpentDelta += c.Delta
	m.ledger[c.Dataset] = append(m.ledger[c.Dataset], Release{Kind: c.Kind, Ref: c.Ref, Epsilon: c.Epsilon, Delta: c.Delta, CreatedAt: now, Mechanism: c.mechanism()})
	if after != nil {
		m.composed.Put(c.Dataset, int64(len(m.ledger[c.Dataset])), after)
	}
	return nil
}

// composedLocked returns the PLD of name's ledger: the cached composition
// extended by the releases recorded since (the cache's position is the
// number of releases composed). m.mu must be held.
func (m *Memory) composedLocked(name string) (*accounting.PLD, error) {
	rel := m.ledger[name]
	pos, p, ok := m.composed.Get(name)
	if !ok || pos > int64(len(rel)) {
		pos, p = 0, nil
	}
	p, err := composeReleases(p, rel[pos:])
	if err != nil {
		return nil, err
	}
	m.composed.Put(name, int64(len(rel)), p)
	return p, nil
}

// ComposedLedger implements Datasets.
func (m *Memory) ComposedLedger(_ context.Context, name string) (*accounting.PLD, error) {
	if err := checkID(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.datasets[name]; !ok {
		return nil, ErrNotFound
	}
	return m.composedLocked(name)
}

// CreateDataset implements Datasets.
func (m *Memory) CreateDataset(_ context.Context, d Dataset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.datasets[d.Name]; ok {
		return ErrExists
	}
	d.SpentEpsilon, d.SpentDelta = 0, 0
	d.Accounting = d.accounting()
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now().UTC()
	}
	m.datasets[d.Name] = &d
	return nil
}

// GetDataset implements Datasets.
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

// ListDatasets implements Datasets.
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

// admitLocked admits a new sample or state of dataset (empty: none) with
// charge (nil: none) made at at: the dataset must exist, as PostgreSQL's
// foreign key requires, and the charge must fit; what names the write in
// errors. m.mu must be held.
func (m *Memory) admitLocked(dataset string, charge *Charge, at time.Time, what string) error {
	if dataset != "" {
		if _, ok := m.datasets[dataset]; !ok {
			return fmt.Errorf("%s for dataset: %w", what, ErrNotFound)
		}
	}
	if charge != nil {
		return m.chargeLocked(charge, at)
	}
	return nil
}
