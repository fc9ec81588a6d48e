package store

import (
	"container/list"
	"context"
	"slices"
	"sync"
)

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
	order *list.List // front: most recently used; values are *lruEntry
	byKey map[string]*list.Element
}

type lruEntry struct {
	key  string
	data []byte
}

func newTableLRU(max int64) *tableLRU {
	return &tableLRU{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *tableLRU) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
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
	if _, ok := c.byKey[key]; ok || int64(len(data)) > c.max {
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key: key, data: slices.Clone(data)})
	c.size += int64(len(data))
	c.evictLocked()
}

func (c *tableLRU) evictLocked() {
	for c.size > c.max {
		old := c.order.Back()
		e := old.Value.(*lruEntry)
		c.order.Remove(old)
		delete(c.byKey, e.key)
		c.size -= int64(len(e.data))
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
