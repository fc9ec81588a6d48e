package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// idempotencyChecks are the checks of the Idempotency domain.
func idempotencyChecks() []check {
	return []check{
		{"idempotency keys", testIdempotency},
		{"concurrent idempotency reservations", testIdempotencyConcurrent},
		{"a completed key replays its answer", testIdempotencyReplay},
		{"idempotency calls on absent keys", testIdempotencyAbsent},
	}
}

// testIdempotencyReplay: once a key is completed, a reservation of it is
// refused and hands back the recorded answer (status, headers, body,
// request digest, ref and the expiry the completion set), as does
// GetIdempotency; a redaction of its ref then changes what is replayed.
func testIdempotencyReplay(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.IdempotencyRecord{Key: "k", CreatedAt: now, LockedUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if _, ok, err := s.ReserveIdempotency(ctx, rec); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	answer := &store.IdempotencyRecord{Key: "k", RequestHash: []byte{7, 7}, Status: 201, Header: map[string]string{"Location": "/v1/datasets/d", "Content-Type": "application/json"},
		Body: []byte(`{"name":"d"}`), Ref: "/v1/datasets/d", ExpiresAt: now.Add(2 * time.Hour)}
	if err := s.CompleteIdempotency(ctx, answer); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *store.IdempotencyRecord, status int, body string) {
		t.Helper()
		if !got.Done || got.Status != status || string(got.Body) != body || string(got.RequestHash) != "\a\a" || got.Ref != answer.Ref ||
			!got.ExpiresAt.Equal(answer.ExpiresAt) || !got.CreatedAt.Equal(now) {
			t.Errorf("%s: %+v, want status %d, body %s, the completion's digest, ref and expiry", what, got, status, body)
		}
	}
	for range 2 {
		cur, ok, err := s.ReserveIdempotency(ctx, &store.IdempotencyRecord{Key: "k", CreatedAt: time.Now(), LockedUntil: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil || ok || cur == nil {
			t.Fatalf("reserving a completed key: %+v %v %v", cur, ok, err)
		}
		check("replayed", cur, 201, `{"name":"d"}`)
		if cur.Header["Location"] != "/v1/datasets/d" || cur.Header["Content-Type"] != "application/json" {
			t.Errorf("replayed headers %v", cur.Header)
		}
	}
	got, err := s.GetIdempotency(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	check("read", got, 201, `{"name":"d"}`)
	if err := s.RedactIdempotency(ctx, "/v1/datasets/d", 410, map[string]string{"Content-Type": "application/problem+json"}, []byte("gone")); err != nil {
		t.Fatal(err)
	}
	cur, ok, err := s.ReserveIdempotency(ctx, rec)
	if err != nil || ok {
		t.Fatalf("reserving a redacted key: %v %v", ok, err)
	}
	check("replayed after redaction", cur, 410, "gone")
}

// testIdempotencyAbsent: completing a key never reserved is ErrNotFound
// and stores nothing; renewing or releasing it is no error and stores
// nothing; a redaction matching no ref changes nothing.
func testIdempotencyAbsent(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"complete", func() error {
			return s.CompleteIdempotency(ctx, &store.IdempotencyRecord{Key: "absent", Status: 200, Body: []byte("x"), ExpiresAt: time.Now().Add(time.Hour)})
		}, store.ErrNotFound},
		{"renew", func() error { return s.RenewIdempotency(ctx, "absent", time.Now().Add(time.Hour)) }, nil},
		{"release", func() error { return s.ReleaseIdempotency(ctx, "absent") }, nil},
		{"redact", func() error { return s.RedactIdempotency(ctx, "/v1/none", 410, nil, nil) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			if got, err := s.GetIdempotency(ctx, "absent"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("after %s of an absent key: %+v %v", c.name, got, err)
			}
			if n, err := s.PurgeExpired(ctx, time.Now().Add(24*time.Hour)); err != nil || n.IdempotencyKeys != 0 {
				t.Fatalf("%s of an absent key stored a record: purged %+v (%v)", c.name, n, err)
			}
		})
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
