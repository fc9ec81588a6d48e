package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// cacheMeter is implemented by both stores.
type cacheMeter interface {
	store.TableCacheLimiter
	TableCacheBytes(ctx context.Context) (int64, error)
}

// TestTableCacheBounded: however many tables readers cause, the cache stays
// within its byte bound, evicting the least recently used (a table read
// recently survives one that was not); a table larger than the bound is
// not stored (defect 7: readers filled table_cache without limit).
func TestTableCacheBounded(t *testing.T) {
	t.Parallel()
	for name, open := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			m := s.(cacheMeter)
			const bound = 10_000
			m.LimitTableCache(bound)
			data := make([]byte, 990) // with its key (stored beside the digest) under 1000 bytes
			put := func(k string) {
				t.Helper()
				if err := s.PutTable(ctx, k, data); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 10; i++ {
				put(fmt.Sprint("k", i))
			}
			// Touch k0: it becomes the most recently used.
			if _, ok, err := s.GetTable(ctx, "k0"); err != nil || !ok {
				t.Fatalf("k0: %v %v", ok, err)
			}
			for i := 10; i < 50; i++ {
				put(fmt.Sprint("k", i))
				if i == 10 {
					if _, ok, _ := s.GetTable(ctx, "k0"); !ok {
						t.Fatal("the recently read k0 was evicted before older tables")
					}
					if _, ok, _ := s.GetTable(ctx, "k1"); ok {
						t.Fatal("the least recently used k1 survived")
					}
				}
				n, err := m.TableCacheBytes(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n > bound {
					t.Fatalf("after %d puts the cache holds %d bytes, above the bound %d", i+1, n, bound)
				}
			}
			if err := s.PutTable(ctx, "huge", make([]byte, bound+1)); err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := s.GetTable(ctx, "huge"); ok {
				t.Fatal("a table larger than the bound was stored")
			}
			if _, ok, _ := s.GetTable(ctx, "k49"); !ok {
				t.Fatal("the newest table is missing")
			}
		})
	}
}

// TestBudgetOverflow: a budget of MaxFloat64 then two charges of 1e308
// (defect 5: +Inf and a PostgreSQL overflow): the first fits, the second
// would make the sum infinite and is refused with ErrBudget; nothing
// non-finite is written.
func TestBudgetOverflow(t *testing.T) {
	t.Parallel()
	for name, open := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: math.MaxFloat64, DeltaBudget: 1}); err != nil {
				t.Fatal(err)
			}
			charge := func(ref string) error {
				return s.CreateSample(ctx, &store.Sample{ID: ref, Dataset: "d", Header: []byte(`{}`)},
					&store.Charge{Dataset: "d", Kind: "sample", Ref: ref, Epsilon: 1e308, Delta: 0})
			}
			if err := charge("a"); err != nil {
				t.Fatalf("first charge: %v", err)
			}
			if err := charge("b"); !errors.Is(err, store.ErrBudget) {
				t.Fatalf("second charge: %v, want ErrBudget", err)
			}
			d, _, err := s.GetDataset(ctx, "d")
			if err != nil || d.SpentEpsilon != 1e308 {
				t.Fatalf("spent %g (%v), want 1e308", d.SpentEpsilon, err)
			}
		})
	}
}

// TestTableCacheDigestCollision: a table_cache row whose digest matches a
// key but whose stored parameters differ (what a SHA-256 collision would
// look like, forged here) is never served for that key, and a put of the
// key neither fails nor replaces it.
func TestTableCacheDigestCollision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, conn := openPostgres(t)
	d := sha256.Sum256([]byte("wanted"))
	if _, err := conn.Exec(ctx, `INSERT INTO table_cache (digest, params, data, size) VALUES ($1, 'other', 'x', 6)`, d[:]); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := p.GetTable(ctx, "wanted"); err != nil || ok {
		t.Fatalf("forged collision: ok=%v err=%v, want a miss", ok, err)
	}
	if err := p.PutTable(ctx, "wanted", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := p.GetTable(ctx, "wanted"); err != nil || ok {
		t.Fatalf("after a put: ok=%v err=%v, want a miss", ok, err)
	}
	if d, ok, err := p.GetTable(ctx, "other"); err != nil || ok {
		t.Fatalf("the other parameters under a foreign digest: %q %v %v", d, ok, err)
	}
}
