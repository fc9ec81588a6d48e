package service

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// TestListPaging: every listing walks its items oldest first in pages of
// Limit with the cursor each page returns, seeing each item once and
// ending with an empty cursor; a limit outside 1..MaxPageLimit is named
// "limit"; a forged cursor, or one another listing issued, is named
// "cursor" (CursorReason).
func TestListPaging(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		const n = 5
		var samples, datasets, streams, counters []string
		for i := range n {
			name := fmt.Sprintf("d%d", i)
			if _, err := svc.Datasets.Create(ctx, name, 1, 1); err != nil {
				t.Fatal(err)
			}
			datasets = append(datasets, name)
			smp, err := svc.Samples.Create(ctx, testSpec(t, "", 0.5), 10, oneElement())
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, smp.ID)
			s, err := svc.Streams.Create(ctx, densitySpec("", 1))
			if err != nil {
				t.Fatal(err)
			}
			streams = append(streams, s.ID)
			c, err := svc.Counters.Create(ctx, panprivate.CounterConfig{Epsilon: 1, Horizon: 10})
			if err != nil {
				t.Fatal(err)
			}
			counters = append(counters, c.ID)
		}
		type lister func(Page) ([]string, string, error)
		ids := func(f func(int) string, k int) []string {
			out := make([]string, k)
			for i := range out {
				out[i] = f(i)
			}
			return out
		}
		listings := []struct {
			name string
			want []string
			list lister
		}{
			{"samples", samples, func(p Page) ([]string, string, error) {
				items, next, err := svc.Samples.List(ctx, p)
				return ids(func(i int) string { return items[i].ID }, len(items)), next, err
			}},
			{"datasets", datasets, func(p Page) ([]string, string, error) {
				items, next, err := svc.Datasets.List(ctx, p)
				return ids(func(i int) string { return items[i].Name }, len(items)), next, err
			}},
			{"streams", streams, func(p Page) ([]string, string, error) {
				items, next, err := svc.Streams.List(ctx, p)
				return ids(func(i int) string { return items[i].ID }, len(items)), next, err
			}},
			{"counters", counters, func(p Page) ([]string, string, error) {
				items, next, err := svc.Counters.List(ctx, p)
				return ids(func(i int) string { return items[i].ID }, len(items)), next, err
			}},
		}
		cursors := map[string]string{} // a cursor each listing issued
		for _, l := range listings {
			t.Run(l.name, func(t *testing.T) {
				var seen []string
				cursor, pages := "", 0
				for {
					page, next, err := l.list(Page{Limit: 2, Cursor: cursor})
					if err != nil {
						t.Fatal(err)
					}
					if pages++; len(page) > 2 || pages > n {
						t.Fatalf("page %d holds %d items", pages, len(page))
					}
					seen = append(seen, page...)
					if next == "" {
						break
					}
					cursors[l.name], cursor = next, next
				}
				if pages != 3 || !slices.Equal(seen, l.want) {
					t.Fatalf("%d pages: %v, want %v oldest first", pages, seen, l.want)
				}
				if all, next, err := l.list(Page{}); err != nil || next != "" || !slices.Equal(all, l.want) {
					t.Fatalf("default limit: %v %q %v", all, next, err)
				}
				for _, p := range []Page{{Limit: -1}, {Limit: MaxPageLimit + 1}} {
					if _, _, err := l.list(p); !slices.Equal(fieldsOf(err), []string{"limit"}) {
						t.Errorf("limit %d: %v", p.Limit, err)
					}
				}
				for _, c := range []string{"!!", "bm90LWEtY3Vyc29y", encodeCursor("x", time.Unix(0, 1), "abc")} {
					if _, _, err := l.list(Page{Cursor: c}); !slices.Equal(fieldsOf(err), []string{"cursor"}) {
						t.Errorf("cursor %q: %v", c, err)
					}
				}
			})
		}
		// A cursor is tied to the listing that issued it.
		for _, l := range listings {
			for other, c := range cursors {
				if other == l.name {
					continue
				}
				if _, _, err := l.list(Page{Cursor: c}); !slices.Equal(fieldsOf(err), []string{"cursor"}) {
					t.Errorf("%s with a cursor of %s: %v", l.name, other, err)
				}
			}
		}
	})
}

// TestPageElements: a sample's elements come in stored order, a page at a
// time, and a cursor of one sample does not work on another.
func TestPageElements(t *testing.T) {
	t.Parallel()
	svc := newTestService(t, Config{})
	a, b := exactSample(t, svc, ""), exactSample(t, svc, "")
	var keys []string
	cursor := ""
	for range 4 {
		pg, next, err := PageElements(a, Page{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Keys) != len(pg.Elements) {
			t.Fatalf("%d keys beside %d elements", len(pg.Keys), len(pg.Elements))
		}
		for i, e := range pg.Elements {
			keys = append(keys, e.Key)
			if pg.Keys[i].Frequency != e.Value { // delta = 1: the value is the frequency
				t.Fatalf("key %s: frequency %g beside value %g", e.Key, pg.Keys[i].Frequency, e.Value)
			}
		}
		if cursor = next; next == "" {
			break
		}
	}
	want := make([]string, len(a.Elements))
	for i, e := range a.Elements {
		want[i] = e.Key
	}
	if cursor != "" || !slices.Equal(keys, want) {
		t.Fatalf("paged %v (cursor %q), want %v", keys, cursor, want)
	}
	_, next, _ := PageElements(a, Page{Limit: 3})
	if _, _, err := PageElements(b, Page{Limit: 3, Cursor: next}); !slices.Equal(fieldsOf(err), []string{"cursor"}) {
		t.Fatalf("another sample's cursor: %v", err)
	}
	if _, _, err := PageElements(a, Page{Limit: MaxPageLimit + 1}); !slices.Equal(fieldsOf(err), []string{"limit"}) {
		t.Fatalf("limit: %v", err)
	}
}
