package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// DefaultIdempotencyTTL is how long an Idempotency-Key is remembered when
// PWSD_IDEMPOTENCY_TTL is unset.
const DefaultIdempotencyTTL = 24 * time.Hour

// Idempotency outcomes the API maps to statuses.
var (
	// ErrIdempotencyInProgress: the first request with the key still runs
	// and did not finish while the duplicate waited (409).
	ErrIdempotencyInProgress = errors.New("a request with this Idempotency-Key is still in progress; retry later")
	// ErrIdempotencyAbandoned: the server stopped while the first request
	// with the key ran, so its outcome is unknown; the key is never run
	// again (that could charge twice) until it expires (409).
	ErrIdempotencyAbandoned = errors.New("the first request with this Idempotency-Key was interrupted by a server stop, so its outcome is unknown; check the dataset's ledger and retry with a new key")
)

// IdempotentAnswer is a recorded answer: status, the headers that matter,
// and the body.
type IdempotentAnswer struct {
	Status int
	Header map[string]string
	Body   []byte
	// Ref names the resource the request created (its Location), if any:
	// RedactIdempotent finds the answer by it when the resource is deleted.
	Ref string
}

// IdempotencyClaim is the outcome of BeginIdempotent. When Reserved, the
// caller runs the request and must call FinishIdempotent or
// AbandonIdempotent; otherwise the first request with the key is done and
// RequestHash and Answer are its digest and answer.
type IdempotencyClaim struct {
	Key         string
	Reserved    bool
	RequestHash []byte
	Answer      *IdempotentAnswer
	// stop ends the heartbeat renewing a reservation's lease and waits
	// for it; nil when not Reserved.
	stop func()
}

// DefaultIdempotencyLease is the lease of a reservation when
// Config.IdempotencyLease is unset: the request renews it every third of
// it while it runs, so a repeat of a request whose server died learns so
// (ErrIdempotencyAbandoned) within this long.
const DefaultIdempotencyLease = 8 * time.Second

// heartbeat renews the lease of the reservation of key every third of the
// lease until the returned stop is called (stop waits for it to end), and
// for at most s.idemHold, the longest the request can run. A failed
// renewal is logged and retried at the next beat: if renewals keep failing
// the lease lapses and repeats are answered "interrupted" (a 409, never a
// second run).
func (s *Idempotency) heartbeat(ctx context.Context, key string) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	last := time.Now().Add(s.idemHold)
	go func() {
		defer close(done)
		t := time.NewTicker(s.idemLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if now.After(last) {
					return // no request runs this long: let the lease lapse
				}
				rctx, rcancel := context.WithTimeout(ctx, s.idemLease/3)
				err := s.store.RenewIdempotency(rctx, key, time.Now().UTC().Add(s.idemLease))
				rcancel()
				if err != nil && ctx.Err() == nil {
					s.log.Warn("renewing an idempotency lease failed", "error", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// release stops c's heartbeat, if any.
func (c *IdempotencyClaim) release() {
	if c != nil && c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// Begin claims key (a digest naming the caller and its
// Idempotency-Key). Exactly one of concurrent callers with a key is
// Reserved; the others wait until it finishes and get its answer, or
// ErrIdempotencyInProgress when ctx ends or the wait passes
// Config.IdempotencyWait. A key whose first request was interrupted by a
// server stop answers ErrIdempotencyAbandoned until it expires.
func (s *Idempotency) Begin(ctx context.Context, key string) (*IdempotencyClaim, error) {
	deadline := time.Now().Add(s.idemWait)
	pause := 5 * time.Millisecond
	for {
		now := time.Now().UTC()
		// The lease is short and renewed while the request runs
		// (heartbeat): a record whose lease lapsed belonged to a server
		// that stopped. The reservation itself lives at least as long as
		// its request can (s.idemHold), whatever the TTL.
		rec := &store.IdempotencyRecord{Key: key, CreatedAt: now, LockedUntil: now.Add(s.idemLease), ExpiresAt: now.Add(max(s.idemTTL, s.idemHold))}
		cur, reserved, err := s.store.ReserveIdempotency(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("reserving idempotency key: %w", err)
		}
		if reserved {
			return &IdempotencyClaim{Key: key, Reserved: true, stop: s.heartbeat(ctx, key)}, nil
		}
		for !cur.Done {
			if now.After(cur.LockedUntil) {
				return nil, ErrIdempotencyAbandoned
			}
			if now.After(deadline) {
				return nil, ErrIdempotencyInProgress
			}
			select {
			case <-ctx.Done():
				return nil, ErrIdempotencyInProgress
			case <-time.After(pause):
			}
			pause = min(2*pause, 200*time.Millisecond)
			now = time.Now().UTC()
			cur, err = s.store.GetIdempotency(ctx, key)
			if errors.Is(err, store.ErrNotFound) {
				break // the first request failed and freed the key: claim it
			}
			if err != nil {
				return nil, fmt.Errorf("reading idempotency key: %w", err)
			}
		}
		if cur != nil && cur.Done {
			return &IdempotencyClaim{Key: key, RequestHash: cur.RequestHash,
				Answer: &IdempotentAnswer{Status: cur.Status, Header: cur.Header, Body: cur.Body}}, nil
		}
	}
}

// Finish records the digest of the reserved request of c and its
// answer, kept for the idempotency TTL from now; later requests with the
// key get the answer again.
func (s *Idempotency) Finish(ctx context.Context, c *IdempotencyClaim, requestHash []byte, a IdempotentAnswer) error {
	c.release()
	err := s.store.CompleteIdempotency(ctx, &store.IdempotencyRecord{Key: c.Key, RequestHash: requestHash, Status: a.Status, Header: a.Header, Body: a.Body, Ref: a.Ref,
		ExpiresAt: time.Now().UTC().Add(s.idemTTL)})
	if err != nil {
		return fmt.Errorf("recording idempotent answer: %w", err)
	}
	return nil
}

// Abandon frees the reserved key of c whose request changed
// nothing (it failed with a server error), so that a retry runs it again.
func (s *Idempotency) Abandon(ctx context.Context, c *IdempotencyClaim) error {
	c.release()
	if err := s.store.ReleaseIdempotency(ctx, c.Key); err != nil {
		return fmt.Errorf("freeing idempotency key: %w", err)
	}
	return nil
}

// Redact replaces every recorded answer that created ref (a
// resource now deleted) by a: the deleted resource's content does not
// outlive it in the idempotency records, and a repeat of the request that
// created it still runs nothing (it would charge again).
func (s *Idempotency) Redact(ctx context.Context, ref string, a IdempotentAnswer) error {
	if err := s.store.RedactIdempotency(ctx, ref, a.Status, a.Header, a.Body); err != nil {
		return fmt.Errorf("redacting idempotent answers: %w", err)
	}
	return nil
}
