package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Samples in memory: Memory.samples.

// CreateSample implements Samples.
func (m *Memory) CreateSample(_ context.Context, s *Sample, charge *Charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.samples[s.ID]; ok {
		return ErrExists
	}
	if err := m.admitLocked(s.Dataset, charge, s.CreatedAt, "storing sample"); err != nil {
		return err
	}
	c := *s
	c.Header = slices.Clone(s.Header)
	c.Elements = slices.Clone(s.Elements)
	m.samples[s.ID] = &c
	return nil
}

// GetSample implements Samples.
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

// ListSamples implements Samples.
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

// DeleteSample implements Samples.
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

// purgeExpiredSamplesLocked deletes the samples expired at now and returns
// how many; m.mu must be held.
func (m *Memory) purgeExpiredSamplesLocked(now time.Time) int64 {
	var n int64
	for id, s := range m.samples {
		if expired(s.ExpiresAt, now) {
			delete(m.samples, id)
			n++
		}
	}
	return n
}
