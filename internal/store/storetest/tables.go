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
		{"a deleted table is gone and can be stored anew", testDeleteTable},
		{"a batch of tables is stored and read as one put and get each", testPutTables},
		{"tables are listed by prefix, most recently used first", testRecentTables},
		{"a touched table is used now; touching reads nothing", testTouchTables},
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

// testDeleteTable: DeleteTable removes the table of its key only (not one
// whose key it is a prefix of), frees its bytes, is a no-op for an absent
// key, and a put after it stores the new data (a put over a present key
// keeps the old).
func testDeleteTable(t *testing.T, s store.Store) {
	d, ok := s.(store.TableDeleter)
	if !ok {
		t.Skip("the store cannot delete tables")
	}
	ctx := context.Background()
	for _, k := range []string{"kept", "kept+", "other"} {
		if err := s.PutTable(ctx, k, []byte("old "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteTable(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteTable(ctx, "absent"); err != nil {
		t.Fatalf("deleting an absent table: %v", err)
	}
	want := map[string]string{"kept": "", "kept+": "old kept+", "other": "old other"}
	for k, v := range want {
		data, ok, err := s.GetTable(ctx, k)
		if err != nil || ok != (v != "") || string(data) != v {
			t.Fatalf("after the delete, %s holds %q (ok %v, %v), want %q", k, data, ok, err, v)
		}
	}
	if m, ok := s.(tableCacheMeter); ok {
		if n, err := m.TableCacheBytes(ctx); err != nil || n != int64(len("kept+old kept+")+len("otherold other")) {
			t.Fatalf("the cache holds %d bytes (%v) after the delete, want the two tables left", n, err)
		}
	}
	if err := s.PutTable(ctx, "kept", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := s.GetTable(ctx, "kept"); err != nil || !ok || string(data) != "new" {
		t.Fatalf("a put after the delete stored %q (ok %v, %v), want new", data, ok, err)
	}
}

// testPutTables: PutTables stores each entry as PutTable would (the first
// of two entries of one key wins (and a key already stored keeps its
// table), an entry over the bound is skipped, and the batch leaves the
// cache within its bound, holding the most recently put tables); GetTables
// reads as GetTable does.
func testPutTables(t *testing.T, s store.Store) {
	b, ok := s.(store.TableBatcher)
	if !ok {
		t.Skip("the store cannot put tables in batches")
	}
	m, ok := s.(tableCacheMeter)
	if !ok {
		t.Skip("the store's table cache cannot be bounded and measured")
	}
	ctx := context.Background()
	m.LimitTableCache(1000)
	if err := s.PutTable(ctx, "old", make([]byte, 98)); err != nil {
		t.Fatal(err)
	}
	entries := []store.TableEntry{
		{Key: "old", Data: []byte("new")},
		{Key: "a", Data: make([]byte, 299)},
		{Key: "a", Data: []byte("second")},
		{Key: "big", Data: make([]byte, 1000)},
		{Key: "b", Data: make([]byte, 299)},
		{Key: "c", Data: make([]byte, 299)},
	}
	if err := b.PutTables(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if err := b.PutTables(ctx, nil); err != nil {
		t.Fatalf("an empty batch: %v", err)
	}
	want := map[string]int{"old": -1, "a": 299, "big": -1, "b": 299, "c": 299} // -1: not held
	for k, n := range want {
		data, ok, err := s.GetTable(ctx, k)
		if err != nil || ok != (n >= 0) || (ok && len(data) != n) {
			t.Fatalf("after the batch %s holds %d bytes (ok %v, %v), want %d", k, len(data), ok, err, n)
		}
	}
	if n, err := m.TableCacheBytes(ctx); err != nil || n != 900 {
		t.Fatalf("the cache holds %d bytes (%v), want 900", n, err)
	}
	// GetTables answers each key as GetTable does, repeats and absent keys
	// included, and marks what it reads used: after it, "a" is the most
	// recently used, so a put over the bound evicts "b" first.
	got, err := b.GetTables(ctx, []string{"c", "big", "a", "old", "a"})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{299, -1, 299, -1, 299} {
		if (n < 0) != (got[i] == nil) || (n >= 0 && len(got[i]) != n) {
			t.Fatalf("GetTables answer %d holds %d bytes (nil %v), want %d", i, len(got[i]), got[i] == nil, n)
		}
	}
	if got, err := b.GetTables(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetTables of no key: %v, %v", got, err)
	}
	if err := s.PutTable(ctx, "d", make([]byte, 199)); err != nil {
		t.Fatal(err)
	}
	for k, held := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok, err := s.GetTable(ctx, k); err != nil || ok != held {
			t.Fatalf("after GetTables and a put, %s held %v (%v), want %v", k, ok, err, held)
		}
	}
}

// testRecentTables: RecentTables lists the tables whose keys begin with the
// prefix (not one whose key is a prefix of it, nor others), most recently
// read or stored first, at most limit of them, each with its size (key plus
// data), and marks none used (listing twice gives the same order).
func testRecentTables(t *testing.T, s store.Store) {
	l, ok := s.(store.TableLister)
	if !ok {
		t.Skip("the store cannot list its tables")
	}
	ctx := context.Background()
	for _, k := range []string{"kept|a", "kept|b", "chunk|x", "kept|c", "kept"} {
		if err := s.PutTable(ctx, k, []byte("data of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.GetTable(ctx, "kept|a"); err != nil || !ok {
		t.Fatalf("kept|a: %v %v", ok, err)
	}
	for _, tc := range []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"kept|", 10, []string{"kept|a", "kept|c", "kept|b"}},
		{"kept|", 2, []string{"kept|a", "kept|c"}},
		{"kept|", 10, []string{"kept|a", "kept|c", "kept|b"}}, // the listing above marked nothing used
		{"chunk|", 10, []string{"chunk|x"}},
		{"none|", 10, nil},
		{"kept|", 0, nil},
	} {
		got, err := l.RecentTables(ctx, tc.prefix, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range got {
			keys = append(keys, u.Key)
			if want := int64(2*len(u.Key) + len("data of ")); u.Size != want {
				t.Errorf("%s: size %d, want %d", u.Key, u.Size, want)
			}
		}
		if !slices.Equal(keys, tc.want) {
			t.Fatalf("RecentTables(%q, %d) = %q, want %q", tc.prefix, tc.limit, keys, tc.want)
		}
	}
}

// testTouchTables: TouchTables marks the stored tables under its keys used
// now (they list first, in RecentTables' order), ignores a key that holds no
// table, and changes no table's data.
func testTouchTables(t *testing.T, s store.Store) {
	l, lists := s.(store.TableLister)
	tc, touches := s.(store.TableToucher)
	if !lists || !touches {
		t.Skip("the store cannot list or touch its tables")
	}
	ctx := context.Background()
	for _, k := range []string{"kept|a", "kept|b", "kept|c"} {
		if err := s.PutTable(ctx, k, []byte("data of "+k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		touch []string
		want  []string
	}{
		{nil, []string{"kept|c", "kept|b", "kept|a"}},
		{[]string{"kept|a"}, []string{"kept|a", "kept|c", "kept|b"}},
		{[]string{"kept|missing", "kept|b"}, []string{"kept|b", "kept|a", "kept|c"}},
		{[]string{}, []string{"kept|b", "kept|a", "kept|c"}},
	} {
		if err := tc.TouchTables(ctx, step.touch); err != nil {
			t.Fatal(err)
		}
		got, err := l.RecentTables(ctx, "kept|", 10)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range got {
			keys = append(keys, u.Key)
		}
		if !slices.Equal(keys, step.want) {
			t.Fatalf("after touching %q: RecentTables = %q, want %q", step.touch, keys, step.want)
		}
	}
	if _, ok, err := s.GetTable(ctx, "kept|missing"); err != nil || ok {
		t.Fatalf("touching a missing key stored it (%v, %v)", ok, err)
	}
	if data, ok, err := s.GetTable(ctx, "kept|a"); err != nil || !ok || string(data) != "data of kept|a" {
		t.Fatalf("kept|a after touches: %q %v %v", data, ok, err)
	}
}
