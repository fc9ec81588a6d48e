package store

import (
	"context"
	"sync"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
)

// The in-memory store's struct, health and PurgeExpired. Each domain is in
// its own memory_<domain>.go, mirroring postgres_<domain>.go.

// Memory is the embedded in-process store, used when no database is
// configured. Its contents live as long as the process.
type Memory struct {
	mu       sync.Mutex
	tables   *tableLRU
	samples  map[string]*Sample
	datasets map[string]*Dataset
	ledger   map[string][]Release
	// composed caches each dataset's composed ledger (bounded).
	composed *accounting.Cache
	states   map[string]*StateRecord
	// stateLocks serialise UpdateState per record without holding mu while
	// fn runs, as a row lock does in PostgreSQL.
	stateLocks map[string]*sync.Mutex
	// idem holds idempotency records by key (memory_idempotency.go).
	idem map[string]*IdempotencyRecord
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		tables:     newTableLRU(DefaultTableCacheBytes),
		samples:    map[string]*Sample{},
		datasets:   map[string]*Dataset{},
		ledger:     map[string][]Release{},
		composed:   accounting.NewCache(ledgerCachePoints),
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

// PurgeExpired implements Purger: each expiring domain purges its own
// records (purgeExpiredSamplesLocked, purgeExpiredIdempotencyLocked) under
// one lock.
func (m *Memory) PurgeExpired(_ context.Context, now time.Time) (PurgeCount, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return PurgeCount{Samples: m.purgeExpiredSamplesLocked(now), IdempotencyKeys: m.purgeExpiredIdempotencyLocked(now)}, nil
}
