package service

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
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
		got, err := s.Tables.Prebuild(ctx, spec, 20_000)
		if err != nil {
			t.Fatal(err)
		}
		size := estimate.ChunkSize(p)
		if want := (20_000 + size - 1) / size; got.Chunks != want || got.Built != want || got.ChunkSize != size {
			t.Fatalf("prebuild %+v, want %d chunks of %d, all built", got, want, size)
		}
		before := s.cache.Computed()
		if _, err := s.Samples.Create(ctx, spec, 1000, zipfSource(1000, 19_000)); err != nil {
			t.Fatal(err)
		}
		if d := s.cache.Computed() - before; d != 0 {
			t.Errorf("the release computed %d chunk runs after the prebuild", d)
		}
		if again, err := s.Tables.Prebuild(ctx, spec, 20_000); err != nil || again.Built != 0 {
			t.Errorf("second prebuild %+v, %v: want nothing built", again, err)
		}
		s.Wait()
		s2, err := New(Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		if again, err := s2.Tables.Prebuild(ctx, spec, 20_000); err != nil || again.Built != 0 {
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
	_, err = s.Tables.Prebuild(context.Background(), spec, 1_000_000)
	if fs, ok := checks.Fields(err); !ok || fs[0].Field != "max_frequency" {
		t.Fatalf("error %v, want a 422 naming max_frequency", err)
	}
	if s.cache.Computed() != 0 {
		t.Error("a refused prebuild computed chunks")
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
	// No background build: it builds the chunks over the keys' supports,
	// values included, with their statistics, for the next release.
	s.cache.StopOptional()
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	spec, err := NewSampleSpec("", p, sm, ReleaseFrequencies, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := s.Samples.Create(ctx, spec, 1000, zipfSource(300, 2_000_000))
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	tb, err := sanitize.NewTable(p, sm, sanitize.MethodMaxSeparation) // a fresh table: nothing shared
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.cache.Sanitizer(p, sm, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	size := estimate.ChunkSize(p)
	light := 0
	computed := s.cache.Computed()
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
		// The release's chunk is served from the cache without building,
		// and holds no statistics.
		sets, err := s.cache.ChunkSets(ctx, st, []estimate.G{identityG}, []int64{k}, tablecache.Read{EstimatesOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if !sets[0].Chunks[k].HasStats() {
			light++
		}
	}
	if d := s.cache.Computed() - computed; d != 0 {
		t.Fatalf("reading the release's chunks again built %d runs", d)
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

// TestFirstEstimateAfterRelease: a frequencies release collects, on the
// chunk runs it builds anyway, the statistics at its keys' MLE frequencies
// (tablecache.Read.StatsAt), so that its first estimate builds no chunk
// where they were collected. Checked by work, not time: with the
// background builds stopped, the estimate GET right after the release
// builds runs only for the keys whose statistics were not collected (at
// most a twentieth), and its answer equals, bit for bit, the one read from
// chunks built with their statistics by a service of its own; both
// sanitizers, keys far apart (each its own chunk) and close together.
func TestFirstEstimateAfterRelease(t *testing.T) {
	t.Parallel()
	for _, m := range []sanitize.Method{sanitize.MethodMaxSeparation, sanitize.MethodDiscrete} {
		ctx := context.Background()
		s := newTestService(t, Config{})
		s.cache.StopOptional() // no background build: the GET's own work is counted
		p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
		sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
		spec, err := NewSampleSpec("", p, sm, ReleaseFrequencies, m)
		if err != nil {
			t.Fatal(err)
		}
		smp, err := s.Samples.Create(ctx, spec, 1000, zipfSource(400, 4_000_000))
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.cache.Sanitizer(p, sm, m)
		if err != nil {
			t.Fatal(err)
		}
		is := make([]int64, len(smp.Keys))
		for n, k := range smp.Keys {
			is[n] = statsFrequency(k.Frequency)
		}
		collected := s.cache.StatsAt(st, identityG, is)
		missed := 0
		for _, i := range is {
			if _, ok := collected[i]; !ok {
				missed++
			}
		}
		before := s.cache.Computed()
		got, err := s.Estimates.Sample(ctx, smp.ID, identityG, estimate.MLE, Selection{}, 0.95, GroupBy{})
		if err != nil {
			t.Fatal(err)
		}
		if built := s.cache.Computed() - before; built > int64(missed) || (missed == 0 && built != 0) {
			t.Errorf("%s: the first estimate built %d runs; %d of %d keys' statistics were not collected", m, built, missed, len(is))
		}
		if !estimate.ReferenceOnly && missed > len(is)/20 {
			t.Errorf("%s: statistics collected for %d of %d keys, want all but a twentieth", m, len(is)-missed, len(is))
		}
		// The same answer from chunks with statistics, built by a service
		// that collected nothing (its sample imported, not released).
		other := newTestService(t, Config{})
		ot, err := other.cache.Sanitizer(p, sm, m)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]estimate.ReportedKey, len(smp.Elements))
		fks := make([]int64, 0, len(smp.Elements))
		size := estimate.ChunkSize(p)
		for n, el := range smp.Elements {
			keys[n] = estimate.ReportedKey{Value: el.Value, Frequency: smp.Keys[n].Frequency}
			fks = append(fks, estimate.ChunkOf(el.Value, size), estimate.ChunkOf(float64(is[n]), size))
		}
		sets, err := other.chunkSets(ctx, ot, []estimate.G{identityG}, fks)
		if err != nil {
			t.Fatal(err)
		}
		unseen, err := estimate.SumUnseenWeight(sets[0], keys, p, sm)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sumWithError(sets[0], keys, 0.95, sm, unseen)
		if err != nil {
			t.Fatal(err)
		}
		if got.SumError != want {
			t.Errorf("%s: first estimate %+v, from full chunks %+v", m, got.SumError, want)
		}
	}
}

// TestNextReleaseChunks: the chunks a release has built in the background
// for the next one (nextReleaseChunks) hold the values of the next release
// of the same keys under the same parameters: with them built, that
// release builds at most one run (its values are new draws over each
// key's row support, about 2L below its frequency, which lies within about
// L of its MLE frequency: a value outside the chunks built takes a tail of
// the MLE's error beyond 1.05 L; none in 300 keys on the Zipf workload,
// where building only the MLE frequencies' chunks leaves 4 or 5 runs to
// build). Counted as work, and independent of the background's pace: the
// chunks are built here, as Prefetch would, with every background build
// stopped.
func TestNextReleaseChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := sanitize.Privacy{Epsilon: 0.1, Delta: 1e-6}
	sm := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	for _, m := range []sanitize.Method{sanitize.MethodMaxSeparation, sanitize.MethodDiscrete} {
		s := newTestService(t, Config{})
		s.cache.StopOptional()
		spec, err := NewSampleSpec("", p, sm, ReleaseFrequencies, m)
		if err != nil {
			t.Fatal(err)
		}
		first, err := s.Samples.Create(ctx, spec, 1000, zipfSource(200, 4_000_000))
		if err != nil {
			t.Fatal(err)
		}
		freq := make([]float64, len(first.Keys))
		for n, k := range first.Keys {
			freq[n] = k.Frequency
		}
		st, err := s.cache.Sanitizer(p, sm, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.cache.ChunkSets(ctx, st, []estimate.G{identityG, countG}, nextReleaseChunks(p, freq), tablecache.Read{}); err != nil {
			t.Fatal(err)
		}
		before := s.cache.Computed()
		next, err := s.Samples.Create(ctx, spec, 1000, zipfSource(200, 4_000_000))
		if err != nil {
			t.Fatal(err)
		}
		if built := s.cache.Computed() - before; built > 1 {
			t.Errorf("%s: the next release built %d runs for %d keys, want at most one", m, built, len(next.Elements))
		}
	}
}
