package tablecache

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// countingStore counts the store calls of the table cache, and the most
// batch reads in flight at once.
type countingStore struct {
	*store.Memory
	gets, batchGets, puts, batchPuts atomic.Int64
	inFlight, maxInFlight, keys      atomic.Int64
}

func (s *countingStore) GetTable(ctx context.Context, key string) ([]byte, bool, error) {
	s.gets.Add(1)
	return s.Memory.GetTable(ctx, key)
}

func (s *countingStore) GetTables(ctx context.Context, keys []string) ([][]byte, error) {
	s.batchGets.Add(1)
	s.keys.Add(int64(len(keys)))
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	return s.Memory.GetTables(ctx, keys)
}

func (s *countingStore) PutTable(ctx context.Context, key string, data []byte) error {
	s.puts.Add(1)
	return s.Memory.PutTable(ctx, key, data)
}

func (s *countingStore) PutTables(ctx context.Context, entries []store.TableEntry) error {
	s.batchPuts.Add(1)
	return s.Memory.PutTables(ctx, entries)
}

// TestEveryBuiltChunkReachesTheStore: a read that builds many runs of
// chunks writes every one of them to the store (before issue 37 all but
// the two runs being written were dropped: nine chunks in ten never
// reached PostgreSQL), in batches; a second cache over the same store (a
// restart, a replica) then reads them all in batches, one statement per
// 512 keys, and computes nothing; a third one reading 5 keys per statement
// reads every chunk in as many batches as that takes, at most
// storedChunkReaders at once.
func TestEveryBuiltChunkReachesTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &countingStore{Memory: store.NewMemory()}
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	ks := make([]int64, 24) // 24 isolated chunks: 24 runs
	for i := range ks {
		ks[i] = 10 + int64(i)*5
	}
	gs := []estimate.G{identityG, {Kind: estimate.GCount}}
	first, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := first.Sanitizer(p, smp, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.ChunkSets(ctx, tb, gs, ks, Read{}); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	if runs := first.Computed(); runs != int64(len(ks)) {
		t.Fatalf("built %d runs, want %d", runs, len(ks))
	}
	if st.puts.Load() != 0 || st.batchPuts.Load() == 0 {
		t.Errorf("%d single puts and %d batches: want batches only", st.puts.Load(), st.batchPuts.Load())
	}
	second, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tb2, err := second.Sanitizer(p, smp, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	gets, keys := st.gets.Load(), st.keys.Load()
	sets, err := second.ChunkSets(ctx, tb2, gs, ks, Read{})
	if err != nil {
		t.Fatal(err)
	}
	if n := second.Computed(); n != 0 {
		t.Fatalf("after a restart %d runs were rebuilt: the first cache's chunks did not all reach the store", n)
	}
	if d := st.gets.Load() - gets; d != 0 {
		t.Errorf("%d single reads of chunks: want batched reads", d)
	}
	for m := range gs {
		if len(sets[m].Chunks) != len(ks) {
			t.Fatalf("g %d: %d chunks, want %d", m, len(sets[m].Chunks), len(ks))
		}
	}
	wantKeys := st.keys.Load() - keys
	if wantKeys <= 5*storedChunkReaders {
		t.Fatalf("the second cache read %d chunk keys: too few to need more batches than readers", wantKeys)
	}
	third, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	third.chunkBatch = 5
	tb3, err := third.Sanitizer(p, smp, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	before, keys := st.batchGets.Load(), st.keys.Load()
	sets, err = third.ChunkSets(ctx, tb3, gs, ks, Read{})
	if err != nil {
		t.Fatal(err)
	}
	if n := third.Computed(); n != 0 {
		t.Fatalf("reading 5 keys per statement, %d runs were rebuilt", n)
	}
	if got, want := st.batchGets.Load()-before, (wantKeys+4)/5; got != want || st.keys.Load()-keys != wantKeys {
		t.Errorf("%d batch reads of %d keys, want %d reads of the %d keys the second cache read", got, st.keys.Load()-keys, want, wantKeys)
	}
	if m := st.maxInFlight.Load(); m > storedChunkReaders {
		t.Errorf("%d batch reads at once, want at most %d", m, storedChunkReaders)
	}
	for m := range gs {
		if len(sets[m].Chunks) != len(ks) {
			t.Fatalf("5 keys per statement: g %d: %d chunks, want %d", m, len(sets[m].Chunks), len(ks))
		}
	}
}
