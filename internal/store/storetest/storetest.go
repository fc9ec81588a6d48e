package storetest

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// Run runs the whole suite against fresh stores made by open, one per
// case (open may skip t, e.g. when no database server is available).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"ready", testReady},
		{"tables", testTables},
		{"samples", testSamples},
		{"datasets", testDatasets},
		{"budget refuses overspend atomically", testBudgetAtomic},
		{"concurrent releases never overspend", testConcurrentBudget},
		{"state", testState},
		{"state updates serialise", testStateSerialised},
		{"list and delete samples", testListSamples},
		{"purge expired", testPurge},
		{"list datasets with ledgers", testListDatasets},
		{"list and delete streams and counters", testListDeleteStates},
		{"idempotency keys", testIdempotency},
		{"concurrent idempotency reservations", testIdempotencyConcurrent},
		{"rewrite of legacy formats", testRewrite},
		{"unsafe identifiers", testUnsafeIDs},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
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

func testSamples(t *testing.T, s store.Store) {
	ctx := context.Background()
	els := make([]store.Element, 70000) // more than one chunk
	for i := range els {
		els[i] = store.Element{Key: string(rune('a'+i%26)) + "-" + time.Duration(i).String(), Value: float64(i) + 0.25, Estimate: float64(i) * 2}
	}
	els[3].Value, els[3].Estimate = math.NaN(), math.NaN()
	in := &store.Sample{ID: "s1", CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Header: []byte(`{"release":"frequencies"}`), Elements: els}
	if err := s.CreateSample(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSample(ctx, in, nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate id: %v, want ErrExists", err)
	}
	out, err := s.GetSample(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !out.CreatedAt.Equal(in.CreatedAt) || string(out.Header) != string(in.Header) && len(out.Header) == 0 {
		t.Fatalf("header mismatch: %v %s", out.CreatedAt, out.Header)
	}
	if len(out.Elements) != len(els) {
		t.Fatalf("got %d elements, want %d", len(out.Elements), len(els))
	}
	for i := range els {
		a, b := els[i], out.Elements[i]
		if a.Key != b.Key || !sameFloat(a.Value, b.Value) || !sameFloat(a.Estimate, b.Estimate) {
			t.Fatalf("element %d: got %+v want %+v", i, b, a)
		}
	}
	if _, err := s.GetSample(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown sample: %v", err)
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func testDatasets(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1e-5}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1e-5}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate dataset: %v", err)
	}
	// Ten charges of 0.1 fit a budget of 1 despite float rounding.
	for i := 0; i < 10; i++ {
		c := &store.Charge{Dataset: "d", Kind: "sample", Ref: "s" + string(rune('0'+i)), Epsilon: 0.1, Delta: 1e-6}
		if err := s.CreateSample(ctx, &store.Sample{ID: c.Ref, Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
	}
	d, rel, err := s.GetDataset(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(rel) != 10 || math.Abs(d.SpentEpsilon-1) > 1e-9 || math.Abs(d.SpentDelta-1e-5) > 1e-15 {
		t.Fatalf("spent %g/%g with %d releases", d.SpentEpsilon, d.SpentDelta, len(rel))
	}
	if rel[0].Ref != "s0" || rel[9].Ref != "s9" {
		t.Fatalf("ledger out of order: %v", rel)
	}
	if _, _, err := s.GetDataset(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown dataset: %v", err)
	}
	c := &store.Charge{Dataset: "nope", Kind: "sample", Ref: "x", Epsilon: 0.1}
	if err := s.CreateSample(ctx, &store.Sample{ID: "x", Dataset: "nope", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("charge to unknown dataset: %v", err)
	}
}

func testBudgetAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 0}); err != nil {
		t.Fatal(err)
	}
	c := &store.Charge{Dataset: "d", Kind: "sample", Ref: "big", Epsilon: 1.5}
	if err := s.CreateSample(ctx, &store.Sample{ID: "big", Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); !errors.Is(err, store.ErrBudget) {
		t.Fatalf("overspend: %v, want ErrBudget", err)
	}
	if _, err := s.GetSample(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused sample was stored: %v", err)
	}
	d, rel, _ := s.GetDataset(ctx, "d")
	if d.SpentEpsilon != 0 || len(rel) != 0 {
		t.Fatalf("refused charge left spent=%g releases=%d", d.SpentEpsilon, len(rel))
	}
}

// testConcurrentBudget: 50 concurrent releases against a budget for 10 —
// exactly 10 succeed.
func testConcurrentBudget(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1e-5}); err != nil {
		t.Fatal(err)
	}
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := "c" + time.Duration(i).String()
			err := s.CreateSample(ctx, &store.Sample{ID: id, Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)},
				&store.Charge{Dataset: "d", Kind: "sample", Ref: id, Epsilon: 0.1, Delta: 1e-6})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrBudget):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 40 {
		t.Fatalf("%d succeeded and %d refused, want 10 and 40", ok.Load(), refused.Load())
	}
}

func testState(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: "stream", ID: "st", Config: []byte(`{"a":1}`), State: []byte{1, 2, 3}, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateState(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateState(ctx, rec, nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate state: %v", err)
	}
	boom := errors.New("boom")
	if err := s.UpdateState(ctx, "stream", "st", func(r *store.StateRecord) (*store.Charge, error) {
		r.State = []byte{9}
		return nil, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing update: %v", err)
	}
	got, _ := s.GetState(ctx, "stream", "st")
	if string(got.State) != string([]byte{1, 2, 3}) {
		t.Fatalf("failed update was written: %v", got.State)
	}
	if err := s.UpdateState(ctx, "stream", "st", func(r *store.StateRecord) (*store.Charge, error) {
		r.State = append(r.State, 4)
		r.Events += 5
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetState(ctx, "stream", "st")
	if err != nil || len(got.State) != 4 || got.Events != 5 || string(got.Config) == "" {
		t.Fatalf("after update: %+v %v", got, err)
	}
	if _, err := s.GetState(ctx, "counter", "st"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("kinds are separate: %v", err)
	}
	if err := s.UpdateState(ctx, "stream", "nope", func(*store.StateRecord) (*store.Charge, error) { return nil, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of unknown: %v", err)
	}
	// A state update with a charge that overspends writes neither.
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1}); err != nil {
		t.Fatal(err)
	}
	err = s.UpdateState(ctx, "stream", "st", func(r *store.StateRecord) (*store.Charge, error) {
		r.Releases++
		return &store.Charge{Dataset: "d", Kind: "stream", Ref: "st", Epsilon: 2}, nil
	})
	if !errors.Is(err, store.ErrBudget) {
		t.Fatalf("overspending state update: %v", err)
	}
	if got, _ := s.GetState(ctx, "stream", "st"); got.Releases != 0 {
		t.Fatalf("refused release was counted")
	}
}

// testStateSerialised: concurrent read-modify-write updates lose nothing.
func testStateSerialised(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	if err := s.CreateState(ctx, &store.StateRecord{Kind: "counter", ID: "c", Config: []byte(`{}`), State: []byte{}, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if err := s.UpdateState(ctx, "counter", "c", func(r *store.StateRecord) (*store.Charge, error) {
					r.Events++
					return nil, nil
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, _ := s.GetState(ctx, "counter", "c")
	if got.Events != 100 {
		t.Fatalf("events = %d after 100 increments", got.Events)
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
