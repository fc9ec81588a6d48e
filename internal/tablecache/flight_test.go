package tablecache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFlightCallerLeavesOthersServed: two callers share one computation;
// the first goes away (its context is cancelled) and gets its context's
// error at once, while the computation keeps running under an uncancelled
// context and the second caller gets its result.
func TestFlightCallerLeavesOthersServed(t *testing.T) {
	t.Parallel()
	var g flight
	release := make(chan struct{})
	started := make(chan struct{})
	fn := func(ctx context.Context) (any, error) {
		close(started)
		<-release
		if err := ctx.Err(); err != nil {
			return nil, err // a cancelled computation would fail the second caller
		}
		return 42, nil
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	err1 := make(chan error, 1)
	go func() { _, err := g.do(ctx1, "k", fn); err1 <- err }()
	<-started
	res2 := make(chan any, 1)
	go func() {
		v, err := g.do(context.Background(), "k", func(context.Context) (any, error) { return nil, errors.New("second computation started") })
		if err != nil {
			v = err
		}
		res2 <- v
	}()
	// Wait until the second caller has joined the call.
	for {
		g.mu.Lock()
		w := g.calls["k"].waiters
		g.mu.Unlock()
		if w == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel1()
	if err := <-err1; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: err = %v, want context.Canceled", err)
	}
	close(release)
	if v := <-res2; v != 42 {
		t.Fatalf("second caller got %v, want 42 from the shared computation", v)
	}
}

// TestFlightAllCallersLeaveCancelsWork: when every caller has gone the
// computation's context is cancelled (abandoned work stops), and a later
// caller starts a fresh computation.
func TestFlightAllCallersLeaveCancelsWork(t *testing.T) {
	t.Parallel()
	var g flight
	stopped := make(chan struct{})
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.do(ctx, "k", func(ctx context.Context) (any, error) {
			close(started)
			<-ctx.Done()
			close(stopped)
			return nil, ctx.Err()
		})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	<-stopped // the computation saw its context cancelled (else the test hangs)
	v, err := g.do(context.Background(), "k", func(context.Context) (any, error) { return "fresh", nil })
	if err != nil || v != "fresh" {
		t.Fatalf("later caller: %v, %v; want a fresh computation", v, err)
	}
}

// TestFlightHold: held keys are pending until their holder is done, a key
// held twice stays its first holder's, and done releases only the holder's
// own keys.
func TestFlightHold(t *testing.T) {
	t.Parallel()
	var g flight
	if g.pending("a") != nil {
		t.Fatal("a key nobody holds is pending")
	}
	doneA := g.hold([]string{"a", "b"})
	chA := g.pending("a")
	if chA == nil || g.pending("b") == nil {
		t.Fatal("held keys are not pending")
	}
	doneB := g.hold([]string{"b", "c"}) // b is already held: only c is this holder's
	doneB()
	if g.pending("b") == nil {
		t.Fatal("the second holder's done released the first holder's key")
	}
	if g.pending("c") != nil {
		t.Fatal("done left its own key pending")
	}
	select {
	case <-chA:
		t.Fatal("a's channel closed before its holder was done")
	default:
	}
	doneA()
	<-chA // closed now (else the test hangs)
	if g.pending("a") != nil || g.pending("b") != nil {
		t.Fatal("keys pending after their holder was done")
	}
}
