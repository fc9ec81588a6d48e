package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, evicting the least recently used entries when
// the total cost of its entries exceeds its capacity. The zero value is not
// usable: call New.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	cost  func(V) int64
	order *list.List // front: most recently used; values are *entry[K, V]
	byKey map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns a cache holding entries of total cost at most capacity; cost
// gives an entry's cost (nil: 1 per entry, a count bound). Costs must not
// change while an entry is cached.
func New[K comparable, V any](capacity int64, cost func(V) int64) *Cache[K, V] {
	if cost == nil {
		cost = func(V) int64 { return 1 }
	}
	return &Cache[K, V]{max: capacity, cost: cost, order: list.New(), byKey: map[K]*list.Element{}}
}

// Get returns the value cached under key and marks it most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Add caches val under key unless key is cached already, and returns the
// cached value (val, or the one already there). A value whose cost alone
// exceeds the capacity is returned but not cached. Least recently used
// entries are evicted until the total cost fits.
func (c *Cache[K, V]) Add(key K, val V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).val
	}
	cost := c.cost(val)
	if cost > c.max {
		return val
	}
	c.byKey[key] = c.order.PushFront(&entry[K, V]{key: key, val: val, cost: cost})
	c.used += cost
	c.evict()
	return val
}

// evict drops the least recently used entries until the total cost fits;
// the caller holds c.mu.
func (c *Cache[K, V]) evict() {
	for c.used > c.max {
		old := c.order.Back()
		en := old.Value.(*entry[K, V])
		c.order.Remove(old)
		delete(c.byKey, en.key)
		c.used -= en.cost
	}
}

// Replace caches val under key in place of old when old is what key
// holds (compared with same), marks it most recently used, and reports
// whether it did. The entry's cost becomes val's; least recently used
// entries are evicted until the total cost fits, as Add does.
func (c *Cache[K, V]) Replace(key K, old, val V, same func(a, b V) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok || !same(e.Value.(*entry[K, V]).val, old) {
		return false
	}
	en := e.Value.(*entry[K, V])
	cost := c.cost(val)
	c.used += cost - en.cost
	en.val, en.cost = val, cost
	c.order.MoveToFront(e)
	c.evict()
	return true
}

// Len returns the number of cached entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Cost returns the total cost of the cached entries.
func (c *Cache[K, V]) Cost() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
