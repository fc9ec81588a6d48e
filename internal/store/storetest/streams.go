package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// statesChecks are the checks of the States domain: streams and counters.
func statesChecks() []check {
	return []check{
		{"state", testState},
		{"state updates serialise", testStateSerialised},
		{"list and delete streams and counters", testListDeleteStates},
		{"refused state creations write nothing", testStateRefusals},
		{"an update writes what fn left, nothing else", testUpdateStateEffects},
		{"a delete waits for a running update", testDeleteWaitsForUpdate},
		{"a deleted state's id is free again", testStateDeleteReuse},
	}
}

// testStateRefusals: a record whose kind and id exist is refused with
// ErrExists and its charge is not made; a record naming an unknown dataset
// is refused with ErrNotFound, charged or not; neither is stored.
func testStateRefusals(t *testing.T, s store.Store) {
	ctx := context.Background()
	newDataset(t, s, "d", 1, 0)
	newState(t, s, "stream", "st", "d")
	for _, c := range []struct {
		name          string
		kind, id, set string
		charge        *store.Charge
		want          error
	}{
		{"existing id, charged", "stream", "st", "d", &store.Charge{Dataset: "d", Kind: "stream", Ref: "st", Epsilon: 0.5}, store.ErrExists},
		{"existing id", "stream", "st", "", nil, store.ErrExists},
		{"unknown dataset", "counter", "g1", "ghost", nil, store.ErrNotFound},
		{"charged to an unknown dataset", "stream", "g2", "", &store.Charge{Dataset: "ghost", Kind: "stream", Ref: "g2", Epsilon: 0.5}, store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now().UTC()
			rec := &store.StateRecord{Kind: c.kind, ID: c.id, Dataset: c.set, Config: []byte(`{"new":true}`), State: []byte{7}, CreatedAt: now, UpdatedAt: now}
			if err := s.CreateState(ctx, rec, c.charge); !errors.Is(err, c.want) {
				t.Fatalf("CreateState: %v, want %v", err, c.want)
			}
			if d, rel := ledgerOf(t, s, "d"); d.SpentEpsilon != 0 || len(rel) != 0 {
				t.Errorf("a refused creation charged %g (%d releases)", d.SpentEpsilon, len(rel))
			}
			got, err := s.GetState(ctx, c.kind, c.id)
			switch {
			case c.want == store.ErrExists && (err != nil || string(got.State) != "\x00"):
				t.Errorf("the existing record became %+v (%v)", got, err)
			case c.want == store.ErrNotFound && !errors.Is(err, store.ErrNotFound):
				t.Errorf("a refused record was stored: %v", err)
			}
		})
	}
}

// testUpdateStateEffects: UpdateState writes the config, state, events
// and releases fn left and dates the update, keeping the creation time;
// the kind and id fn sets are ignored; a charge fn returns with an error,
// or to an unknown dataset, is not made and the record is left as it was.
func testUpdateStateEffects(t *testing.T, s store.Store) {
	ctx := context.Background()
	newDataset(t, s, "d", 1, 0)
	created := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: "counter", ID: "c", Dataset: "d", Config: []byte(`{"v":1}`), State: []byte{1}, CreatedAt: created, UpdatedAt: created}
	if err := s.CreateState(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		fn   func(r *store.StateRecord) (*store.Charge, error)
		want error
	}{
		{"fn fails after asking a charge", func(r *store.StateRecord) (*store.Charge, error) {
			r.State = []byte{9}
			return &store.Charge{Dataset: "d", Kind: "stream", Ref: "c", Epsilon: 0.5}, boom
		}, boom},
		{"charge to an unknown dataset", func(r *store.StateRecord) (*store.Charge, error) {
			r.State = []byte{9}
			return &store.Charge{Dataset: "ghost", Kind: "stream", Ref: "c", Epsilon: 0.5}, nil
		}, store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := s.UpdateState(ctx, "counter", "c", c.fn); !errors.Is(err, c.want) {
				t.Fatalf("UpdateState: %v, want %v", err, c.want)
			}
			got, err := s.GetState(ctx, "counter", "c")
			if err != nil || string(got.State) != "\x01" || !got.UpdatedAt.Equal(created) {
				t.Errorf("a refused update wrote %+v (%v)", got, err)
			}
			if d, rel := ledgerOf(t, s, "d"); d.SpentEpsilon != 0 || len(rel) != 0 {
				t.Errorf("a refused update charged %g (%d releases)", d.SpentEpsilon, len(rel))
			}
		})
	}
	before := time.Now().UTC().Truncate(time.Microsecond)
	err := s.UpdateState(ctx, "counter", "c", func(r *store.StateRecord) (*store.Charge, error) {
		r.Kind, r.ID = "stream", "elsewhere"
		r.Config, r.State, r.Events, r.Releases = []byte(`{"v":2}`), []byte{2, 2}, 41, 3
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	got, err := s.GetState(ctx, "counter", "c")
	if err != nil || !sameJSON(got.Config, []byte(`{"v":2}`)) || string(got.State) != "\x02\x02" || got.Events != 41 || got.Releases != 3 || got.Dataset != "d" ||
		got.Kind != "counter" || got.ID != "c" {
		t.Fatalf("after the update: %+v (%v)", got, err)
	}
	if !got.CreatedAt.Equal(created) || got.UpdatedAt.Before(before) || got.UpdatedAt.After(after) {
		t.Errorf("created %v updated %v, want %v and between %v and %v", got.CreatedAt, got.UpdatedAt, created, before, after)
	}
	if _, err := s.GetState(ctx, "stream", "elsewhere"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("fn's kind and id moved the record: %v", err)
	}
}

// testDeleteWaitsForUpdate: a DeleteState of a record whose update is
// running returns only after the update has finished (as a row lock makes
// it in PostgreSQL); the update succeeds, then the delete removes the
// record.
func testDeleteWaitsForUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	newState(t, s, "stream", "st", "")
	inside, release := make(chan struct{}), make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		updated <- s.UpdateState(ctx, "stream", "st", func(r *store.StateRecord) (*store.Charge, error) {
			close(inside)
			<-release
			r.Events++
			return nil, nil
		})
	}()
	<-inside
	deleted := make(chan error, 1)
	go func() { deleted <- s.DeleteState(ctx, "stream", "st") }()
	select {
	case err := <-deleted:
		close(release)
		t.Fatalf("the delete returned (%v) while an update of the record ran", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-updated; err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := s.GetState(ctx, "stream", "st"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
}

// testStateDeleteReuse: after DeleteState the kind and id can be created
// again, and the new record can be read and updated.
func testStateDeleteReuse(t *testing.T, s store.Store) {
	ctx := context.Background()
	newState(t, s, "counter", "c", "")
	if err := s.DeleteState(ctx, "counter", "c"); err != nil {
		t.Fatal(err)
	}
	newState(t, s, "counter", "c", "")
	if err := s.UpdateState(ctx, "counter", "c", func(r *store.StateRecord) (*store.Charge, error) {
		r.Events = 5
		return nil, nil
	}); err != nil {
		t.Fatalf("updating a re-created record: %v", err)
	}
	if got, err := s.GetState(ctx, "counter", "c"); err != nil || got.Events != 5 {
		t.Fatalf("re-created record: %+v %v", got, err)
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

// testListDeleteStates: kinds are listed separately; a deleted record is
// gone for reads, updates and deletes; its ledger entries stay.
func testListDeleteStates(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 5}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Microsecond)
	for i, id := range []string{"b", "a", "c"} {
		at := base.Add(time.Duration(i) * time.Second)
		rec := &store.StateRecord{Kind: "stream", ID: id, Dataset: "d", Config: []byte(`{}`), State: []byte{1}, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateState(ctx, rec, &store.Charge{Dataset: "d", Kind: "stream", Ref: id, Epsilon: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateState(ctx, &store.StateRecord{Kind: "counter", ID: "x", Config: []byte(`{}`), State: []byte{}, CreatedAt: base, UpdatedAt: base}, nil); err != nil {
		t.Fatal(err)
	}
	list := func(kind string) []string {
		return pageAll(t, 2, func(c store.Cursor, n int) ([]*store.StateRecord, error) { return s.ListStates(ctx, kind, c, n) },
			func(r *store.StateRecord) store.Cursor { return store.Cursor{CreatedAt: r.CreatedAt, ID: r.ID} })
	}
	if got := fmt.Sprint(list("stream"), list("counter")); got != "[b a c] [x]" {
		t.Fatalf("listed %s", got)
	}
	if err := s.DeleteState(ctx, "stream", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteState(ctx, "stream", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := s.DeleteState(ctx, "counter", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete of the wrong kind: %v", err)
	}
	if _, err := s.GetState(ctx, "stream", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
	if err := s.UpdateState(ctx, "stream", "a", func(*store.StateRecord) (*store.Charge, error) { return nil, nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update after delete: %v", err)
	}
	if got := fmt.Sprint(list("stream")); got != "[b c]" {
		t.Fatalf("after delete listed %s", got)
	}
	if _, rel, _ := s.GetDataset(ctx, "d"); len(rel) != 3 {
		t.Fatalf("ledger holds %d releases after a delete, want 3", len(rel))
	}
}
