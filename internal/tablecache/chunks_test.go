package tablecache

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestChunkSetsWaitForBuilds: a request needing chunks that another one is
// building waits for that build and does not build them again.
func TestChunkSetsWaitForBuilds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	tb, err := s.Sanitizer(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, sanitize.MethodDiscrete)
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
	keys := []string{s.chunkKey(tb, identityG, size, 40, false), s.chunkKey(tb, identityG, size, 41, false)}
	done := s.flight.hold(keys)
	if s.flight.pending(keys[0]) == nil || s.flight.pending(keys[1]) == nil {
		t.Fatal("a chunk under construction is not pending")
	}
	type result struct {
		sets []*estimate.ChunkSet
		err  error
	}
	// A request for estimates only does not wait for builds with
	// statistics: it builds its own (cheaper) chunks at once.
	others := []int64{60, 61}
	doneOthers := s.flight.hold([]string{s.chunkKey(tb, identityG, size, 60, false), s.chunkKey(tb, identityG, size, 61, false)})
	defer doneOthers()
	light := make(chan error, 1)
	go func() {
		_, err := s.ChunkSets(ctx, tb, gs, others, Read{EstimatesOnly: true})
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
	before := s.Computed()
	go func() {
		sets, err := s.ChunkSets(ctx, tb, gs, ks, Read{})
		got <- result{sets, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("chunkSets returned (%v) while its chunks were being built", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	for k, cs := range built {
		s.chunks.Add(keys[k], cs[0])
	}
	done()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d := s.Computed() - before; d != 0 {
		t.Errorf("%d chunk runs built again", d)
	}
	if s.flight.pending(keys[0]) != nil {
		t.Error("a finished build is still pending")
	}
	for k, key := range keys {
		if c := r.sets[0].Chunks[ks[k]]; c == nil {
			t.Errorf("chunk %s missing from the set", key)
		}
	}
}

// TestStopOptionalCancelsPrefetch: a background build of the chunks a
// release's estimates will read stops soon after StopOptional (a shutdown
// does not wait for it), having built only part of them.
func TestStopOptionalCancelsPrefetch(t *testing.T) {
	t.Parallel()
	s := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.1, Delta: 1e-6}
	tb, err := s.Sanitizer(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-7, Power: 1}, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	ks := make([]int64, 2000) // isolated chunks far up: seconds of work
	for i := range ks {
		ks[i] = 10_000 + int64(i)*97
	}
	s.Prefetch(tb, []estimate.G{identityG}, ks)
	time.Sleep(50 * time.Millisecond)
	s.StopOptional()
	s.Wait() // without the stop, it waits for all 2000 runs: the count below tells
	if n := s.Computed(); n >= int64(len(ks)) {
		t.Errorf("%d runs built: the prefetch was not stopped", n)
	}
}

// TestBackgroundYieldsToRequests: while a request is under way (Busy), a
// background build does not start a run: yield waits (here until its
// context ends, which it reports); once the request has ended (and the
// quiet period after it passed), yield returns and the build runs and
// builds what it was asked for. Busy's done may be called twice.
func TestBackgroundYieldsToRequests(t *testing.T) {
	t.Parallel()
	s := newTestCache(t, Config{})
	done := s.Busy()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.yield(cancelled); err == nil {
		t.Fatal("yield returned while a request was under way")
	}
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	tb, err := s.Sanitizer(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	s.Prefetch(tb, []estimate.G{identityG}, []int64{40})
	done()
	done() // idempotent
	if err := s.yield(context.Background()); err != nil {
		t.Fatalf("yield with no request under way: %v", err)
	}
	s.Wait()
	if s.Computed() != 1 {
		t.Fatalf("the background build computed %d runs, want 1", s.Computed())
	}
}

// TestStatsKeyIsAKey: the key of collected statistics built from its
// prefix (statsKeyAt) is the one Key builds from all its parts.
func TestStatsKeyIsAKey(t *testing.T) {
	t.Parallel()
	s := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	tb, err := s.Sanitizer(p, sm, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []estimate.G{identityG, {Kind: estimate.GCount}} {
		for _, i := range []int64{1, 129, 10_000_000} {
			want := s.Key("stats", p, sm, sanitize.MethodMaxSeparation, Int("format", estimate.ChunkFormat), Str("g", g.String()), Int("i", i))
			if got := statsKeyAt(s.statsKeyPrefix(tb, g), i); got != want {
				t.Errorf("%s at %d: %q, Key gives %q", g, i, got, want)
			}
		}
	}
}

// TestChunkKeysAreKeys: a chunk's key made from the keys' shared part
// (chunkKeys.at) is the one Key builds from all its parts, with and
// without statistics, for both g and chunks low and far up.
func TestChunkKeysAreKeys(t *testing.T) {
	t.Parallel()
	s := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	m := sanitize.MethodMaxSeparation
	tb, err := s.Sanitizer(p, sm, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []estimate.G{identityG, {Kind: estimate.GCount}} {
		for _, size := range []int64{64, 128} {
			ck := s.chunkKeysOf(tb, g, size)
			for _, k := range []int64{0, 1, 129, 10_000_000} {
				for _, estimatesOnly := range []bool{false, true} {
					want := s.Key("chunk", p, sm, m, Int("format", estimate.ChunkFormat), Str("g", g.String()), Int("size", size), Int("k", k))
					if estimatesOnly {
						want += "|estimates-only"
					}
					if got := ck.at(k, estimatesOnly); got != want {
						t.Errorf("%s size %d chunk %d (estimates only %v): %q, Key gives %q", g, size, k, estimatesOnly, got, want)
					}
					if gk, geo, ok := ck.index(want); !ok || gk != k || geo != estimatesOnly {
						t.Errorf("index(%q) = %d, %v, %v; want %d, %v", want, gk, geo, ok, k, estimatesOnly)
					}
					bad := ck.prefix + "|k=0" + strconv.FormatInt(k, 10) // a leading zero: not a key at gives
					if _, _, ok := ck.index(bad); ok {
						t.Errorf("index took %q, not a key at gives", bad)
					}
				}
			}
		}
	}
}
