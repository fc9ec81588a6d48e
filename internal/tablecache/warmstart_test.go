package tablecache

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestWarmStartReadsTheLastUsedChunksWithinItsShare: a cache stored a
// parameter set's kept rows and 40 chunks; the last 10 were then read (so
// used last), and an entry under a kept-rows key of other settings was
// stored after everything (used last of all). A new cache whose chunk cache
// holds about the 40 chunks' cost warms one set, asked for one set and for
// four: it restores the real one (the other entry is not one of its keys
// and is left alone), reads chunks of at most half its chunk cache (the
// whole share of the sets found, however many were asked for: warmShare),
// and among them the 10 used last; with WarmStart not called it reads
// nothing.
func TestWarmStartReadsTheLastUsedChunksWithinItsShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, smp := keptParamsOf(t)
	m := sanitize.MethodDiscrete
	gs := []estimate.G{identityG}
	size := estimate.ChunkSize(p)
	// stored returns a store as the test's first cache left it (each case
	// has its own: reading chunks marks them used), the kept-rows key of
	// other settings and the chunks' cost in memory.
	stored := func(t *testing.T) (*store.Memory, string, int64) {
		st := store.NewMemory()
		first, err := New(Config{Store: st, KeptRowsSteps: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := first.Sanitizer(p, smp, m)
		if err != nil {
			t.Fatal(err)
		}
		ks := make([]int64, 40)
		for k := range ks {
			ks[k] = int64(k)
		}
		if _, err := first.ChunkSets(ctx, tb, gs, ks, Read{}); err != nil {
			t.Fatal(err)
		}
		first.Wait()
		var last []string
		for k := int64(30); k < 40; k++ {
			last = append(last, first.chunkKey(tb, identityG, size, k, false))
		}
		if got, err := st.GetTables(ctx, last); err != nil || len(got) != 10 || got[9] == nil {
			t.Fatalf("reading the last 10 chunks: %v", err)
		}
		other := strings.Replace(first.KeptRowsKey(p, smp, m), "|bytes=", "|bytes=1", 1)
		if err := st.PutTable(ctx, other, []byte("not kept rows")); err != nil {
			t.Fatal(err)
		}
		return st, other, first.chunks.Cost()
	}

	for _, sets := range []int{1, 4, 0} {
		warm := sets > 0
		st, other, all := stored(t)
		c, err := New(Config{Store: st, KeptRowsSteps: 1 << 20, Bytes: all})
		if err != nil {
			t.Fatal(err)
		}
		if warm {
			c.WarmStart(sets, gs)
		}
		c.Wait()
		w := c.WarmStartStats()
		if !warm {
			if w != (WarmStartStats{}) || c.KeptRowsStats().Restored != 0 || c.chunks.Len() != 0 {
				t.Fatalf("without a warm start: %+v, %d restored, %d chunks in memory", w, c.KeptRowsStats().Restored, c.chunks.Len())
			}
			continue
		}
		if w.Sets != 1 || c.KeptRowsStats().Restored != 1 || c.KeptRowsStats().Refused != 0 {
			t.Fatalf("%d sets asked: warm start %+v, kept rows %+v: want the one set restored, nothing refused", sets, w, c.KeptRowsStats())
		}
		if w.Chunks == 0 || w.Chunks >= 40 || w.ChunkBytes > all/2 || c.chunks.Cost() != w.ChunkBytes {
			t.Fatalf("%d sets asked: read %d chunks of %d bytes (memory holds %d), want some, fewer than 40, at most %d", sets, w.Chunks, w.ChunkBytes, c.chunks.Cost(), all/2)
		}
		if _, ok, _ := st.GetTable(ctx, other); !ok {
			t.Fatal("the entry of other settings was deleted")
		}
		tw, err := c.Sanitizer(p, smp, m)
		if err != nil || !tw.Restored() || c.KeptRowsStats().Restored != 1 {
			t.Fatalf("the warmed Table: %v, restored %v, %d restores", err, tw.Restored(), c.KeptRowsStats().Restored)
		}
		for k := int64(30); k < 40; k++ {
			if ch, err := c.storedChunk(ctx, c.chunkKeysOf(tw, identityG, size), identityG, size, k, false, true); err != nil || ch == nil {
				t.Fatalf("%d sets asked: chunk %d, used last, is not in memory (%v)", sets, k, err)
			}
		}
	}
}

// TestKeptRowsAreMarkedUsedAsTheyAreUsed: a process reads a parameter set's
// stored kept rows once, when it makes the Table, and serves the set from
// memory afterwards; Sanitizer marks the stored rows used as it does
// (touchKept), at most once every keptTouchEvery, so that the warm start's
// "used last" and the table cache's eviction follow the releases. Two sets
// are made in turn (b's rows stored last); serving a from memory then lists
// a first, serving b lists b first, and serving a again within the minute
// changes nothing. The memory store here; the store suite (storetest)
// checks TouchTables on both stores.
func TestKeptRowsAreMarkedUsedAsTheyAreUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, smp := keptParamsOf(t)
	st := store.NewMemory()
	c, err := New(Config{Store: st, KeptRowsSteps: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a, b := sanitize.MethodDiscrete, sanitize.MethodMaxSeparation
	serve := func(m sanitize.Method) {
		t.Helper()
		if _, err := c.Sanitizer(p, smp, m); err != nil {
			t.Fatal(err)
		}
		c.Wait()
	}
	prefix := keyFormat + "|" + c.version + "|kept|"
	order := func() []string {
		t.Helper()
		uses, err := st.RecentTables(ctx, prefix, 10)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range uses {
			keys = append(keys, u.Key)
		}
		return keys
	}
	ka, kb := c.KeptRowsKey(p, smp, a), c.KeptRowsKey(p, smp, b)
	serve(a) // makes a's Table; its kept rows are stored behind
	serve(b)
	for _, step := range []struct {
		name  string
		serve sanitize.Method
		want  []string
	}{
		{"b's rows stored last", "", []string{kb, ka}},
		{"a served from memory", a, []string{ka, kb}},
		{"b served from memory", b, []string{kb, ka}},
		{"a again within the minute", a, []string{kb, ka}},
	} {
		if step.serve != "" {
			serve(step.serve)
		}
		if got := order(); !slices.Equal(got, step.want) {
			t.Fatalf("%s: kept rows listed %q, want %q", step.name, got, step.want)
		}
	}
}
