package service

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// densitySpec is a non-continual density stream of epsilon 0.5 over 1000
// users with at most releases releases, charged to dataset.
func densitySpec(dataset string, releases int) StreamSpec {
	return StreamSpec{Dataset: dataset, Estimator: panprivate.Config{Estimator: panprivate.KindDensity, Algorithm: panprivate.AlgorithmDwork,
		Epsilon: 0.5, UniverseSize: 1000, SampleSize: 500, MaxReleases: releases}}
}

func users(ids ...uint64) []panprivate.Event {
	out := make([]panprivate.Event, len(ids))
	for i, id := range ids {
		out[i] = panprivate.Event{User: panprivate.UserID(id)}
	}
	return out
}

// TestCreateStreamRefuses: each combination CreateStream refuses is named by
// the field at fault, and nothing is stored.
func TestCreateStreamRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	continual := func(f func(*StreamSpec)) StreamSpec {
		s := StreamSpec{Continual: true, Estimator: panprivate.Config{Epsilon: 0.4, UniverseSize: 1000, SampleSize: 500}, Horizon: 100}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name  string
		spec  StreamSpec
		field string
	}{
		{"continual with another estimator", continual(func(s *StreamSpec) { s.Estimator.Estimator = panprivate.KindCroppedMean }), "estimator"},
		{"continual with an algorithm", continual(func(s *StreamSpec) { s.Estimator.Algorithm = panprivate.AlgorithmDwork }), "continual"},
		{"continual with max_releases", continual(func(s *StreamSpec) { s.Estimator.MaxReleases = 3 }), "continual"},
		{"continual with release noise", continual(func(s *StreamSpec) { s.Estimator.ReleaseNoise = "paper" }), "continual"},
		{"horizon without continual", func() StreamSpec { s := densitySpec("", 1); s.Horizon = 10; return s }(), "horizon"},
		{"counter without continual", func() StreamSpec { s := densitySpec("", 1); s.Counter = panprivate.CounterTree; return s }(), "horizon"},
		{"estimator epsilon above 1/2", func() StreamSpec { s := densitySpec("", 1); s.Estimator.Epsilon = 0.75; return s }(), "epsilon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Streams.Create(ctx, tc.spec)
			if got := fieldsOf(err); !slices.Contains(got, tc.field) {
				t.Fatalf("fields %v (%v), want %s among them", got, err, tc.field)
			}
		})
	}
	if items, _, err := svc.Streams.List(ctx, Page{}); err != nil || len(items) != 0 {
		t.Fatalf("refused streams were stored: %d (%v)", len(items), err)
	}
}

// TestStreamReleases: each release of a stream naming a dataset charges its
// epsilon to the ledger (kind stream, the stream's id as ref); past
// max_releases a release is ErrLimit and charges nothing; a release the
// budget cannot pay is a *BudgetError and neither counts nor charges; a
// level outside (0, 1) is named; a continual stream is charged its whole
// epsilon once, at creation, and one its dataset cannot pay is not created.
func TestStreamReleases(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		if _, err := svc.Datasets.Create(ctx, "d", 1.25, 0); err != nil {
			t.Fatal(err)
		}
		s, err := svc.Streams.Create(ctx, densitySpec("d", 2))
		if err != nil {
			t.Fatal(err)
		}
		if s.Privacy == nil || s.Privacy.PerRelease != 0.5 || s.Dataset != "d" || s.Releases != 0 {
			t.Fatalf("created %+v", s)
		}
		if _, err := svc.Streams.Apply(ctx, s.ID, users(1, 2, 3, 2)); err != nil {
			t.Fatal(err)
		}
		for _, level := range []float64{0, 1, -0.5, 1.5} {
			if _, err := svc.Streams.Release(ctx, s.ID, level); !slices.Equal(fieldsOf(err), []string{"level"}) {
				t.Fatalf("level %g: %v", level, err)
			}
		}
		for i := range 2 {
			r, err := svc.Streams.Release(ctx, s.ID, 0.9)
			if err != nil {
				t.Fatalf("release %d: %v", i+1, err)
			}
			if r.EpsilonSpent != 0.5 || r.Interval.Level != 0.9 || !(r.Interval.Lower <= r.Interval.Upper) || r.Min != 0 || r.Max != 1 {
				t.Fatalf("release %d: %+v", i+1, r)
			}
		}
		if _, err := svc.Streams.Release(ctx, s.ID, 0.9); !errors.Is(err, ErrLimit) {
			t.Fatalf("past max_releases: %v, want ErrLimit", err)
		}
		d, _ := svc.Datasets.Get(ctx, "d")
		if d.SpentEpsilon != 1 || len(d.Releases) != 2 || d.Releases[0].Kind != kindStream || d.Releases[0].Ref != s.ID {
			t.Fatalf("ledger after two releases: %+v", d)
		}
		// 0.25 left: the next stream's first release cannot be paid.
		poor, err := svc.Streams.Create(ctx, densitySpec("d", 5))
		if err != nil {
			t.Fatal(err)
		}
		var be *BudgetError
		if _, err := svc.Streams.Release(ctx, poor.ID, 0.9); !errors.As(err, &be) || be.RequestedEpsilon != 0.5 || be.SpentEpsilon != 1 {
			t.Fatalf("overspend: %v (%+v)", err, be)
		}
		if got, _ := svc.Streams.Get(ctx, poor.ID); got.Releases != 0 {
			t.Fatalf("a refused release was counted: %d", got.Releases)
		}
		cont := StreamSpec{Dataset: "d", Continual: true, Estimator: panprivate.Config{Epsilon: 0.25, UniverseSize: 1000, SampleSize: 500}, Horizon: 10}
		c, err := svc.Streams.Create(ctx, cont)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := svc.Datasets.Get(ctx, "d"); d.SpentEpsilon != 1.25 || d.Releases[len(d.Releases)-1].Ref != c.ID {
			t.Fatalf("continual stream's charge: %+v", d)
		}
		if _, err := svc.Streams.Create(ctx, cont); !errors.As(err, &be) {
			t.Fatalf("continual stream over budget: %v, want a *BudgetError", err)
		}
		cont.Dataset = "nope"
		var nf *NotFoundError
		if _, err := svc.Streams.Create(ctx, cont); !errors.As(err, &nf) || nf.Kind != "dataset" || nf.Name != "nope" {
			t.Fatalf("continual stream of an unknown dataset: %v", err)
		}
		if items, _, _ := svc.Streams.List(ctx, Page{}); len(items) != 3 {
			t.Fatalf("%d streams stored, want 3 (refused ones are not)", len(items))
		}
	})
}

// TestStreamEventsAllOrNothing: a batch with an invalid event changes
// nothing (the stored state is byte for byte the same); an announced
// intrusion is counted and re-randomizes the state; every operation on an
// unknown or deleted stream is ErrNotFound.
func TestStreamEventsAllOrNothing(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		s, err := svc.Streams.Create(ctx, densitySpec("", 1))
		if err != nil {
			t.Fatal(err)
		}
		state := func() []byte {
			rec, err := st.GetState(ctx, kindStream, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			return rec.State
		}
		before := state()
		if _, err := svc.Streams.Apply(ctx, s.ID, users(1, 2, 1000)); err == nil { // 1000 is outside the universe
			t.Fatal("an event outside the universe was accepted")
		}
		if !slices.Equal(state(), before) {
			t.Fatal("a refused batch changed the stored state")
		}
		if _, err := svc.Streams.Apply(ctx, s.ID, users(1, 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Streams.Intrude(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := svc.Streams.Get(ctx, s.ID); got.Intrusions != 1 {
			t.Fatalf("intrusions %d, want 1", got.Intrusions)
		}
		if err := svc.Streams.Delete(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		for name, op := range map[string]func(id string) error{
			"get":     func(id string) error { _, err := svc.Streams.Get(ctx, id); return err },
			"events":  func(id string) error { _, err := svc.Streams.Apply(ctx, id, users(1)); return err },
			"release": func(id string) error { _, err := svc.Streams.Release(ctx, id, 0.9); return err },
			"intrude": func(id string) error { _, err := svc.Streams.Intrude(ctx, id); return err },
			"delete":  func(id string) error { return svc.Streams.Delete(ctx, id) },
		} {
			for _, id := range []string{s.ID, "0123456789abcdef"} {
				if err := op(id); !errors.Is(err, ErrNotFound) {
					t.Errorf("%s %s: %v, want ErrNotFound", name, id, err)
				}
			}
		}
	})
}
