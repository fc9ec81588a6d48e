package api_test

import (
	"context"
	"net/http"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/store"
)

// routeLabelStore records the RouteLabel of the context of each
// CreateDataset and GetDataset call.
type routeLabelStore struct {
	*store.Memory
	mu     sync.Mutex
	routes []string
}

func (s *routeLabelStore) CreateDataset(ctx context.Context, d store.Dataset) error {
	l, _ := pprof.Label(ctx, api.RouteLabel)
	s.mu.Lock()
	s.routes = append(s.routes, l)
	s.mu.Unlock()
	return s.Memory.CreateDataset(ctx, d)
}

func (s *routeLabelStore) GetDataset(ctx context.Context, name string) (store.Dataset, []store.Release, error) {
	l, _ := pprof.Label(ctx, api.RouteLabel)
	s.mu.Lock()
	s.routes = append(s.routes, l)
	s.mu.Unlock()
	return s.Memory.GetDataset(ctx, name)
}

// TestRequestsLabelledByRoute: the real router runs each request under the
// pprof label RouteLabel holding its route's pattern (what lets a CPU
// profile split by route, docs/performance.md "The profiles behind it"),
// never the path as sent: the label the store's calls see is the route's.
// Without routeLabels in the router the store sees none.
func TestRequestsLabelledByRoute(t *testing.T) {
	t.Parallel()
	st := &routeLabelStore{Memory: store.NewMemory()}
	ts := newServer(t, st)
	for _, name := range []string{"q", "logs"} {
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"`+name+`","epsilon_budget":5,"delta_budget":1e-5}`); r.status != http.StatusCreated {
			t.Fatalf("creating dataset %s: %d %s", name, r.status, r.body)
		}
	}
	for _, path := range []string{"/v1/datasets/q", "/v1/datasets/logs"} {
		if r := ts.get(t, path); r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if want := []string{"POST /v1/datasets", "POST /v1/datasets", "GET /v1/datasets/{name}", "GET /v1/datasets/{name}"}; !slices.Equal(st.routes, want) {
		t.Fatalf("the store's calls carried route labels %q, want %q", st.routes, want)
	}
}
