package service

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
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

// TestFlightCallerLeavesOthersServed: two callers share one computation;
// the first goes away (its context is cancelled) and gets its context's
// error at once, while the computation keeps running under an uncancelled
// context and the second caller gets its result.
func TestFlightCallerLeavesOthersServed(t *testing.T) {
	t.Parallel()
	var g flightGroup
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
	var g flightGroup
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

// TestFrequencyRowsDeadline: a frequencies request whose context expires
// answers the context's error (the API's 503) instead of its result.
func TestFrequencyRowsDeadline(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{MaxTableWork: -1}) // the timeout, not the work bound, is under test
	p, _ := sanitize.NewPrivacy(0.2, 1e-7)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 2e-5, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := s.FrequencyRows(ctx, p, smp, sanitize.MethodDiscrete, 4_000_000, 4_000_000)
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
			if _, err := s.FrequencyRows(ctx, p, smp, m, 100_000, 100_000); !errors.Is(err, context.DeadlineExceeded) {
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

// TestVersionedKeys: cached tables are keyed by the algorithm version: the
// same request recomputes nothing under the same version and recomputes
// under a changed one (frequency rows through the store cache, estimator
// tables through the memory cache and the store).
func TestVersionedKeys(t *testing.T) {
	t.Parallel()
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(s *Service) error
	}{
		{"frequency rows", func(s *Service) error {
			_, err := s.FrequencyRows(ctx, p, smp, sanitize.MethodDiscrete, 50, 52)
			return err
		}},
		{"estimator rows", func(s *Service) error {
			_, err := s.EstimatorRows(ctx, p, smp, sanitize.MethodMaxSeparation, identityG, estimate.MLE, 100)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, Config{})
			if s.version != algorithmVersion {
				t.Fatalf("version %q, want %q", s.version, algorithmVersion)
			}
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			before := s.computed.Load()
			if before == 0 {
				t.Fatal("first call computed nothing")
			}
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			if got := s.computed.Load(); got != before {
				t.Fatalf("same version: computed %d -> %d, want no recomputation", before, got)
			}
			s.version = "test-next-version"
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			if got := s.computed.Load(); got <= before {
				t.Fatalf("changed version: computed %d -> %d, want a recomputation", before, got)
			}
		})
	}
}

// TestEstimatorCacheBytes: the in-memory estimator cache never holds more
// bytes than CacheBytes, whatever tables are requested.
func TestEstimatorCacheBytes(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	s := newTestService(t, Config{CacheBytes: limit})
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.001, 1, nil)
	for _, n := range []int64{1000, 4000, 8000, 2000} {
		if _, err := s.EstimatorRows(context.Background(), p, smp, sanitize.MethodDiscrete, identityG, estimate.BiasedDown, n); err != nil {
			t.Fatal(err)
		}
		if got := s.estimators.Cost(); got > limit || s.estimators.Len() == 0 {
			t.Fatalf("after n=%d: cache holds %d bytes in %d tables, bound %d", n, got, s.estimators.Len(), limit)
		}
	}
}

// TestTableKey: every cache key starts with the key layout's version and the
// algorithm version, and keys differ whenever a parameter differs (so no
// two tables share a key).
func TestTableKey(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 0.01}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1, Power: 1}
	keys := map[string]string{
		"base":     s.tableKey("rows", p, smp, sanitize.MethodDiscrete, rangePart(1, 10)),
		"kind":     s.tableKey("audit", p, smp, sanitize.MethodDiscrete, rangePart(1, 10)),
		"eps":      s.tableKey("rows", sanitize.Privacy{Epsilon: 2, Delta: 0.01}, smp, sanitize.MethodDiscrete, rangePart(1, 10)),
		"method":   s.tableKey("rows", p, smp, sanitize.MethodMaxSeparation, rangePart(1, 10)),
		"range":    s.tableKey("rows", p, smp, sanitize.MethodDiscrete, rangePart(1, 11)),
		"parts":    s.tableKey("rows", p, smp, sanitize.MethodDiscrete, rangePart(1, 10), intPart("n", 5)),
		"estimate": s.tableKey("rows", p, smp, sanitize.MethodDiscrete, strPart("est", "mle")),
	}
	seen := map[string]string{}
	for name, k := range keys {
		if !strings.HasPrefix(k, cacheKeyFormat+"|"+algorithmVersion+"|") {
			t.Errorf("%s key %q lacks the version prefix", name, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share the key %q", name, other, k)
		}
		seen[k] = name
	}
}

// TestCachedJSONStrict: a cached table is used only when its JSON decodes
// strictly; one with an unknown member or trailing data is recomputed (and
// the computed value, not the stored one, is returned).
func TestCachedJSONStrict(t *testing.T) {
	t.Parallel()
	s := newTestService(t, Config{})
	ctx := context.Background()
	type table struct {
		A int `json:"a"`
	}
	p := sanitize.Privacy{Epsilon: 1, Delta: 0.01}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1, Power: 1}
	for i, tc := range []struct {
		stored    string
		recompute bool
	}{
		{`{"a":1}`, false},
		{`{"a":1,"b":2}`, true},
		{`{"a":1} {}`, true},
		{`{"a":"x"}`, true},
	} {
		t.Run(tc.stored, func(t *testing.T) {
			key := s.tableKey("strict-test", p, smp, "", intPart("case", int64(i)))
			if err := s.store.PutTable(ctx, key, []byte(tc.stored)); err != nil {
				t.Fatal(err)
			}
			before := s.computed.Load()
			got, err := cached(ctx, s, key, func() (table, error) { return table{A: 7}, nil })
			if err != nil {
				t.Fatal(err)
			}
			recomputed := s.computed.Load() != before
			if recomputed != tc.recompute || (recomputed && got.A != 7) || (!recomputed && got.A != 1) {
				t.Errorf("stored %s: recomputed %v, got %+v", tc.stored, recomputed, got)
			}
		})
	}
}

// TestStoredEstimatorTableUndecodable: a stored estimator table that does
// not decode (garbage, a truncated or trailing-byte encoding, the previous
// release's gob encoding) is rebuilt, not an error, and then served from
// memory; a good stored table is used as it is. The key names the table
// format, so a table in another format is never looked up in the first
// place.
func TestStoredEstimatorTableUndecodable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	spec := estimate.Spec{MaxFrequency: 50, G: identityG, Estimator: estimate.MLE}
	ref := newTestService(t, Config{})
	good, err := ref.estimatorTableFor(ctx, p, smp, sanitize.MethodDiscrete, spec)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := good.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	type wire estimate.Table
	var gobBuf bytes.Buffer
	if err := gob.NewEncoder(&gobBuf).Encode((*wire)(good)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		stored    []byte
		recompute bool
	}{
		{"current encoding", enc, false},
		{"garbage", []byte("not a table"), true},
		{"truncated", enc[:len(enc)-1], true},
		{"trailing byte", append(bytes.Clone(enc), 0), true},
		{"previous gob encoding", gobBuf.Bytes(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestService(t, Config{})
			st, err := s.tables.get(p, smp, sanitize.MethodDiscrete)
			if err != nil {
				t.Fatal(err)
			}
			key := s.estimatorKey(st, spec)
			if !strings.Contains(key, fmt.Sprintf("|format=%d|", estimate.TableFormat)) {
				t.Fatalf("key %q does not name the table format", key)
			}
			if err := s.store.PutTable(ctx, key, tc.stored); err != nil {
				t.Fatal(err)
			}
			before := s.computed.Load()
			got, err := s.estimatorTable(ctx, st, spec)
			if err != nil {
				t.Fatalf("stored %s: %v", tc.name, err)
			}
			if recomputed := s.computed.Load() != before; recomputed != tc.recompute {
				t.Fatalf("recomputed %v, want %v", recomputed, tc.recompute)
			}
			if !reflect.DeepEqual(got, good) {
				t.Fatal("the table served differs from the one built")
			}
			// The rebuilt table is served from memory from then on (the
			// store keeps its first value for a key: puts are no-ops).
			before = s.computed.Load()
			if again, err := s.estimatorTable(ctx, st, spec); err != nil || again != got || s.computed.Load() != before {
				t.Fatalf("second call: %v, same table %v, computed %d -> %d", err, again == got, before, s.computed.Load())
			}
		})
	}
}
