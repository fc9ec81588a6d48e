package service

import (
	"context"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// TestRedactIdempotent: the recorded answers that created a deleted
// resource are replaced, so its content does not outlive it, while a repeat
// of the request is still answered (with the redacted answer) and runs
// nothing; answers of other resources are untouched.
func TestRedactIdempotent(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		for key, ref := range map[string]string{"first": "sample-1", "retry": "sample-1", "other": "sample-2"} {
			c, err := svc.Idempotency.Begin(ctx, key)
			if err != nil || !c.Reserved {
				t.Fatalf("claim %s: %+v %v", key, c, err)
			}
			a := IdempotentAnswer{Status: 201, Header: map[string]string{"Location": "/v1/samples/" + ref}, Body: []byte(`{"id":"` + ref + `","elements":["secret"]}`), Ref: ref}
			if err := svc.Idempotency.Finish(ctx, c, []byte(key), a); err != nil {
				t.Fatal(err)
			}
		}
		gone := IdempotentAnswer{Status: 410, Body: []byte(`{"title":"Gone"}`)}
		if err := svc.Idempotency.Redact(ctx, "sample-1", gone); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]int{"first": 410, "retry": 410, "other": 201} {
			c, err := svc.Idempotency.Begin(ctx, key)
			if err != nil || c.Reserved || c.Answer == nil || c.Answer.Status != want {
				t.Fatalf("%s after the redaction: %+v %v, want the recorded answer %d", key, c, err, want)
			}
			if want == 410 && (string(c.Answer.Body) != string(gone.Body) || c.Answer.Header["Location"] != "") {
				t.Fatalf("%s: the deleted sample's answer survives: %s %v", key, c.Answer.Body, c.Answer.Header)
			}
		}
		if err := svc.Idempotency.Redact(ctx, "no-such-ref", gone); err != nil {
			t.Fatalf("redacting nothing: %v", err)
		}
	})
}

// TestNewNeedsAStore: a service without a store, or with a negative sample
// TTL, is refused; defaults fill what is left zero.
func TestNewNeedsAStore(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Fatal("a service without a store was built")
	}
	s, err := New(Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if s.idemTTL != DefaultIdempotencyTTL || s.idemLease != DefaultIdempotencyLease || s.maxWork != DefaultMaxTableWork ||
		s.maxReleaseWork != DefaultMaxReleaseWork || s.noise == nil || s.newRand == nil || s.idemHold != s.idemWait+3*time.Minute {
		t.Fatalf("defaults: %+v", s)
	}
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("memory store not ready: %v", err)
	}
}
