package tablecache

import (
	"context"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// labelStore records the WorkLabel of the context of every store call.
type labelStore struct {
	*store.Memory
	mu     sync.Mutex
	labels map[string][]string // store method -> labels seen, "" for none
}

func (s *labelStore) saw(ctx context.Context, method string) {
	l, _ := pprof.Label(ctx, WorkLabel)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.labels == nil {
		s.labels = map[string][]string{}
	}
	s.labels[method] = append(s.labels[method], l)
}

func (s *labelStore) seen(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(s.labels[method])))
}

func (s *labelStore) GetTables(ctx context.Context, keys []string) ([][]byte, error) {
	s.saw(ctx, "GetTables")
	return s.Memory.GetTables(ctx, keys)
}

func (s *labelStore) PutTables(ctx context.Context, entries []store.TableEntry) error {
	s.saw(ctx, "PutTables")
	return s.Memory.PutTables(ctx, entries)
}

// TestBackgroundWorkLabelled: the cache's background work runs under the
// pprof label WorkLabel (what lets a CPU profile of a release tell the
// release's own work from the chunks built ahead of its estimates,
// docs/performance.md "The profiles behind it"), and a request's own work
// does not. The store calls carry the goroutine's labels in their context:
// a request's reads none, the prefetch's reads "prefetch", the writes
// behind both "write-behind". Without labelWork every call is unlabelled.
func TestBackgroundWorkLabelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &labelStore{Memory: store.NewMemory()}
	c, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	tb, err := c.Sanitizer(p, smp, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	gs := []estimate.G{identityG, {Kind: estimate.GCount}}
	if _, err := c.ChunkSets(ctx, tb, gs, []int64{10, 20}, Read{}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if got := st.seen("GetTables"); !slices.Equal(got, []string{""}) {
		t.Errorf("a request's store reads carried labels %q, want none", got)
	}
	c.Prefetch(tb, gs, []int64{400, 500})
	c.Wait()
	if got := st.seen("GetTables"); !slices.Equal(got, []string{"", WorkPrefetch}) {
		t.Errorf("store reads carried labels %q, want none (the request) and %q (the prefetch)", got, WorkPrefetch)
	}
	if got := st.seen("PutTables"); !slices.Equal(got, []string{WorkWriteBehind}) {
		t.Errorf("store writes carried labels %q, want %q", got, WorkWriteBehind)
	}
}
