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

// TestReplace: Replace swaps the value only when the key holds the one
// named (a hand-worked sequence), takes the new value's cost, marks it most
// recently used and evicts the least recently used until the cost fits.
func TestReplace(t *testing.T) {
	t.Parallel()
	same := func(a, b []byte) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }
	c := New[string, []byte](10, func(b []byte) int64 { return int64(len(b)) })
	a, b := make([]byte, 3), make([]byte, 3)
	c.Add("a", a)
	c.Add("b", b)
	for _, tc := range []struct {
		name     string
		key      string
		old      []byte
		want     bool
		wantCost int64
	}{
		{"a key not cached", "z", a, false, 6},
		{"another value than the cached one", "a", b, false, 6},
		{"the cached value", "a", a, true, 8},
	} {
		if got := c.Replace(tc.key, tc.old, make([]byte, 5), same); got != tc.want || c.Cost() != tc.wantCost {
			t.Fatalf("%s: Replace = %v (cost %d), want %v (cost %d)", tc.name, got, c.Cost(), tc.want, tc.wantCost)
		}
	}
	if v, _ := c.Get("a"); len(v) != 5 {
		t.Fatalf("a holds %d bytes after the replace, want 5", len(v))
	}
	// b becomes the most recent; replacing it by 6 bytes (11 > 10) evicts
	// a, the least recent.
	v, _ := c.Get("b")
	if !c.Replace("b", v, make([]byte, 6), same) {
		t.Fatal("b not replaced")
	}
	if _, ok := c.Get("a"); ok || c.Cost() != 6 || c.Len() != 1 {
		t.Fatalf("after the replace: a cached %v, cost %d, %d entries; want a evicted, cost 6, 1 entry", ok, c.Cost(), c.Len())
	}
}
