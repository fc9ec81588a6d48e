package lru

import "testing"

// TestCache checks the cost bound and least-recently-used eviction order
// against a hand-worked sequence.
func TestCache(t *testing.T) {
	t.Parallel()
	c := New[string, []byte](10, func(b []byte) int64 { return int64(len(b)) })
	c.Add("a", make([]byte, 4))
	c.Add("b", make([]byte, 4))
	if _, ok := c.Get("a"); !ok { // a becomes the most recent
		t.Fatal("a missing")
	}
	c.Add("c", make([]byte, 4)) // 12 > 10: evicts b, the least recent
	for _, tc := range []struct {
		key  string
		want bool
	}{{"a", true}, {"b", false}, {"c", true}} {
		t.Run(tc.key, func(t *testing.T) {
			if _, ok := c.Get(tc.key); ok != tc.want {
				t.Errorf("Get(%q) present = %v, want %v", tc.key, ok, tc.want)
			}
		})
	}
	if got := c.Cost(); got != 8 {
		t.Errorf("cost = %d, want 8", got)
	}
	if got := c.Add("huge", make([]byte, 11)); len(got) != 11 || c.Len() != 2 {
		t.Errorf("an entry above the capacity must be returned, not cached: len %d, entries %d", len(got), c.Len())
	}
	if got := c.Add("a", make([]byte, 1)); len(got) != 4 {
		t.Errorf("Add of a cached key must return the cached value, got len %d", len(got))
	}
}

// TestCountBound: a nil cost bounds the number of entries.
func TestCountBound(t *testing.T) {
	t.Parallel()
	c := New[int, int](3, nil)
	for i := range 10 {
		c.Add(i, i)
	}
	if c.Len() != 3 {
		t.Fatalf("entries = %d, want 3", c.Len())
	}
	for i := 7; i < 10; i++ {
		if v, ok := c.Get(i); !ok || v != i {
			t.Errorf("Get(%d) = %d, %v; want the 3 most recent kept", i, v, ok)
		}
	}
}
