package service

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

func newTestService(t *testing.T, cfg Config) *Service {
	t.Helper()
	cfg.Store = store.NewMemory()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFrequencyRowsDeadline: a frequencies request whose context expires
// answers the context's error (the API's 503) instead of its result.
func TestFrequencyRowsDeadline(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{MaxTableWork: -1}) // the timeout, not the work bound, is under test
	p, _ := sanitize.NewPrivacy(0.2, 1e-7)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 2e-5, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := s.Tables.FrequencyRows(ctx, p, smp, sanitize.MethodDiscrete, 4_000_000, 4_000_000)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// TestAbandonedComputationStops: a small-epsilon frequencies request
// (L about 14,000: its rows to 10^5 would take many minutes) answers its
// deadline's error, and its computation then stops (its goroutine ends)
// instead of running on after the client has gone. The 20 s bound is a
// liveness limit, not a speed claim (it ends within milliseconds).
func TestAbandonedComputationStops(t *testing.T) {
	// Serial: it counts the process's goroutines, which parallel tests would change.
	s := newTestService(t, Config{MaxTableWork: -1}) // the timeout, not the work bound, is under test
	p, _ := sanitize.NewPrivacy(1e-3, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemeNone, 0, 1, nil)
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			base := runtime.NumGoroutine() // counted inside the subtest: its own goroutine is not a leak
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := s.Tables.FrequencyRows(ctx, p, smp, m, 100_000, 100_000); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for runtime.NumGoroutine() > base {
				if time.Now().After(deadline) {
					t.Fatal("the abandoned computation is still running")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
