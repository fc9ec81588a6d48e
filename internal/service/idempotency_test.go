package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// bothStores runs f on the in-memory store and on PostgreSQL.
func bothStores(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory()) })
	t.Run("postgres", func(t *testing.T) {
		p, err := store.OpenPostgres(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		f(t, p)
	})
}

// bothServices runs f with a default service over each store (bothStores).
func bothServices(t *testing.T, f func(t *testing.T, svc *Service, st store.Store)) {
	bothStores(t, func(t *testing.T, st store.Store) {
		svc, err := New(Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		f(t, svc, st)
	})
}

// reserve makes a service of cfg and reserves key with it; the caller
// releases the claim (or lets its owner "die" by releasing it unfinished).
func reserve(t *testing.T, cfg Config, key string) (*Service, *IdempotencyClaim) {
	t.Helper()
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Idempotency.Begin(context.Background(), key)
	if err != nil || !c.Reserved {
		t.Fatalf("claim: %+v %v", c, err)
	}
	return svc, c
}

// TestIdempotencyOwnerDied: while the first request with a key runs, its
// short lease is renewed and a repeat waits ("in progress", never
// "interrupted", however long the request runs); once its server dies (the
// heartbeat stops, nothing is recorded) a repeat is answered
// ErrIdempotencyAbandoned within about one lease. Issue 25, defect 5: the
// lease was the request timeout + 30 s, so a retry after a crash waited
// the full timeout for a 409 "in progress" and learned of the crash only
// after 90 s.
func TestIdempotencyOwnerDied(t *testing.T) {
	t.Parallel() // it waits on leases, not on the CPU: a delayed wake-up is milliseconds
	bothStores(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		const lease = 1500 * time.Millisecond
		_, c := reserve(t, Config{Store: st, IdempotencyLease: lease}, "k")
		// A repeat waiting 3 leases while the owner lives: still in progress.
		waiter, err := New(Config{Store: st, IdempotencyLease: lease, IdempotencyWait: 3 * lease})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := waiter.Idempotency.Begin(ctx, "k"); !errors.Is(err, ErrIdempotencyInProgress) {
			t.Fatalf("repeat while the owner runs: %v, want in progress", err)
		}
		c.release() // the owner's process dies: no renewal, no answer
		// A retry that may wait 4 leases: told "abandoned" once the lease
		// lapses. Code that waited out its wait instead (the old lease of the
		// request timeout) answers "in progress" and fails here: the check
		// is on the answer, not on the wall clock.
		retry, err := New(Config{Store: st, IdempotencyLease: lease, IdempotencyWait: 4 * lease})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := retry.Idempotency.Begin(ctx, "k"); !errors.Is(err, ErrIdempotencyAbandoned) {
			t.Fatalf("retry after the owner died: %v, want abandoned", err)
		}
		// The abandoned key is never run again until it expires.
		if _, err := retry.Idempotency.Begin(ctx, "k"); !errors.Is(err, ErrIdempotencyAbandoned) {
			t.Fatalf("second retry: %v", err)
		}
	})
}

// TestIdempotencyHold: a reservation is kept at least IdempotencyHold
// (the longest a request can run) even when the idempotency TTL, capped
// by SampleTTL, is shorter; the recorded answer is kept for the TTL from
// its completion.
func TestIdempotencyHold(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		svc, c := reserve(t, Config{Store: st, SampleTTL: time.Second, IdempotencyHold: time.Hour}, "k")
		defer c.release()
		rec, err := st.GetIdempotency(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if until := time.Until(rec.ExpiresAt); until < 59*time.Minute {
			t.Fatalf("the reservation expires in %v, want at least the hold (1h)", until)
		}
		if err := svc.Idempotency.Finish(ctx, c, []byte{1}, IdempotentAnswer{Status: 201, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		rec, err = st.GetIdempotency(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if until := time.Until(rec.ExpiresAt); until > time.Second || until < 0 {
			t.Fatalf("the answer expires in %v, want the 1 s TTL from completion", until)
		}
	})
}

// TestIdempotencyHeartbeatBounded: a request that runs past
// IdempotencyHold (no request can: it is stuck) stops renewing its lease,
// so its key is answered "interrupted" instead of "in progress" forever.
func TestIdempotencyHeartbeatBounded(t *testing.T) {
	t.Parallel() // it waits on leases, not on the CPU: a delayed wake-up is milliseconds
	ctx := context.Background()
	svc, c := reserve(t, Config{Store: store.NewMemory(), IdempotencyLease: 300 * time.Millisecond, IdempotencyHold: 600 * time.Millisecond}, "k")
	defer c.release()
	time.Sleep(1500 * time.Millisecond)
	if _, err := svc.Idempotency.Begin(ctx, "k"); !errors.Is(err, ErrIdempotencyAbandoned) {
		t.Fatalf("a key held past the hold: %v, want abandoned", err)
	}
}
