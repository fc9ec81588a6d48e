package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

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

// testListSamples: pages of every size list each unexpired sample exactly
// once, in (created_at, id) order, ties on created_at broken by id; deleted
// and expired samples are gone; the ledger keeps deleted samples' charges.
func testListSamples(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 10, DeltaBudget: 1}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	// ids deliberately not in creation order; s3 and s2 share a timestamp.
	specs := []struct {
		id  string
		at  time.Duration
		exp time.Duration // 0: never; negative: already expired
	}{{"s5", 0, 0}, {"s3", time.Second, 0}, {"s2", time.Second, time.Hour}, {"s9", 2 * time.Second, -time.Minute}, {"s1", 3 * time.Second, 0}}
	for _, sp := range specs {
		smp := &store.Sample{ID: sp.id, CreatedAt: base.Add(sp.at), Dataset: "d", Header: []byte(`{}`), Elements: []store.Element{{Key: "k", Value: 1}}}
		if sp.exp != 0 {
			smp.ExpiresAt = time.Now().UTC().Add(sp.exp)
		}
		if err := s.CreateSample(ctx, smp, &store.Charge{Dataset: "d", Kind: "sample", Ref: sp.id, Epsilon: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	want := "[s5 s2 s3 s1]"
	for limit := 1; limit <= 5; limit++ {
		got := pageAll(t, limit, func(c store.Cursor, n int) ([]*store.Sample, error) { return s.ListSamples(ctx, c, n) },
			func(x *store.Sample) store.Cursor { return store.Cursor{CreatedAt: x.CreatedAt, ID: x.ID} })
		if fmt.Sprint(got) != want {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
	page, _ := s.ListSamples(ctx, store.Cursor{}, 10)
	if page[0].Elements != nil || page[0].Reported != 1 || !page[0].ExpiresAt.IsZero() || page[1].ExpiresAt.IsZero() {
		t.Fatalf("listing metadata: %+v %+v", page[0], page[1])
	}
	if _, err := s.GetSample(ctx, "s9"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired sample: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSample(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s3", "s9", "nope"} {
		if err := s.DeleteSample(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleting %s: %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.GetSample(ctx, "s3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted sample: %v", err)
	}
	d, rel, err := s.GetDataset(ctx, "d")
	if err != nil || len(rel) != 5 || d.SpentEpsilon != 2.5 {
		t.Fatalf("ledger after deletions: %d releases, spent %g, %v; want 5 and 2.5", len(rel), d.SpentEpsilon, err)
	}
}

// testPurge: PurgeExpired deletes exactly the samples and idempotency keys
// past their expiry, and nothing else.
func testPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	for i, exp := range []time.Duration{-time.Hour, -time.Second, 0, time.Hour} {
		smp := &store.Sample{ID: fmt.Sprint("p", i), CreatedAt: now, Header: []byte(`{}`)}
		if exp != 0 {
			smp.ExpiresAt = now.Add(exp)
		}
		if err := s.CreateSample(ctx, smp, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, exp := range []time.Duration{-time.Second, time.Hour} {
		rec := &store.IdempotencyRecord{Key: fmt.Sprint("k", i), CreatedAt: now, LockedUntil: now, ExpiresAt: now.Add(exp)}
		if _, _, err := s.ReserveIdempotency(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PurgeExpired(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n.Samples != 2 || n.IdempotencyKeys != 1 {
		t.Fatalf("purged %+v, want 2 samples and 1 key", n)
	}
	if n, _ := s.PurgeExpired(ctx, time.Now()); n != (store.PurgeCount{}) {
		t.Fatalf("second purge deleted %+v", n)
	}
	for i, ok := range []bool{false, false, true, true} {
		_, err := s.GetSample(ctx, fmt.Sprint("p", i))
		if (err == nil) != ok {
			t.Fatalf("sample p%d after purge: %v", i, err)
		}
	}
}

// testListDatasets: every dataset once, in creation order, with its own ledger.
func testListDatasets(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Microsecond)
	for i, name := range []string{"zeta", "alpha", "mid"} {
		if err := s.CreateDataset(ctx, store.Dataset{Name: name, EpsilonBudget: 5, CreatedAt: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i; j++ {
			id := fmt.Sprint(name, j)
			if err := s.CreateSample(ctx, &store.Sample{ID: id, CreatedAt: base, Dataset: name, Header: []byte(`{}`)}, &store.Charge{Dataset: name, Kind: "sample", Ref: id, Epsilon: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	var c store.Cursor
	for {
		ds, rel, err := s.ListDatasets(ctx, c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range ds {
			got = append(got, d.Name)
			if len(rel[i]) != int(d.SpentEpsilon) || rel[i][0].Ref != d.Name+"0" {
				t.Fatalf("dataset %s: ledger %v, spent %g", d.Name, rel[i], d.SpentEpsilon)
			}
		}
		if len(ds) < 2 {
			break
		}
		c = store.Cursor{CreatedAt: ds[len(ds)-1].CreatedAt, ID: ds[len(ds)-1].Name}
	}
	if fmt.Sprint(got) != "[zeta alpha mid]" {
		t.Fatalf("listed %v", got)
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

// testIdempotency: reserve, complete, read back; a different caller's key
// is separate; an expired record is replaced; release frees only
// unfinished reservations.
func testIdempotency(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.IdempotencyRecord{Key: "k", CreatedAt: now, LockedUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if cur, ok, err := s.ReserveIdempotency(ctx, rec); err != nil || !ok || cur != nil {
		t.Fatalf("first reserve: %v %v %v", cur, ok, err)
	}
	cur, ok, err := s.ReserveIdempotency(ctx, rec)
	if err != nil || ok || cur == nil || cur.Done || !cur.LockedUntil.Equal(rec.LockedUntil) {
		t.Fatalf("second reserve: %+v %v %v", cur, ok, err)
	}
	done := &store.IdempotencyRecord{Key: "k", RequestHash: []byte{1, 2}, Status: 201, Header: map[string]string{"Location": "/v1/samples/x"}, Body: []byte(`{"id":"x"}`), Ref: "/v1/samples/x"}
	if err := s.CompleteIdempotency(ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteIdempotency(ctx, done); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second completion: %v", err)
	}
	if err := s.ReleaseIdempotency(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetIdempotency(ctx, "k")
	if err != nil || !got.Done || got.Status != 201 || string(got.Body) != `{"id":"x"}` || got.Header["Location"] != "/v1/samples/x" ||
		string(got.RequestHash) != "\x01\x02" || !got.ExpiresAt.Equal(rec.ExpiresAt) {
		t.Fatalf("completed record: %+v %v", got, err)
	}
	// Redaction replaces the answer of the records with the ref, and only those.
	if err := s.RedactIdempotency(ctx, "/v1/samples/other", 409, nil, []byte("no")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetIdempotency(ctx, "k"); got.Status != 201 {
		t.Fatalf("redaction of another ref changed the answer: %d", got.Status)
	}
	if err := s.RedactIdempotency(ctx, "/v1/samples/x", 409, map[string]string{"Content-Type": "application/problem+json"}, []byte("gone")); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetIdempotency(ctx, "k")
	if err != nil || !got.Done || got.Status != 409 || string(got.Body) != "gone" || got.Header["Location"] != "" || string(got.RequestHash) != "\x01\x02" {
		t.Fatalf("redacted record: %+v %v", got, err)
	}
	if _, err := s.GetIdempotency(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	// A reservation that is released frees the key.
	r2 := &store.IdempotencyRecord{Key: "k2", CreatedAt: now, LockedUntil: now, ExpiresAt: now.Add(time.Hour)}
	s.ReserveIdempotency(ctx, r2)
	if err := s.ReleaseIdempotency(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ReserveIdempotency(ctx, r2); !ok {
		t.Fatal("released key could not be reserved again")
	}
	// An expired record is not found and is replaced by a new reservation.
	r3 := &store.IdempotencyRecord{Key: "k3", CreatedAt: now, LockedUntil: now, ExpiresAt: time.Now().Add(-time.Second)}
	s.ReserveIdempotency(ctx, r3)
	if _, err := s.GetIdempotency(ctx, "k3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired key: %v", err)
	}
	r3.ExpiresAt = now.Add(time.Hour)
	if _, ok, _ := s.ReserveIdempotency(ctx, r3); !ok {
		t.Fatal("expired key could not be reserved again")
	}
	// A reservation past its expiry whose lease is still renewed (its
	// request still runs) is neither replaced, nor hidden, nor purged.
	r4 := &store.IdempotencyRecord{Key: "k4", CreatedAt: now, LockedUntil: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(-time.Second)}
	s.ReserveIdempotency(ctx, r4)
	if _, ok, _ := s.ReserveIdempotency(ctx, r4); ok {
		t.Fatal("a reservation still leased was replaced after its expiry")
	}
	if got, err := s.GetIdempotency(ctx, "k4"); err != nil || got.Done {
		t.Fatalf("leased reservation: %+v %v", got, err)
	}
	if _, err := s.PurgeExpired(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetIdempotency(ctx, "k4"); err != nil {
		t.Fatalf("a leased reservation was purged: %v", err)
	}
	// Renewal moves the lease of a reservation, never of a Done record.
	renewed := time.Now().UTC().Add(2 * time.Minute).Truncate(time.Microsecond)
	if err := s.RenewIdempotency(ctx, "k4", renewed); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetIdempotency(ctx, "k4"); !got.LockedUntil.Equal(renewed) {
		t.Fatalf("renewed lease %v, want %v", got.LockedUntil, renewed)
	}
	if err := s.RenewIdempotency(ctx, "k", renewed); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetIdempotency(ctx, "k"); got.LockedUntil.Equal(renewed) {
		t.Fatal("the lease of a Done record was renewed")
	}
	// Without renewal the lease lapses: the record then expires as usual.
	if err := s.RenewIdempotency(ctx, "k4", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetIdempotency(ctx, "k4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lapsed and expired: %v", err)
	}
}

// testIdempotencyConcurrent: of 20 concurrent reservations of one key
// exactly one succeeds.
func testIdempotencyConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := s.ReserveIdempotency(ctx, &store.IdempotencyRecord{Key: "k", CreatedAt: now, LockedUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d reservations succeeded, want exactly 1", won.Load())
	}
}
