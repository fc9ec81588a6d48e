package service

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

func oneElement() ElementSource {
	done := false
	return func() (string, int64, error) {
		if done {
			return "", 0, io.EOF
		}
		done = true
		return "k", 5, nil
	}
}

func testSpec(t *testing.T, dataset string, eps float64) SampleSpec {
	t.Helper()
	p, err := sanitize.NewPrivacy(eps, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := NewSampleSpec(dataset, p, s, ReleaseFrequencies, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// purgeWatcher is a store whose PurgeExpired reports every count it purged
// on purged, so a test waits for the janitor's purge instead of sleeping
// for a time a busy machine might not keep.
type purgeWatcher struct {
	store.Store
	purged chan store.PurgeCount
}

func (w purgeWatcher) PurgeExpired(ctx context.Context, now time.Time) (store.PurgeCount, error) {
	n, err := w.Store.PurgeExpired(ctx, now)
	if err == nil && n.Samples > 0 {
		select {
		case w.purged <- n:
		default:
		}
	}
	return n, err
}

// TestSampleRetention: with SampleTTL a sample says when it expires, is not
// found once expired, and the janitor deletes it from the store (a purge
// after it finds nothing left), so the store does not grow without bound.
// It waits for the janitor's purge (a liveness bound of a minute), never for
// a fixed time.
func TestSampleRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = 100 * time.Millisecond
	watch := purgeWatcher{Store: store.NewMemory(), purged: make(chan store.PurgeCount, 1)}
	svc, err := New(Config{Store: watch, SampleTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	smp, err := svc.Samples.Create(ctx, testSpec(t, "", 0.5), 10, oneElement())
	if err != nil {
		t.Fatal(err)
	}
	if !smp.ExpiresAt.Equal(smp.CreatedAt.Add(ttl)) {
		t.Fatalf("expires_at %v, want created_at + %v", smp.ExpiresAt, ttl)
	}
	if got, err := svc.getSample(ctx, smp.ID); err != nil || !got.ExpiresAt.Equal(smp.ExpiresAt) {
		t.Fatalf("before expiry: %v %v", got, err)
	}
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	go svc.RunJanitor(jctx, 10*time.Millisecond)
	select {
	case n := <-watch.purged:
		if n.Samples != 1 {
			t.Fatalf("the janitor purged %d samples, want the 1 expired", n.Samples)
		}
	case <-time.After(time.Minute):
		t.Fatal("the janitor purged nothing within a minute of the TTL")
	}
	if _, err := svc.getSample(ctx, smp.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after expiry: %v, want ErrNotFound", err)
	}
	if items, _, err := svc.Samples.List(ctx, Page{}); err != nil || len(items) != 0 {
		t.Fatalf("listing after expiry: %d items, %v", len(items), err)
	}
	if n, err := svc.purgeExpired(ctx); err != nil || n.Samples != 0 {
		t.Fatalf("the janitor left %d expired samples (%v)", n.Samples, err)
	}
	// Without a TTL samples do not expire.
	keep, _ := New(Config{Store: store.NewMemory()})
	smp, _ = keep.Samples.Create(ctx, testSpec(t, "", 0.5), 10, oneElement())
	if !smp.ExpiresAt.IsZero() {
		t.Fatalf("expires_at %v without a TTL", smp.ExpiresAt)
	}
	// A recorded sample answer never outlives the sample.
	if capped, _ := New(Config{Store: store.NewMemory(), SampleTTL: time.Hour}); capped.idemTTL != time.Hour {
		t.Fatalf("idempotency TTL %v with a sample TTL of 1h, want 1h", capped.idemTTL)
	}
	if _, err := New(Config{Store: store.NewMemory(), SampleTTL: -time.Second}); err == nil {
		t.Fatal("a negative TTL was accepted")
	}
}

// TestBudgetPrecheck: an overspend is refused before the first element is
// read, with the numbers; an unknown dataset is refused likewise.
func TestBudgetPrecheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.NewMemory()
	svc, _ := New(Config{Store: st})
	if _, err := svc.Datasets.Create(ctx, "d", 1, 1); err != nil {
		t.Fatal(err)
	}
	untouched := func() (string, int64, error) {
		t.Fatal("the upload was read before the budget check")
		return "", 0, nil
	}
	_, err := svc.Samples.Create(ctx, testSpec(t, "d", 1.5), 10, untouched)
	var be *BudgetError
	if !errors.As(err, &be) || !errors.Is(err, ErrBudget) {
		t.Fatalf("overspend: %v, want *BudgetError", err)
	}
	if be.RequestedEpsilon != 1.5 || be.SpentEpsilon != 0 || be.remainingEpsilon() != 1 || be.remainingDelta() != 1 {
		t.Fatalf("budget error %+v", be)
	}
	if _, err := svc.Samples.Create(ctx, testSpec(t, "nope", 0.5), 10, untouched); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown dataset: %v", err)
	}
}

// TestIdempotencyClaims: a key freed by a failed first request is claimed
// by the next; a reservation left by a stopped server (lease over, not
// done) is never run again; a duplicate that cannot wait long enough is
// told the first is in progress.
func TestIdempotencyClaims(t *testing.T) {
	t.Parallel() // the 20 ms sleep only lets the waiter start first; a waiter that comes later claims the freed key too
	ctx := context.Background()
	st := store.NewMemory()
	svc, _ := New(Config{Store: st, IdempotencyWait: 50 * time.Millisecond})
	c, err := svc.Idempotency.Begin(ctx, "k")
	if err != nil || !c.Reserved {
		t.Fatalf("first claim: %+v %v", c, err)
	}
	if _, err := svc.Idempotency.Begin(ctx, "k"); !errors.Is(err, ErrIdempotencyInProgress) {
		t.Fatalf("duplicate while running: %v", err)
	}
	got := make(chan *IdempotencyClaim)
	go func() {
		c, _ := New(Config{Store: st, IdempotencyWait: 5 * time.Second})
		claim, _ := c.Idempotency.Begin(ctx, "k")
		got <- claim
	}()
	time.Sleep(20 * time.Millisecond)
	if err := svc.Idempotency.Abandon(ctx, c); err != nil {
		t.Fatal(err)
	}
	c = <-got
	if c == nil || !c.Reserved {
		t.Fatalf("a waiter did not claim the freed key: %+v", c)
	}
	if err := svc.Idempotency.Finish(ctx, c, []byte{7}, IdempotentAnswer{Status: 201, Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if c, err := svc.Idempotency.Begin(ctx, "k"); err != nil || c.Reserved || c.Answer.Status != 201 || string(c.Answer.Body) != "x" {
		t.Fatalf("after finish: %+v %v", c, err)
	}
	past := time.Now().Add(-time.Minute)
	st.ReserveIdempotency(ctx, &store.IdempotencyRecord{Key: "stale", CreatedAt: past, LockedUntil: past, ExpiresAt: time.Now().Add(time.Hour)})
	if _, err := svc.Idempotency.Begin(ctx, "stale"); !errors.Is(err, ErrIdempotencyAbandoned) {
		t.Fatalf("abandoned key: %v", err)
	}
}
