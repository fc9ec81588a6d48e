package service

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// TestCounterSteps: one output and one standard error per bit; a batch
// that holds a bit other than 0 or 1 (named by its index) or would pass the
// horizon is refused whole and changes nothing; with monotone
// post-processing the outputs never decrease and the latest is kept with
// the counter across batches; an unknown counter is ErrNotFound.
func TestCounterSteps(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		c, err := svc.Counters.Create(ctx, panprivate.CounterConfig{Algorithm: panprivate.CounterTree, Epsilon: 1, Horizon: 6, Postprocess: panprivate.PostprocessMonotone})
		if err != nil {
			t.Fatal(err)
		}
		if c.State.Steps != 0 || c.State.Horizon != 6 || c.Postprocess != panprivate.PostprocessMonotone || c.Level == "" {
			t.Fatalf("created %+v", c)
		}
		out, err := svc.Counters.Steps(ctx, c.ID, []int{1, 1, 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Raw) != 3 || len(out.StandardErrors) != 3 || len(out.Monotone) != 3 || !slices.IsSorted(out.Monotone) {
			t.Fatalf("outputs %+v", out)
		}
		for _, tc := range []struct {
			name  string
			bits  []int
			field string
		}{
			{"bit 2", []int{1, 2}, "bits[1]"},
			{"negative bit", []int{-1}, "bits[0]"},
			{"past the horizon", []int{0, 0, 0, 0}, "bits"},
		} {
			if _, err := svc.Counters.Steps(ctx, c.ID, tc.bits); !slices.Equal(fieldsOf(err), []string{tc.field}) {
				t.Errorf("%s: %v, want a field error naming %s", tc.name, err, tc.field)
			}
		}
		got, err := svc.Counters.Get(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State.Steps != 3 || got.State.Count != out.Raw[2] || got.Monotone != out.Monotone[2] {
			t.Fatalf("after refused batches: %+v, want 3 steps, count %g, monotone %g", got, out.Raw[2], out.Monotone[2])
		}
		more, err := svc.Counters.Steps(ctx, c.ID, []int{1, 1, 1})
		if err != nil {
			t.Fatal(err)
		}
		if more.Monotone[0] < out.Monotone[2] || !slices.IsSorted(more.Monotone) {
			t.Fatalf("monotone outputs decreased across batches: %v then %v", out.Monotone, more.Monotone)
		}
		if _, err := svc.Counters.Steps(ctx, c.ID, []int{0}); !slices.Equal(fieldsOf(err), []string{"bits"}) {
			t.Fatalf("a full counter took a step: %v", err)
		}
		if err := svc.Counters.Delete(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Counters.Get(ctx, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted counter: %v", err)
		}
		if _, err := svc.Counters.Steps(ctx, c.ID, []int{1}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("steps of a deleted counter: %v", err)
		}
		if err := svc.Counters.Delete(ctx, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

// TestCreateCounterRefuses: invalid configurations are named and nothing is
// stored; an empty algorithm takes one for the horizon.
func TestCreateCounterRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	for _, tc := range []struct {
		name string
		cfg  panprivate.CounterConfig
	}{
		{"zero epsilon", panprivate.CounterConfig{Algorithm: panprivate.CounterTree, Horizon: 10}},
		{"zero horizon", panprivate.CounterConfig{Algorithm: panprivate.CounterTree, Epsilon: 1}},
		{"unknown algorithm", panprivate.CounterConfig{Algorithm: "abacus", Epsilon: 1, Horizon: 10}},
		{"unknown post-processing", panprivate.CounterConfig{Epsilon: 1, Horizon: 10, Postprocess: "smooth"}},
	} {
		if _, err := svc.Counters.Create(ctx, tc.cfg); len(fieldsOf(err)) == 0 {
			t.Errorf("%s: %v, want a field error", tc.name, err)
		}
	}
	if items, _, err := svc.Counters.List(ctx, Page{}); err != nil || len(items) != 0 {
		t.Fatalf("refused counters were stored: %d (%v)", len(items), err)
	}
	c, err := svc.Counters.Create(ctx, panprivate.CounterConfig{Epsilon: 1, Horizon: 1000})
	if err != nil || c.State.Algorithm == "" {
		t.Fatalf("default algorithm: %+v %v", c, err)
	}
}
