package tablecache

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestVersionedKeys: cached tables are keyed by the algorithm version: the
// same request recomputes nothing under the same version and recomputes
// under a changed one (a JSON table through the store, estimator tables
// through memory and the store).
func TestVersionedKeys(t *testing.T) {
	t.Parallel()
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(c *Cache) error
	}{
		{"JSON table through the store", func(c *Cache) error {
			_, err := JSONOf(ctx, c, c.Key("rows", p, smp, sanitize.MethodDiscrete, Range(50, 52)), func(context.Context) ([]int, error) { return []int{50, 51, 52}, nil })
			return err
		}},
		{"estimator table through memory and the store", func(c *Cache) error {
			_, err := estimatorFor(ctx, c, p, smp, sanitize.MethodMaxSeparation, estimate.Spec{MaxFrequency: 100, G: identityG, Estimator: estimate.MLE})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestCache(t, Config{})
			if s.version != AlgorithmVersion {
				t.Fatalf("version %q, want %q", s.version, AlgorithmVersion)
			}
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			before := s.Computed()
			if before == 0 {
				t.Fatal("first call computed nothing")
			}
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			if got := s.Computed(); got != before {
				t.Fatalf("same version: computed %d -> %d, want no recomputation", before, got)
			}
			s.version = "test-next-version"
			if err := tc.call(s); err != nil {
				t.Fatal(err)
			}
			if got := s.Computed(); got <= before {
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
	s := newTestCache(t, Config{Bytes: limit})
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.001, 1, nil)
	for _, n := range []int64{1000, 4000, 8000, 2000} {
		if _, err := estimatorFor(context.Background(), s, p, smp, sanitize.MethodDiscrete, estimate.Spec{MaxFrequency: n, G: identityG, Estimator: estimate.BiasedDown}); err != nil {
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
	s := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 0.01}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1, Power: 1}
	keys := map[string]string{
		"base":     s.Key("rows", p, smp, sanitize.MethodDiscrete, Range(1, 10)),
		"kind":     s.Key("audit", p, smp, sanitize.MethodDiscrete, Range(1, 10)),
		"eps":      s.Key("rows", sanitize.Privacy{Epsilon: 2, Delta: 0.01}, smp, sanitize.MethodDiscrete, Range(1, 10)),
		"method":   s.Key("rows", p, smp, sanitize.MethodMaxSeparation, Range(1, 10)),
		"range":    s.Key("rows", p, smp, sanitize.MethodDiscrete, Range(1, 11)),
		"parts":    s.Key("rows", p, smp, sanitize.MethodDiscrete, Range(1, 10), Int("n", 5)),
		"estimate": s.Key("rows", p, smp, sanitize.MethodDiscrete, Str("est", "mle")),
	}
	seen := map[string]string{}
	for name, k := range keys {
		if !strings.HasPrefix(k, keyFormat+"|"+AlgorithmVersion+"|") {
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
	s := newTestCache(t, Config{})
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
			key := s.Key("strict-test", p, smp, "", Int("case", int64(i)))
			if err := s.store.PutTable(ctx, key, []byte(tc.stored)); err != nil {
				t.Fatal(err)
			}
			before := s.Computed()
			got, err := JSONOf(ctx, s, key, func(context.Context) (table, error) { return table{A: 7}, nil })
			if err != nil {
				t.Fatal(err)
			}
			recomputed := s.Computed() != before
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
	ref := newTestCache(t, Config{})
	good, err := estimatorFor(ctx, ref, p, smp, sanitize.MethodDiscrete, spec)
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
			s := newTestCache(t, Config{})
			st, err := s.Sanitizer(p, smp, sanitize.MethodDiscrete)
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
			before := s.Computed()
			got, err := s.Estimator(ctx, st, spec)
			if err != nil {
				t.Fatalf("stored %s: %v", tc.name, err)
			}
			if recomputed := s.Computed() != before; recomputed != tc.recompute {
				t.Fatalf("recomputed %v, want %v", recomputed, tc.recompute)
			}
			if !reflect.DeepEqual(got, good) {
				t.Fatal("the table served differs from the one built")
			}
			// The rebuilt table is served from memory from then on (the
			// store keeps its first value for a key: puts are no-ops).
			before = s.Computed()
			if again, err := s.Estimator(ctx, st, spec); err != nil || again != got || s.Computed() != before {
				t.Fatalf("second call: %v, same table %v, computed %d -> %d", err, again == got, before, s.Computed())
			}
		})
	}
}

var identityG = estimate.G{Kind: estimate.GIdentity}

func newTestCache(t *testing.T, cfg Config) *Cache {
	t.Helper()
	cfg.Store = store.NewMemory()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// estimatorFor is Estimator for the sanitizer (p, smp, m).
func estimatorFor(ctx context.Context, c *Cache, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, spec estimate.Spec) (*estimate.Table, error) {
	t, err := c.Sanitizer(p, smp, m)
	if err != nil {
		return nil, err
	}
	return c.Estimator(ctx, t, spec)
}
