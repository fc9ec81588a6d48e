package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// tablesChecks are the checks of the Tables domain.
func tablesChecks() []check {
	return []check{
		{"tables", testTables},
		{"table cache counts bytes and keeps its bound", testTableCacheBytes},
	}
}

// tableCacheMeter is a store whose table cache can be bounded and measured
// (both stores).
type tableCacheMeter interface {
	store.TableCacheLimiter
	TableCacheBytes(ctx context.Context) (int64, error)
}

// testTableCacheBytes: the cache counts each table as the length of its key
// plus its data, once however often it is put; a table of exactly the bound
// is kept (evicting every other), one byte more is not stored; after the
// bound is lowered, the next put leaves the cache within the new bound,
// keeping the most recently used tables.
func testTableCacheBytes(t *testing.T, s store.Store) {
	m, ok := s.(tableCacheMeter)
	if !ok {
		t.Skip("the store's table cache cannot be bounded and measured")
	}
	ctx := context.Background()
	m.LimitTableCache(1000)
	steps := []struct {
		name  string
		key   string
		size  int // bytes of data
		limit int64
		bytes int64    // want TableCacheBytes after the put
		held  []string // want these keys cached
	}{
		{"first table", "a", 99, 1000, 100, []string{"a"}},
		{"second table", "bb", 198, 1000, 300, []string{"a", "bb"}},
		{"the same key again", "bb", 500, 1000, 300, []string{"a", "bb"}},
		{"fills the bound exactly", "ccc", 697, 1000, 1000, []string{"a", "bb", "ccc"}},
		{"one byte over evicts the least recently used", "d", 0, 1000, 901, []string{"bb", "ccc", "d"}},
		{"a table of exactly the bound evicts all others", "e", 999, 1000, 1000, []string{"e"}},
		{"a table over the bound is not stored", "f", 1000, 1000, 1000, []string{"e"}},
		{"a lower bound holds after the next put", "g", 9, 500, 10, []string{"g"}},
		{"small tables fill the lower bound", "h", 489, 500, 500, []string{"g", "h"}},
	}
	for _, st := range steps {
		m.LimitTableCache(st.limit)
		if err := s.PutTable(ctx, st.key, make([]byte, st.size)); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		n, err := m.TableCacheBytes(ctx)
		if err != nil || n != st.bytes {
			t.Fatalf("%s: the cache holds %d bytes (%v), want %d", st.name, n, err, st.bytes)
		}
		for _, k := range []string{"a", "bb", "ccc", "d", "e", "f", "g", "h"} {
			_, held, err := s.GetTable(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if held != slices.Contains(st.held, k) {
				t.Fatalf("%s: table %s cached %v, want the cache to hold %v", st.name, k, held, st.held)
			}
		}
	}
}

func testTables(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, ok, err := s.GetTable(ctx, "k"); err != nil || ok {
		t.Fatalf("empty cache: ok=%v err=%v", ok, err)
	}
	if err := s.PutTable(ctx, "k", []byte("one")); err != nil {
		t.Fatal(err)
	}
	// Tables are pure functions of their key: the first put wins.
	if err := s.PutTable(ctx, "k", []byte("two")); err != nil {
		t.Fatal(err)
	}
	d, ok, err := s.GetTable(ctx, "k")
	if err != nil || !ok || string(d) != "one" {
		t.Fatalf("got %q ok=%v err=%v, want one", d, ok, err)
	}
	// Keys of any length (a custom scheme of 10^5 probabilities makes a
	// key of megabytes; PostgreSQL refused text keys past 8191 bytes,
	// SQLSTATE 54000) and of any bytes, each its own table.
	long := strings.Repeat("0.123456789,", 200_000)
	for i, key := range []string{long + "a", long + "b", "k\x00", "\xff"} {
		if err := s.PutTable(ctx, key, []byte{byte(i)}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	for i, key := range []string{long + "a", long + "b", "k\x00", "\xff"} {
		if d, ok, err := s.GetTable(ctx, key); err != nil || !ok || len(d) != 1 || d[0] != byte(i) {
			t.Fatalf("get %d: %v %v %v", i, d, ok, err)
		}
	}
	if _, ok, err := s.GetTable(ctx, long); err != nil || ok {
		t.Fatalf("a prefix of a stored key: ok=%v err=%v, want a miss", ok, err)
	}
}
