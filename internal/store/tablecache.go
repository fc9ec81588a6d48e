package store

import (
	"container/list"
	"context"
	"crypto/sha256"
	"slices"
	"sync"
)

// tableDigest is the key of a cached table in both stores: the SHA-256
// digest of its canonical parameters (the key the service builds), 32 bytes
// however long the parameters are (a custom scheme lists up to
// PWSD_MAX_CUSTOM_Q probabilities). The parameters are stored beside the
// digest and compared on every read, so that a collision could only cost a
// recomputation, never serve one table for another.
func tableDigest(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// tableSize is what a cached table counts against the cache's bound: its
// data and its stored parameters.
func tableSize(key string, data []byte) int64 { return int64(len(key) + len(data)) }

// DefaultTableCacheBytes bounds the cached tables (PWSD_TABLE_CACHE_BYTES)
// when nothing else is configured: the least recently used tables are
// evicted until the sum of their sizes is within it. Tables are pure
// functions of their keys, so eviction costs only recomputation.
const DefaultTableCacheBytes = 256 << 20

// TableCacheLimiter is implemented by stores whose table cache can be
// bounded; pwsd sets PWSD_TABLE_CACHE_BYTES through it.
type TableCacheLimiter interface {
	// LimitTableCache bounds the table cache to bytes (> 0).
	LimitTableCache(bytes int64)
}

// tableLRU is the in-memory store's table cache: a byte-bounded LRU.
type tableLRU struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List                          // front: most recently used; values are *lruEntry
	byKey map[[sha256.Size]byte]*list.Element // by tableDigest
}

type lruEntry struct {
	digest [sha256.Size]byte
	params string // the key, compared on every read
	data   []byte
}

func newTableLRU(max int64) *tableLRU {
	return &tableLRU{max: max, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

func (c *tableLRU) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[tableDigest(key)]
	if !ok || e.Value.(*lruEntry).params != key {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).data, true
}

// put stores data under key unless present or larger than the bound, then
// evicts the least recently used tables until the total is within it.
func (c *tableLRU) put(key string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := tableDigest(key)
	if _, ok := c.byKey[d]; ok || tableSize(key, data) > c.max {
		return
	}
	c.byKey[d] = c.order.PushFront(&lruEntry{digest: d, params: key, data: slices.Clone(data)})
	c.size += tableSize(key, data)
	c.evictLocked()
}

func (c *tableLRU) evictLocked() {
	for c.size > c.max {
		old := c.order.Back()
		e := old.Value.(*lruEntry)
		c.order.Remove(old)
		delete(c.byKey, e.digest)
		c.size -= tableSize(e.params, e.data)
	}
}

func (c *tableLRU) setMax(max int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max = max
	c.evictLocked()
}

// bytes returns the total size of the cached tables.
func (c *tableLRU) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// LimitTableCache implements TableCacheLimiter.
func (m *Memory) LimitTableCache(bytes int64) { m.tables.setMax(bytes) }

// TableCacheBytes returns the total size of the cached tables.
func (m *Memory) TableCacheBytes(_ context.Context) (int64, error) { return m.tables.bytes(), nil }
