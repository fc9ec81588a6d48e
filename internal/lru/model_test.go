package lru

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// model is the plain reference of Cache: entries in a slice, most recently
// used first, evicted from the end while the total cost passes capacity.
type model struct {
	capacity int64
	keys     []int
	vals     map[int]int
}

func (m *model) get(k int) (int, bool) {
	i := slices.Index(m.keys, k)
	if i < 0 {
		return 0, false
	}
	m.keys = append([]int{k}, slices.Delete(m.keys, i, i+1)...)
	return m.vals[k], true
}

func (m *model) add(k, v int) int {
	if old, ok := m.get(k); ok {
		return old
	}
	if int64(v) > m.capacity {
		return v
	}
	m.keys = append([]int{k}, m.keys...)
	m.vals[k] = v
	for m.cost() > m.capacity {
		last := m.keys[len(m.keys)-1]
		m.keys = m.keys[:len(m.keys)-1]
		delete(m.vals, last)
	}
	return v
}

func (m *model) cost() int64 {
	var c int64
	for _, k := range m.keys {
		c += int64(m.vals[k])
	}
	return c
}

// TestCacheMatchesModel runs random Get and Add sequences (a value is its
// own cost) against the plain reference: every answer, the entry count and
// the total cost agree after every step.
func TestCacheMatchesModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for run := range 50 {
		capacity := int64(1 + rng.IntN(40))
		c := New[int, int](capacity, func(v int) int64 { return int64(v) })
		m := &model{capacity: capacity, vals: map[int]int{}}
		for step := range 400 {
			k := rng.IntN(12)
			if rng.IntN(2) == 0 {
				got, ok := c.Get(k)
				want, wok := m.get(k)
				if got != want || ok != wok {
					t.Fatalf("run %d step %d: Get(%d) = %d, %v; the model %d, %v", run, step, k, got, ok, want, wok)
				}
			} else {
				v := 1 + rng.IntN(int(capacity)+3) // sometimes above the capacity
				if got, want := c.Add(k, v), m.add(k, v); got != want {
					t.Fatalf("run %d step %d: Add(%d, %d) = %d; the model %d", run, step, k, v, got, want)
				}
			}
			if c.Len() != len(m.keys) || c.Cost() != m.cost() || c.Cost() > capacity {
				t.Fatalf("run %d step %d: %d entries of cost %d; the model %d of cost %d (capacity %d)", run, step, c.Len(), c.Cost(), len(m.keys), m.cost(), capacity)
			}
		}
	}
}

// TestCacheConcurrent: concurrent Gets and Adds keep the bound (run with
// -race in make test).
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := New[int, int](50, func(v int) int64 { return int64(v) })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for range 2000 {
				k := rng.IntN(30)
				if v, ok := c.Get(k); ok && v != k%7+1 {
					t.Errorf("key %d holds %d, want %d", k, v, k%7+1)
					return
				}
				c.Add(k, k%7+1)
			}
		}()
	}
	wg.Wait()
	if c.Cost() > 50 {
		t.Fatalf("cost %d above the capacity 50", c.Cost())
	}
}
