package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// check is one named behaviour of the suite, run on a fresh store.
type check struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// Run runs the whole suite against fresh stores made by open, one per
// check, the checks in parallel (open may skip t, e.g. when no database
// server is available). Each domain lists its checks in its own file.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, checks := range [][]check{storeChecks(), tablesChecks(), samplesChecks(), datasetsChecks(), statesChecks(), idempotencyChecks()} {
		for _, c := range checks {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, open(t))
			})
		}
	}
}

// storeChecks are the checks of no single domain.
func storeChecks() []check {
	return []check{
		{"ready", testReady},
		{"rewrite of legacy formats", testRewrite},
		{"unsafe identifiers", testUnsafeIDs},
	}
}

func testReady(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// testUnsafeIDs: ids no resource can have (invalid UTF-8, NUL, too long)
// are not found, and a cursor holding one is an invalid value, without a
// query (PostgreSQL refused them with SQLSTATE 22021, which became a 500).
func testUnsafeIDs(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"\xff", "\x00", "a\x00b", "\xc0\x80", strings.Repeat("a", 129)} {
		notFound := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s(%q): %v, want ErrNotFound", what, id, err)
			}
		}
		_, err := s.GetSample(ctx, id)
		notFound("GetSample", err)
		_, _, err = s.GetDataset(ctx, id)
		notFound("GetDataset", err)
		_, err = s.GetState(ctx, "stream", id)
		notFound("GetState", err)
		notFound("UpdateState", s.UpdateState(ctx, "stream", id, func(*store.StateRecord) (*store.Charge, error) { return nil, nil }))
		notFound("DeleteSample", s.DeleteSample(ctx, id))
		notFound("DeleteState", s.DeleteState(ctx, "counter", id))
		notFound("CreateSample charged to it", s.CreateSample(ctx, &store.Sample{ID: "x", Dataset: "d", Header: []byte(`{}`), CreatedAt: time.Now()},
			&store.Charge{Dataset: id, Kind: "sample", Ref: "x", Epsilon: 0.1}))
		c := store.Cursor{CreatedAt: time.Now(), ID: id}
		invalid := func(what string, err error) {
			t.Helper()
			if !store.IsInvalidValue(err) {
				t.Errorf("%s after %q: %v, want an invalid value", what, id, err)
			}
		}
		_, err = s.ListSamples(ctx, c, 10)
		invalid("ListSamples", err)
		_, _, err = s.ListDatasets(ctx, c, 10)
		invalid("ListDatasets", err)
		_, err = s.ListStates(ctx, "stream", c, 10)
		invalid("ListStates", err)
	}
}

// pageAll walks a listing page by page and returns the ids in order.
func pageAll[T any](t *testing.T, limit int, list func(c store.Cursor, limit int) ([]T, error), pos func(T) store.Cursor) []string {
	t.Helper()
	var ids []string
	var c store.Cursor
	for page := 0; ; page++ {
		items, err := list(c, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > limit {
			t.Fatalf("page %d holds %d items, limit %d", page, len(items), limit)
		}
		for _, it := range items {
			ids = append(ids, pos(it).ID)
		}
		if len(items) < limit {
			return ids
		}
		c = pos(items[len(items)-1])
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// newDataset creates the dataset name with budgets (eps, delta).
func newDataset(t *testing.T, s store.Store, name string, eps, delta float64) {
	t.Helper()
	if err := s.CreateDataset(context.Background(), store.Dataset{Name: name, EpsilonBudget: eps, DeltaBudget: delta}); err != nil {
		t.Fatalf("creating dataset %s: %v", name, err)
	}
}

// ledgerOf returns the dataset name and its ledger.
func ledgerOf(t *testing.T, s store.Store, name string) (store.Dataset, []store.Release) {
	t.Helper()
	d, rel, err := s.GetDataset(context.Background(), name)
	if err != nil {
		t.Fatalf("reading dataset %s: %v", name, err)
	}
	return d, rel
}

// newState creates a stream or counter id of kind, charged to nothing.
func newState(t *testing.T, s store.Store, kind, id, dataset string) *store.StateRecord {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: kind, ID: id, Dataset: dataset, Config: []byte(`{}`), State: []byte{0}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateState(context.Background(), rec, nil); err != nil {
		t.Fatalf("creating %s %s: %v", kind, id, err)
	}
	return rec
}

// sameJSON reports whether a and b are the same JSON value (PostgreSQL
// stores headers and configs as jsonb, which normalises spacing).
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
