package service

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// keptSteps is the warm-up of the kept-rows tests: the chain from row 0 to
// 2^16 and about 30,000 restarted rows above it.
const keptSteps = 1 << 17

// keptSpec is a release at eps 1, delta 1e-6 under ppswor tau 1e-5 (q_i < 1
// up to about 3.7e6, so rows past 2^16 come by restart).
func keptSpec(t testing.TB, release Release, m sanitize.Method) SampleSpec {
	return ppsworSpec(t, 1, 1e-5, release, m)
}

// ppsworSpec is a release at eps, delta 1e-6 under ppswor tau (power 1).
func ppsworSpec(t testing.TB, eps, tau float64, release Release, m sanitize.Method) SampleSpec {
	t.Helper()
	p, err := sanitize.NewPrivacy(eps, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sanitize.NewSampling(sanitize.SchemePPSWOR, tau, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := NewSampleSpec("", p, smp, release, m)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// keptService is a service over st whose requests all draw from the same
// seeded generator, so that one release made twice draws the same
// outcomes when the rows are the same.
func keptService(t *testing.T, st store.Store) *Service {
	t.Helper()
	s, err := New(Config{Store: st, KeptRowsSteps: keptSteps, NewRand: func() *rand.Rand { return dprand.Seeded(37) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Wait)
	return s
}

// keptStats is what s's table cache did with kept sanitizer rows.
func keptStats(s *Service) tablecache.KeptRowsStats {
	return s.cache.(*tablecache.Cache).KeptRowsStats()
}

// keptKey is the store key of the kept rows of (p, smp, m) under s.
func keptKey(s *Service, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method) string {
	return s.cache.(*tablecache.Cache).KeptRowsKey(p, smp, m)
}

// keptRelease releases keys of frequencies freqs under spec with s and
// returns the elements and how many rows the parameters' Table stepped
// meanwhile (a keys release builds no chunks: only its draws step rows).
func keptRelease(t *testing.T, s *Service, spec SampleSpec, keys []string, freqs []int64) ([]Element, int64) {
	t.Helper()
	tb, err := s.cache.Sanitizer(spec.Privacy, spec.Sampling, spec.Method)
	if err != nil {
		t.Fatal(err)
	}
	before := tb.RowsStepped()
	smp, err := s.Samples.Create(context.Background(), spec, len(keys), pairs(keys, freqs))
	if err != nil {
		t.Fatal(err)
	}
	return smp.Elements, tb.RowsStepped() - before
}

// sameElements fails unless a and b hold the same keys in the same order
// with the same values and estimates, bit for bit.
func sameElements(t *testing.T, what string, a, b []Element) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d elements, want %d", what, len(b), len(a))
	}
	for i := range a {
		if a[i].Key != b[i].Key || math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) ||
			math.Float64bits(a[i].Estimate) != math.Float64bits(b[i].Estimate) {
			t.Fatalf("%s: element %d is %+v, want %+v", what, i, b[i], a[i])
		}
	}
}

// spreadKeys returns n keys "spread/k" with frequencies drawn uniformly
// from 1..top by a generator seeded with seed.
func spreadKeys(seed uint64, n int, top int64) ([]string, []int64) {
	keys, freqs := make([]string, n), make([]int64, n)
	rng := rand.New(rand.NewPCG(37, seed))
	for k := range n {
		keys[k], freqs[k] = fmt.Sprintf("spread/%d", k), 1+rng.Int64N(top)
	}
	return keys, freqs
}

// keptStores runs f on the in-memory store and on PostgreSQL; corrupt
// replaces the bytes stored under a key by what edit makes of them: in
// PostgreSQL by SQL on the row itself.
func keptStores(t *testing.T, f func(t *testing.T, st store.Store, corrupt func(key, edit string))) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		st := store.NewMemory()
		f(t, st, func(key, edit string) {
			ctx := context.Background()
			data, ok, err := st.GetTable(ctx, key)
			if err != nil || !ok {
				t.Fatalf("no stored rows to corrupt (%v)", err)
			}
			data = append([]byte(nil), data...)
			switch edit {
			case "flip":
				data[len(data)/2] ^= 1
			case "truncate":
				data = data[:len(data)-100]
			}
			if err := st.DeleteTable(ctx, key); err != nil {
				t.Fatal(err)
			}
			if err := st.PutTable(ctx, key, data); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.NewDatabase(t)
		p, err := store.OpenPostgres(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		f(t, p, func(key, edit string) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			sql := map[string]string{
				"flip":     `UPDATE table_cache SET data = set_byte(data, length(data)/2, get_byte(data, length(data)/2) # 1) WHERE params = $1`,
				"truncate": `UPDATE table_cache SET data = substring(data from 1 for length(data) - 100) WHERE params = $1`,
			}[edit]
			tag, err := conn.Exec(ctx, sql, []byte(key))
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("corrupting the stored rows: %v (%d rows)", err, tag.RowsAffected())
			}
		})
	})
}

// TestKeptRowsAfterRestart (issue 37): a release, then a new service over
// the same store (a restart, or a second instance), then the same release.
// The first release's Table computes its rows from row 0 (a key of
// frequency f costs at least the rows below f on the chain: the oracle
// below); the release writes behind the kept rows of a warm-up over public
// parameters; the new service's Table starts from them: a release whose
// keys sit on stored checkpoints (multiples of 512 below 2^16) steps no row
// at all, and every release answers the same bit for bit as before the
// restart (the same seeded draws over the same rows). A stored encoding
// corrupted in the store (a flipped bit, a truncation) is refused, the rows
// are recomputed (the answer is still the same bit for bit), the bad
// encoding is deleted and a sound one is written in its place.
func TestKeptRowsAfterRestart(t *testing.T) {
	t.Parallel()
	var onKept []string
	var onKeptF []int64
	for k := int64(1); k < 128; k++ {
		onKept, onKeptF = append(onKept, fmt.Sprintf("kept/%d", k)), append(onKeptF, 512*k)
	}
	spread, spreadF := spreadKeys(1, 300, 100_000)
	keptStores(t, func(t *testing.T, st store.Store, corrupt func(key, edit string)) {
		keys := keptSpec(t, ReleaseKeys, sanitize.MethodMaxSeparation)
		freqs := keptSpec(t, ReleaseFrequencies, sanitize.MethodDiscrete)

		first := keptService(t, st)
		keys1, cold := keptRelease(t, first, keys, onKept, onKeptF)
		if cold < 512*127 {
			t.Fatalf("the first release stepped %d rows, fewer than the chain to its largest frequency (%d)", cold, 512*127)
		}
		freqs1, _ := keptRelease(t, first, freqs, spread, spreadF)
		first.Wait()
		if keptStats(first).Stepped == 0 || keptStats(first).Restored != 0 {
			t.Fatalf("the first service warmed up %d rows and restored %d tables, want a warm-up and none", keptStats(first).Stepped, keptStats(first).Restored)
		}

		second := keptService(t, st)
		keys2, warm := keptRelease(t, second, keys, onKept, onKeptF)
		if warm != 0 {
			t.Errorf("after the restart the release on stored checkpoints stepped %d rows, want 0", warm)
		}
		sameElements(t, "keys release after the restart", keys1, keys2)
		freqs2, _ := keptRelease(t, second, freqs, spread, spreadF)
		sameElements(t, "frequencies release after the restart", freqs1, freqs2)
		if n := keptStats(second).Restored; n != 2 {
			t.Fatalf("the second service restored %d tables, want 2", n)
		}
		if n := keptStats(second).Stepped; n != 0 {
			t.Fatalf("the second service warmed up %d rows, want none (the rows are stored)", n)
		}

		for _, edit := range []string{"flip", "truncate"} {
			corrupt(keptKey(first, keys.Privacy, keys.Sampling, keys.Method), edit)
			bad := keptService(t, st)
			keys3, steps := keptRelease(t, bad, keys, onKept, onKeptF)
			if keptStats(bad).Refused != 1 || keptStats(bad).Restored != 0 {
				t.Fatalf("%s: %d stored encodings refused, %d tables restored; want 1 and 0", edit, keptStats(bad).Refused, keptStats(bad).Restored)
			}
			if steps < 512*127 {
				t.Fatalf("%s: the release stepped %d rows, fewer than the chain (%d): corrupted rows were used", edit, steps, 512*127)
			}
			sameElements(t, edit+": keys release over corrupted stored rows", keys1, keys3)
			bad.Wait() // the sound encoding is written again
			again := keptService(t, st)
			if _, steps := keptRelease(t, again, keys, onKept, onKeptF); steps != 0 || keptStats(again).Restored != 1 {
				t.Fatalf("%s: after the rewrite a new service stepped %d rows and restored %d tables, want 0 and 1", edit, steps, keptStats(again).Restored)
			}
		}
	})
}

// TestKeptRowsOff: with KeptRowsSteps negative, and by default over the
// in-memory store (nothing in it outlives the process), no warm-up runs
// and nothing is stored or read.
func TestKeptRowsOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps int64
	}{{"negative", -1}, {"memory store by default", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := store.NewMemory()
			spec := keptSpec(t, ReleaseKeys, sanitize.MethodDiscrete)
			for range 2 {
				s, err := New(Config{Store: st, KeptRowsSteps: tc.steps})
				if err != nil {
					t.Fatal(err)
				}
				if _, steps := keptRelease(t, s, spec, []string{"a"}, []int64{512 * 100}); steps < 512*100 {
					t.Fatalf("a release stepped %d rows, fewer than the chain", steps)
				}
				s.Wait()
				if keptStats(s).Stepped != 0 || keptStats(s).Restored != 0 {
					t.Fatalf("kept rows off: warmed up %d rows, restored %d tables", keptStats(s).Stepped, keptStats(s).Restored)
				}
			}
			if n, _ := st.TableCacheBytes(context.Background()); n != 0 {
				t.Fatalf("kept rows off: the store's table cache holds %d bytes", n)
			}
		})
	}
}

// TestPrebuildStoresKeptRows: a prebuild stores the kept rows before it
// answers (no release came before it), so the first release on a new
// service, whose keys sit on stored checkpoints, steps no row; a second
// prebuild finds them stored and warms up nothing.
func TestPrebuildStoresKeptRows(t *testing.T) {
	t.Parallel()
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		spec := keptSpec(t, ReleaseFrequencies, sanitize.MethodMaxSeparation)
		s := keptService(t, st)
		if _, err := s.Tables.Prebuild(context.Background(), spec, 1000); err != nil {
			t.Fatal(err)
		}
		if keptStats(s).Stepped == 0 {
			t.Fatal("the prebuild warmed up no row")
		}
		if _, ok, err := st.GetTable(context.Background(), keptKey(s, spec.Privacy, spec.Sampling, spec.Method)); err != nil || !ok {
			t.Fatalf("no kept rows stored when the prebuild answered (%v)", err)
		}
		again := keptService(t, st)
		if _, err := again.Tables.Prebuild(context.Background(), spec, 1000); err != nil {
			t.Fatal(err)
		}
		if n := keptStats(again).Stepped; n != 0 {
			t.Fatalf("a second prebuild warmed up %d rows", n)
		}
		keys := keptSpec(t, ReleaseKeys, sanitize.MethodMaxSeparation)
		if _, steps := keptRelease(t, keptService(t, st), keys, []string{"a", "b"}, []int64{512 * 3, 512 * 100}); steps != 0 {
			t.Fatalf("the first release after the prebuild stepped %d rows on stored checkpoints", steps)
		}
	})
}

// TestKeptRowsIndependentOfData: two releases of one parameter set over
// different data (other keys, other frequencies: small ones only, or large
// ones past the first junction) store the same kept rows, byte for byte,
// in two stores: what is stored depends on the parameters alone.
func TestKeptRowsIndependentOfData(t *testing.T) {
	t.Parallel()
	spec := keptSpec(t, ReleaseKeys, sanitize.MethodDiscrete)
	var stored [][]byte
	for _, freqs := range [][]int64{{3, 17, 900}, {70_000, 80_123, 95_000, 99_999}} {
		st := store.NewMemory()
		s := keptService(t, st)
		keys := make([]string, len(freqs))
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		keptRelease(t, s, spec, keys, freqs)
		s.Wait()
		data, ok, err := st.GetTable(context.Background(), keptKey(s, spec.Privacy, spec.Sampling, spec.Method))
		if err != nil || !ok {
			t.Fatalf("no kept rows stored (%v)", err)
		}
		stored = append(stored, data)
	}
	if string(stored[0]) != string(stored[1]) {
		t.Fatalf("releases over different data stored different kept rows (%d and %d bytes)", len(stored[0]), len(stored[1]))
	}
}

// TestPrebuildWarmsTheNextRelease (issue 37): a prebuild in a process whose
// Table of the parameters did not start from kept rows (an earlier release
// made it, cold) stores the kept rows and puts a Table restored from them
// in that one's place, so the next release of the same process steps
// exactly the rows the same release steps on a new service over the same
// store (a restart: the oracle) and answers the same bit for bit; without
// the swap it would walk from row 0 (at least the chain to its largest
// frequency, far more).
func TestPrebuildWarmsTheNextRelease(t *testing.T) {
	t.Parallel()
	keys, freqs := spreadKeys(3, 200, 90_000)
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		spec := keptSpec(t, ReleaseFrequencies, sanitize.MethodMaxSeparation)
		release := keptSpec(t, ReleaseKeys, sanitize.MethodMaxSeparation)
		s := keptService(t, st)
		keptRelease(t, s, release, []string{"first"}, []int64{5}) // the process's Table, cold
		if _, err := s.Tables.Prebuild(context.Background(), spec, 1000); err != nil {
			t.Fatal(err)
		}
		tb, err := s.cache.Sanitizer(spec.Privacy, spec.Sampling, spec.Method)
		if err != nil {
			t.Fatal(err)
		}
		if !tb.Restored() {
			t.Fatal("after the prebuild the process's Table did not start from the kept rows")
		}
		got, steps := keptRelease(t, s, release, keys, freqs)
		s.Wait()
		restart := keptService(t, st)
		want, wantSteps := keptRelease(t, restart, release, keys, freqs)
		if steps != wantSteps {
			t.Errorf("the release after the prebuild stepped %d rows, the same release after a restart %d", steps, wantSteps)
		}
		if top := slices.Max(freqs); wantSteps >= top {
			t.Errorf("the release after a restart stepped %d rows, not fewer than the chain to its largest frequency (%d)", wantSteps, top)
		}
		sameElements(t, "release after the prebuild", want, got)
	})
}

// TestReleaseAfterAPrebuildReadsNothing (issue 37: "the first release
// after a scheduled prebuild is warm too"): a frequencies release on
// service A; then, on service B over the same store with no warm start, a
// prebuild of the parameters (to frequency 1000, below most of the
// release's values) and the same release: the release reads the store's
// table cache 0 times, since the prebuild read the set's most recently
// used chunks (the release's values and what A built for the next
// release), and answers bit for bit as A did. Both stores.
func TestReleaseAfterAPrebuildReadsNothing(t *testing.T) {
	t.Parallel()
	keys, freqs := spreadKeys(11, 200, 90_000)
	keptStores(t, func(t *testing.T, st store.Store, _ func(key, edit string)) {
		spec := keptSpec(t, ReleaseFrequencies, sanitize.MethodMaxSeparation)
		want := releasedBefore(t, st, spec, keys, freqs)
		b, ts := warmService(t, st, 0)
		if _, err := b.Tables.Prebuild(context.Background(), spec, 1000); err != nil {
			t.Fatal(err)
		}
		ts.n.Store(0)
		got, _ := keptRelease(t, b, spec, keys, freqs)
		if n := ts.n.Load(); n != 0 {
			t.Errorf("the release after the prebuild read the store's table cache %d times, want 0", n)
		}
		sameElements(t, "release after the prebuild", want, got)
	})
}

// releasedBefore releases keys at freqs under spec on a new kept-rows
// service over st and waits for its background work (the kept rows and
// the chunks of the next release stored): what a restarted service, or
// another instance, then finds in st. It returns the release's elements.
func releasedBefore(t *testing.T, st store.Store, spec SampleSpec, keys []string, freqs []int64) []Element {
	t.Helper()
	a := keptService(t, st)
	want, _ := keptRelease(t, a, spec, keys, freqs)
	a.Wait()
	return want
}
