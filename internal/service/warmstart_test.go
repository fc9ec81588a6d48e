package service

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// warmService is keptService (kept rows on, every request's draws from one
// seeded generator) over st counted by a timedTables wrapper, warming sets
// parameter sets when it starts.
func warmService(t *testing.T, st store.Store, sets int) (*Service, *timedTables) {
	t.Helper()
	ts := &timedTables{Store: st}
	s, err := New(Config{Store: ts, KeptRowsSteps: keptSteps, WarmStartSets: sets, NewRand: func() *rand.Rand { return dprand.Seeded(37) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Wait)
	return s, ts
}

// warmStats is what s's warm start did.
func warmStats(s *Service) tablecache.WarmStartStats {
	return s.cache.(*tablecache.Cache).WarmStartStats()
}

// TestWarmStartAfterRestart (issue 37): a frequencies release on service
// A, then service B over the same store with the warm start on. Once B's
// warm start is done (B.Wait), the same release on B reads nothing from the
// store (no kept rows, no chunk: the counted reads are 0), restores no
// Table on its path, steps as many rows as the same release on a service
// that ran a prebuild first (the oracle of issue 37's second round; both
// anchor rows below A's published MLE frequencies) and fewer than on a
// service restarted without either (its Table restored on the release's
// path, no anchored rows), and answers bit for bit as A did (the same
// seeded draws over the same rows).
// A release on service C, made while C's warm start may still run, answers
// the same too.
func TestWarmStartAfterRestart(t *testing.T) {
	t.Parallel()
	keys, freqs := spreadKeys(5, 200, 90_000)
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		spec := keptSpec(t, ReleaseFrequencies, sanitize.MethodMaxSeparation)
		want := releasedBefore(t, st, spec, keys, freqs)

		b, ts := warmService(t, st, DefaultWarmStartSets)
		b.Wait()
		if w := warmStats(b); w.Sets != 1 || w.Chunks == 0 || w.Anchored == 0 {
			t.Fatalf("the warm start warmed %d parameter sets, read %d chunks and anchored %d rows, want 1, some and some", w.Sets, w.Chunks, w.Anchored)
		}
		if n := keptStats(b).Restored; n != 1 {
			t.Fatalf("the warm start restored %d Tables, want 1", n)
		}
		ts.n.Store(0)
		got, steps := keptRelease(t, b, spec, keys, freqs)
		if n := ts.n.Load(); n != 0 {
			t.Errorf("after the warm start the release read the store %d times, want 0", n)
		}
		if n := keptStats(b).Restored; n != 1 {
			t.Errorf("the release restored a Table on its path (%d restored in all)", n)
		}
		sameElements(t, "release after the warm start", want, got)

		p := keptService(t, st)
		if _, err := p.Tables.Prebuild(context.Background(), spec, 1000); err != nil {
			t.Fatal(err)
		}
		prebuilt, prebuiltSteps := keptRelease(t, p, spec, keys, freqs)
		sameElements(t, "release after a prebuild", want, prebuilt)
		if steps != prebuiltSteps {
			t.Errorf("after the warm start the release stepped %d rows, after a prebuild %d: want the same (both anchor)", steps, prebuiltSteps)
		}
		r := keptService(t, st)
		restarted, restartSteps := keptRelease(t, r, spec, keys, freqs)
		sameElements(t, "release after a plain restart", want, restarted)
		if steps >= restartSteps {
			t.Errorf("after the warm start (anchored rows) the release stepped %d rows, after a plain restart (none) %d: want fewer", steps, restartSteps)
		}

		c, _ := warmService(t, st, DefaultWarmStartSets)
		during, _ := keptRelease(t, c, spec, keys, freqs)
		sameElements(t, "release during the warm start", want, during)
	})
}

// TestWarmStartObeysItsBound: three parameter sets released in turn (their
// kept rows stored in that order); a new service warming N of them restores
// exactly the N used last (the Tables of those are cached: making them
// restores nothing more; the others are restored when made), and with N = 0
// it reads nothing from the store at all. Every read of kept rows marks
// them used, so the order of use is set again (reading them in the order
// released) before each new service.
func TestWarmStartObeysItsBound(t *testing.T) {
	t.Parallel()
	specs := []SampleSpec{
		keptSpec(t, ReleaseKeys, sanitize.MethodDiscrete),
		keptSpec(t, ReleaseKeys, sanitize.MethodMaxSeparation),
		ppsworSpec(t, 1, 2e-5, ReleaseKeys, sanitize.MethodDiscrete),
	}
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		for _, spec := range specs {
			a := keptService(t, st)
			keptRelease(t, a, spec, []string{"a", "b"}, []int64{700, 70_000})
			a.Wait()
		}
		for _, n := range []int{0, 1, 2} {
			for _, spec := range specs {
				if _, ok, err := st.GetTable(context.Background(), keptKey(keptService(t, st), spec.Privacy, spec.Sampling, spec.Method)); err != nil || !ok {
					t.Fatalf("no kept rows stored (%v)", err)
				}
			}
			s, ts := warmService(t, st, n)
			s.Wait()
			if n == 0 && ts.n.Load() != 0 {
				t.Fatalf("N = 0: the service read the store %d times when it started", ts.n.Load())
			}
			if w := warmStats(s); w.Sets != int64(n) || keptStats(s).Restored != int64(n) {
				t.Fatalf("N = %d: the warm start warmed %d sets, restored %d Tables", n, w.Sets, keptStats(s).Restored)
			}
			// Made most recent first: the N warmed Tables are cached, the
			// others are restored now.
			for i := len(specs) - 1; i >= 0; i-- {
				spec := specs[i]
				if _, err := s.cache.Sanitizer(spec.Privacy, spec.Sampling, spec.Method); err != nil {
					t.Fatal(err)
				}
				warmed := len(specs)-1-i < n
				want := int64(n)
				if !warmed {
					want = int64(len(specs) - i)
				}
				if got := keptStats(s).Restored; got != want {
					t.Fatalf("N = %d: after making the Table of set %d (warmed %v), %d Tables restored, want %d", n, i, warmed, got, want)
				}
			}
		}
	})
}

// TestWarmStartSetsValidated: New refuses a negative WarmStartSets and one
// above the sanitizer tables kept in memory.
func TestWarmStartSetsValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sets, tables int
		ok           bool
	}{{-1, 0, false}, {0, 0, true}, {64, 0, true}, {65, 0, false}, {8, 8, true}, {9, 8, false}} {
		_, err := New(Config{Store: store.NewMemory(), WarmStartSets: tc.sets, TableCacheSize: tc.tables})
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "WarmStartSets")) {
			t.Errorf("WarmStartSets %d, TableCacheSize %d: error %v, want ok %v", tc.sets, tc.tables, err, tc.ok)
		}
	}
}

// TestFirstEstimateAfterRestart (issues 34 and 37): the first estimate GET
// of a sample released before a restart, sent once the new service's warm
// start is done, builds no chunk run and reads nothing from the store: the
// warm start read the chunks with statistics that the first service built
// for the next release (around the keys' MLE frequencies), and the value
// chunks of the release. Its answer is the first service's, bit for bit.
// Both sanitizers; on the memory store and on PostgreSQL.
func TestFirstEstimateAfterRestart(t *testing.T) {
	t.Parallel()
	keys, freqs := spreadKeys(7, 200, 90_000)
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		ctx := context.Background()
		for _, m := range []sanitize.Method{sanitize.MethodMaxSeparation, sanitize.MethodDiscrete} {
			spec := keptSpec(t, ReleaseFrequencies, m)
			a := keptService(t, st)
			smp, err := a.Samples.Create(ctx, spec, len(keys), pairs(keys, freqs))
			if err != nil {
				t.Fatal(err)
			}
			a.Wait() // the next release's chunks, with their statistics, are stored
			want, err := a.Estimates.Sample(ctx, smp.ID, identityG, estimate.MLE, Selection{}, 0.95, GroupBy{})
			if err != nil {
				t.Fatal(err)
			}
			a.Wait()

			b, ts := warmService(t, st, DefaultWarmStartSets)
			b.Wait()
			ts.n.Store(0)
			before := b.cache.Computed()
			got, err := b.Estimates.Sample(ctx, smp.ID, identityG, estimate.MLE, Selection{}, 0.95, GroupBy{})
			if err != nil {
				t.Fatal(err)
			}
			if built := b.cache.Computed() - before; built != 0 {
				t.Errorf("%s: the first estimate after the restart built %d chunk runs, want 0", m, built)
			}
			if n := ts.n.Load(); n != 0 {
				t.Errorf("%s: the first estimate after the restart read the store's table cache %d times, want 0 (without the warm start: 4)", m, n)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: the first estimate after the restart is %+v, before it %+v", m, got.SumError, want.SumError)
			}
		}
	})
}

// TestWarmStartRefusesDamagedAnchors (issue 37): stored anchor places
// that fail their checks (one bit flipped) are deleted by the warm start
// and never used: it anchors no row, and the release after it answers bit
// for bit as before the restart.
func TestWarmStartRefusesDamagedAnchors(t *testing.T) {
	t.Parallel()
	keys, freqs := spreadKeys(5, 200, 90_000)
	keptStores(t, func(t *testing.T, st store.Store, corrupt func(key, edit string)) {
		spec := keptSpec(t, ReleaseFrequencies, sanitize.MethodMaxSeparation)
		want := releasedBefore(t, st, spec, keys, freqs)
		key := keptService(t, st).cache.(*tablecache.Cache).AnchorsKey(spec.Privacy, spec.Sampling, spec.Method)
		if _, ok, err := st.GetTable(context.Background(), key); err != nil || !ok {
			t.Fatalf("the release stored no anchor places (%v)", err)
		}
		corrupt(key, "flip")
		b, _ := warmService(t, st, DefaultWarmStartSets)
		b.Wait()
		if w := warmStats(b); w.Sets != 1 || w.Anchored != 0 {
			t.Fatalf("the warm start warmed %d sets and anchored %d rows from damaged places, want 1 and 0", w.Sets, w.Anchored)
		}
		if _, ok, err := st.GetTable(context.Background(), key); err != nil || ok {
			t.Fatalf("the damaged anchor places are still stored (%v)", err)
		}
		got, _ := keptRelease(t, b, spec, keys, freqs)
		sameElements(t, "release after damaged anchor places", want, got)
	})
}
