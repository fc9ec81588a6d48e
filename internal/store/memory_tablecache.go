package store

import (
	"container/list"
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
)

// Tables in memory: a byte-bounded LRU.

// GetTable implements Tables.
func (m *Memory) GetTable(_ context.Context, key string) ([]byte, bool, error) {
	d, ok := m.tables.get(key)
	return d, ok, nil
}

// PutTable implements Tables.
func (m *Memory) PutTable(_ context.Context, key string, data []byte) error {
	m.tables.put(key, data)
	return nil
}

// GetTables implements TableBatcher.
func (m *Memory) GetTables(_ context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i], _ = m.tables.get(k)
	}
	return out, nil
}

// PutTables implements TableBatcher.
func (m *Memory) PutTables(_ context.Context, entries []TableEntry) error {
	for _, e := range entries {
		m.tables.put(e.Key, e.Data)
	}
	return nil
}

// DeleteTable implements TableDeleter.
func (m *Memory) DeleteTable(_ context.Context, key string) error {
	m.tables.remove(key)
	return nil
}

// RecentTables implements TableLister.
func (m *Memory) RecentTables(_ context.Context, prefix string, limit int) ([]TableUse, error) {
	return m.tables.recent(prefix, limit), nil
}

// TouchTables implements TableToucher.
func (m *Memory) TouchTables(_ context.Context, keys []string) error {
	for _, k := range keys {
		m.tables.touch(k)
	}
	return nil
}

// LimitTableCache implements TableCacheLimiter.
func (m *Memory) LimitTableCache(bytes int64) { m.tables.setMax(bytes) }

// TableCacheBytes returns the total size of the cached tables.
func (m *Memory) TableCacheBytes(_ context.Context) (int64, error) { return m.tables.bytes(), nil }

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

// touch marks the table under key most recently used, if there is one.
func (c *tableLRU) touch(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[tableDigest(key)]; ok && e.Value.(*lruEntry).params == key {
		c.order.MoveToFront(e)
	}
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

// remove drops the table stored under key, if any.
func (c *tableLRU) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[tableDigest(key)]
	if !ok || e.Value.(*lruEntry).params != key {
		return
	}
	c.order.Remove(e)
	delete(c.byKey, e.Value.(*lruEntry).digest)
	c.size -= tableSize(key, e.Value.(*lruEntry).data)
}

// recent lists the tables whose keys begin with prefix, most recently used
// first, at most limit of them, without marking them used.
func (c *tableLRU) recent(prefix string, limit int) []TableUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TableUse
	for e := c.order.Front(); e != nil && len(out) < limit; e = e.Next() {
		if en := e.Value.(*lruEntry); strings.HasPrefix(en.params, prefix) {
			out = append(out, TableUse{Key: en.params, Size: tableSize(en.params, en.data)})
		}
	}
	return out
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
