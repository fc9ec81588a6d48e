package service

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// zipfSource yields n keys of frequency floor(top / r), r = 1..n.
func zipfSource(n int, top int64) ElementSource {
	r := 0
	return func() (string, int64, error) {
		if r == n {
			return "", 0, io.EOF
		}
		r++
		return fmt.Sprintf("k%d", r), max(1, top/int64(r)), nil
	}
}

// TestPrebuildThenRelease: after PrebuildChunks, a frequencies release whose
// keys lie under max_frequency computes no chunk (everything it reads was
// built ahead); a second prebuild builds nothing; and the chunks survive a
// restart through the store (a new service on the same PostgreSQL database
// builds nothing either).
func TestPrebuildThenRelease(t *testing.T) {
	t.Parallel()
	bothStores(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
		smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
		spec, err := NewSampleSpec("", p, smp, ReleaseFrequencies, sanitize.MethodDiscrete)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.PrebuildChunks(ctx, spec, 20_000)
		if err != nil {
			t.Fatal(err)
		}
		size := estimate.ChunkSize(p)
		if want := (20_000 + size - 1) / size; got.Chunks != want || got.Built != want || got.ChunkSize != size {
			t.Fatalf("prebuild %+v, want %d chunks of %d, all built", got, want, size)
		}
		before := s.computed.Load()
		if _, err := s.CreateSample(ctx, spec, 1000, zipfSource(1000, 19_000)); err != nil {
			t.Fatal(err)
		}
		if d := s.computed.Load() - before; d != 0 {
			t.Errorf("the release computed %d chunk runs after the prebuild", d)
		}
		if again, err := s.PrebuildChunks(ctx, spec, 20_000); err != nil || again.Built != 0 {
			t.Errorf("second prebuild %+v, %v: want nothing built", again, err)
		}
		s.Wait()
		s2, err := New(Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		if again, err := s2.PrebuildChunks(ctx, spec, 20_000); err != nil || again.Built != 0 {
			t.Errorf("after a restart: %+v, %v: want the chunks read from the store", again, err)
		}
	})
}

// TestPrebuildBounded: a prebuild whose work passes the limit is a 422
// naming max_frequency, computing nothing.
func TestPrebuildBounded(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{MaxTableWork: 1_000_000})
	spec, err := NewSampleSpec("", sanitize.Privacy{Epsilon: 0.1, Delta: 1e-6},
		sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, ReleaseFrequencies, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PrebuildChunks(context.Background(), spec, 1_000_000)
	if fs, ok := checks.Fields(err); !ok || fs[0].Field != "max_frequency" {
		t.Fatalf("error %v, want a 422 naming max_frequency", err)
	}
	if s.computed.Load() != 0 {
		t.Error("a refused prebuild computed chunks")
	}
}

// TestChunkSetsWaitForBuilds: a request needing chunks that another one is
// building waits for that build and does not build them again.
func TestChunkSetsWaitForBuilds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestService(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	tb, err := s.tables.get(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	size := estimate.ChunkSize(p)
	gs := []estimate.G{identityG}
	ks := []int64{40, 41}
	// Build the chunks elsewhere first (the "other request"), then take
	// them out of the cache and mark them as under construction.
	built, err := estimate.BuildChunks(ctx, tb, gs, size, 40, 2)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{s.chunkKey(tb, identityG, size, 40), s.chunkKey(tb, identityG, size, 41)}
	done := s.building.start(keys)
	if s.building.pending(keys[0]) == nil || s.building.pending(keys[1]) == nil {
		t.Fatal("a chunk under construction is not pending")
	}
	type result struct {
		sets []*estimate.ChunkSet
		err  error
	}
	// A request for estimates only does not wait for builds with
	// statistics: it builds its own (cheaper) chunks at once.
	others := []int64{60, 61}
	doneOthers := s.building.start([]string{s.chunkKey(tb, identityG, size, 60), s.chunkKey(tb, identityG, size, 61)})
	defer doneOthers()
	light := make(chan error, 1)
	go func() {
		_, err := s.chunkSetsOf(ctx, tb, gs, others, true)
		light <- err
	}()
	select {
	case err := <-light:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an estimates-only request waited for a build with statistics")
	}
	got := make(chan result, 1)
	before := s.computed.Load()
	go func() {
		sets, err := s.chunkSets(ctx, tb, gs, ks)
		got <- result{sets, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("chunkSets returned (%v) while its chunks were being built", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	for k, cs := range built {
		s.chunkCache.Add(keys[k], cs[0])
	}
	done()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d := s.computed.Load() - before; d != 0 {
		t.Errorf("%d chunk runs built again", d)
	}
	if s.building.pending(keys[0]) != nil {
		t.Error("a finished build is still pending")
	}
	for k, key := range keys {
		if c := r.sets[0].Chunks[ks[k]]; c == nil {
			t.Errorf("chunk %s missing from the set", key)
		}
	}
}

// TestReleaseReadsEstimatesOnly: an Algorithm 5 frequencies release builds
// (and caches) its value chunks without statistics, and the estimates it
// stores are those of full chunks bit for bit; a later read that needs
// statistics gets chunks that hold them.
func TestReleaseReadsEstimatesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestService(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	spec, err := NewSampleSpec("", p, sm, ReleaseFrequencies, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := s.CreateSample(ctx, spec, 1000, zipfSource(300, 2_000_000))
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	tb, err := sanitize.NewTable(p, sm, sanitize.MethodMaxSeparation) // a fresh table: nothing shared
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.tables.get(p, sm, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	size := estimate.ChunkSize(p)
	light := 0
	for _, el := range smp.Elements {
		k := estimate.ChunkOf(el.Value, size)
		full, err := estimate.BuildChunk(ctx, tb, identityG, size, k)
		if err != nil {
			t.Fatal(err)
		}
		want, err := full.Estimate(el.Value)
		if err != nil {
			t.Fatal(err)
		}
		if el.Estimate != want {
			t.Fatalf("value %g: stored estimate %g, full chunk %g", el.Value, el.Estimate, want)
		}
		if c, ok := s.chunkCache.Get(s.chunkKeyOf(st, identityG, size, k, true)); ok && !c.HasStats() {
			light++
		}
	}
	if light == 0 && !estimate.ReferenceOnly { // the reference chunk builder keeps statistics
		t.Fatal("the release cached no estimates-only chunk")
	}
	sets, err := s.chunkSets(ctx, st, []estimate.G{identityG}, []int64{estimate.ChunkOf(smp.Elements[0].Value, size)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sets[0].Chunks {
		if !c.HasStats() {
			t.Fatal("a read needing statistics got an estimates-only chunk")
		}
	}
}

// TestStopOptionalCancelsPrefetch: a background build of the chunks a
// release's estimates will read stops soon after StopOptional (a shutdown
// does not wait for it), having built only part of them.
func TestStopOptionalCancelsPrefetch(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.1, Delta: 1e-6}
	tb, err := s.tables.get(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-7, Power: 1}, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	ks := make([]int64, 2000) // isolated chunks far up: seconds of work
	for i := range ks {
		ks[i] = 10_000 + int64(i)*97
	}
	s.prefetchChunks(tb, []estimate.G{identityG}, ks)
	time.Sleep(50 * time.Millisecond)
	s.StopOptional()
	s.Wait() // without the stop, it waits for all 2000 runs: the count below tells
	if n := s.computed.Load(); n >= int64(len(ks)) {
		t.Errorf("%d runs built: the prefetch was not stopped", n)
	}
}
