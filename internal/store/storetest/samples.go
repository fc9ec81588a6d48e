package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// samplesChecks are the checks of the Samples domain.
func samplesChecks() []check {
	return []check{
		{"samples", testSamples},
		{"list and delete samples", testListSamples},
		{"purge expired", testPurge},
		{"a sample reads back as created", testSampleRoundTrip},
		{"refused sample creations write nothing", testSampleRefusals},
		{"a deleted sample's id is free again", testSampleDeleteReuse},
		{"expiry is inclusive", testPurgeBoundary},
	}
}

// testSampleRoundTrip: every field a sample is created with reads back
// (creation and expiry times, dataset, header, elements bit for bit), for no
// elements (no chunk), keys only (NaN), and exactly one full chunk of
// 1<<16 elements.
func testSampleRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	newDataset(t, s, "d", 10, 1)
	now := time.Now().UTC().Truncate(time.Microsecond)
	full := make([]store.Element, 1<<16)
	for i := range full {
		full[i] = store.Element{Key: fmt.Sprint("k", i), Value: float64(i), Estimate: -float64(i) / 3}
	}
	for _, c := range []struct {
		name   string
		in     store.Sample
		charge bool
	}{
		{"no elements", store.Sample{ID: "empty", CreatedAt: now, Header: []byte(`{"format":2}`)}, false},
		{"charged and expiring", store.Sample{ID: "charged", CreatedAt: now.Add(-time.Minute), Dataset: "d", Header: []byte(`{"a":"b"}`),
			ExpiresAt: now.Add(time.Hour), Elements: []store.Element{{Key: "x", Value: 1.5, Estimate: 2.5}, {Key: "", Value: 0, Estimate: 0}}}, true},
		{"keys only", store.Sample{ID: "keys", CreatedAt: now, Header: []byte(`{}`),
			Elements: []store.Element{{Key: "é\u2028", Value: math.NaN(), Estimate: math.NaN()}}}, false},
		{"one full chunk", store.Sample{ID: "full", CreatedAt: now, Header: []byte(`{}`), Elements: full}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var charge *store.Charge
			if c.charge {
				charge = &store.Charge{Dataset: c.in.Dataset, Kind: "sample", Ref: c.in.ID, Epsilon: 1}
			}
			in := c.in
			if err := s.CreateSample(ctx, &in, charge); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetSample(ctx, c.in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != c.in.ID || !got.CreatedAt.Equal(c.in.CreatedAt) || got.Dataset != c.in.Dataset ||
				!sameJSON(got.Header, c.in.Header) || !got.ExpiresAt.Equal(c.in.ExpiresAt) {
				t.Errorf("read back %s %v %q %s %v, want %s %v %q %s %v", got.ID, got.CreatedAt, got.Dataset, got.Header, got.ExpiresAt,
					c.in.ID, c.in.CreatedAt, c.in.Dataset, c.in.Header, c.in.ExpiresAt)
			}
			if len(got.Elements) != len(c.in.Elements) {
				t.Fatalf("read back %d elements, want %d", len(got.Elements), len(c.in.Elements))
			}
			for i, e := range c.in.Elements {
				g := got.Elements[i]
				if g.Key != e.Key || math.Float64bits(g.Value) != math.Float64bits(e.Value) || math.Float64bits(g.Estimate) != math.Float64bits(e.Estimate) {
					t.Fatalf("element %d read back as %+v, want %+v", i, g, e)
				}
			}
		})
	}
}

// testSampleRefusals: a sample whose id exists is refused with ErrExists
// and its charge is not made; a sample naming an unknown dataset is refused
// with ErrNotFound, charged or not; neither is stored.
func testSampleRefusals(t *testing.T, s store.Store) {
	ctx := context.Background()
	newDataset(t, s, "d", 1, 0)
	if err := s.CreateSample(ctx, &store.Sample{ID: "s", Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{"first":true}`)},
		&store.Charge{Dataset: "d", Kind: "sample", Ref: "s", Epsilon: 0.25}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		smp    store.Sample
		charge *store.Charge
		want   error
	}{
		{"existing id, charged", store.Sample{ID: "s", Dataset: "d", Header: []byte(`{}`)}, &store.Charge{Dataset: "d", Kind: "sample", Ref: "s", Epsilon: 0.25}, store.ErrExists},
		{"existing id", store.Sample{ID: "s", Header: []byte(`{}`)}, nil, store.ErrExists},
		{"unknown dataset", store.Sample{ID: "ghost1", Dataset: "ghost", Header: []byte(`{}`)}, nil, store.ErrNotFound},
		{"charged to an unknown dataset", store.Sample{ID: "ghost2", Dataset: "ghost", Header: []byte(`{}`)}, &store.Charge{Dataset: "ghost", Kind: "sample", Ref: "ghost2", Epsilon: 0.25}, store.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.smp.CreatedAt = time.Now()
			if err := s.CreateSample(ctx, &c.smp, c.charge); !errors.Is(err, c.want) {
				t.Fatalf("CreateSample: %v, want %v", err, c.want)
			}
			d, rel := ledgerOf(t, s, "d")
			if d.SpentEpsilon != 0.25 || len(rel) != 1 {
				t.Errorf("after a refused sample: spent %g with %d releases, want 0.25 and 1", d.SpentEpsilon, len(rel))
			}
			got, err := s.GetSample(ctx, c.smp.ID)
			switch {
			case c.want == store.ErrExists && (err != nil || !sameJSON(got.Header, []byte(`{"first":true}`))):
				t.Errorf("the existing sample became %+v (%v)", got, err)
			case c.want == store.ErrNotFound && !errors.Is(err, store.ErrNotFound):
				t.Errorf("a refused sample was stored: %v", err)
			}
		})
	}
}

// testSampleDeleteReuse: after DeleteSample the id can be created again,
// and the new sample holds its own elements only (none of the deleted
// one's chunks survive).
func testSampleDeleteReuse(t *testing.T, s store.Store) {
	ctx := context.Background()
	old := &store.Sample{ID: "s", CreatedAt: time.Now().UTC(), Header: []byte(`{"v":1}`),
		Elements: []store.Element{{Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "c", Value: 3}}}
	if err := s.CreateSample(ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSample(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSample(ctx, &store.Sample{ID: "s", CreatedAt: time.Now().UTC(), Header: []byte(`{"v":2}`), Elements: []store.Element{{Key: "z", Value: 9}}}, nil); err != nil {
		t.Fatalf("re-creating a deleted id: %v", err)
	}
	got, err := s.GetSample(ctx, "s")
	if err != nil || !sameJSON(got.Header, []byte(`{"v":2}`)) || len(got.Elements) != 1 || got.Elements[0].Key != "z" {
		t.Fatalf("re-created sample: %+v %v", got, err)
	}
	page, err := s.ListSamples(ctx, store.Cursor{}, 10)
	if err != nil || len(page) != 1 || page[0].Reported != 1 {
		t.Fatalf("listing after re-creation: %d samples (%v)", len(page), err)
	}
}

// testPurgeBoundary: a sample and an idempotency key expiring at T
// survive a purge at T - 1µs and go in a purge at T.
func testPurgeBoundary(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	at := now.Add(time.Hour)
	if err := s.CreateSample(ctx, &store.Sample{ID: "p", CreatedAt: now, Header: []byte(`{}`), ExpiresAt: at}, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ReserveIdempotency(ctx, &store.IdempotencyRecord{Key: "k", CreatedAt: now, LockedUntil: now, ExpiresAt: at}); err != nil || !ok {
		t.Fatalf("reserve: %v %v", ok, err)
	}
	for _, c := range []struct {
		at   time.Time
		want store.PurgeCount
	}{
		{at.Add(-time.Microsecond), store.PurgeCount{}},
		{at, store.PurgeCount{Samples: 1, IdempotencyKeys: 1}},
		{at.Add(time.Microsecond), store.PurgeCount{}},
	} {
		if n, err := s.PurgeExpired(ctx, c.at); err != nil || n != c.want {
			t.Fatalf("purge at expiry%+v: %+v (%v), want %+v", c.at.Sub(at), n, err, c.want)
		}
	}
	if _, err := s.GetSample(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purged sample: %v", err)
	}
}

func testSamples(t *testing.T, s store.Store) {
	ctx := context.Background()
	els := make([]store.Element, 70000) // more than one chunk
	for i := range els {
		els[i] = store.Element{Key: string(rune('a'+i%26)) + "-" + time.Duration(i).String(), Value: float64(i) + 0.25, Estimate: float64(i) * 2}
	}
	els[3].Value, els[3].Estimate = math.NaN(), math.NaN()
	in := &store.Sample{ID: "s1", CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Header: []byte(`{"release":"frequencies"}`), Elements: els}
	if err := s.CreateSample(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSample(ctx, in, nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate id: %v, want ErrExists", err)
	}
	out, err := s.GetSample(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !out.CreatedAt.Equal(in.CreatedAt) || string(out.Header) != string(in.Header) && len(out.Header) == 0 {
		t.Fatalf("header mismatch: %v %s", out.CreatedAt, out.Header)
	}
	if len(out.Elements) != len(els) {
		t.Fatalf("got %d elements, want %d", len(out.Elements), len(els))
	}
	for i := range els {
		a, b := els[i], out.Elements[i]
		if a.Key != b.Key || !sameFloat(a.Value, b.Value) || !sameFloat(a.Estimate, b.Estimate) {
			t.Fatalf("element %d: got %+v want %+v", i, b, a)
		}
	}
	if _, err := s.GetSample(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown sample: %v", err)
	}
}

// testListSamples: pages of every size list each unexpired sample exactly
// once, in (created_at, id) order, ties on created_at broken by id; deleted
// and expired samples are gone; the ledger keeps deleted samples' charges.
func testListSamples(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 10, DeltaBudget: 1}); err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	// ids deliberately not in creation order; s3 and s2 share a timestamp.
	specs := []struct {
		id  string
		at  time.Duration
		exp time.Duration // 0: never; negative: already expired
	}{{"s5", 0, 0}, {"s3", time.Second, 0}, {"s2", time.Second, time.Hour}, {"s9", 2 * time.Second, -time.Minute}, {"s1", 3 * time.Second, 0}}
	for _, sp := range specs {
		smp := &store.Sample{ID: sp.id, CreatedAt: base.Add(sp.at), Dataset: "d", Header: []byte(`{}`), Elements: []store.Element{{Key: "k", Value: 1}}}
		if sp.exp != 0 {
			smp.ExpiresAt = time.Now().UTC().Add(sp.exp)
		}
		if err := s.CreateSample(ctx, smp, &store.Charge{Dataset: "d", Kind: "sample", Ref: sp.id, Epsilon: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	want := "[s5 s2 s3 s1]"
	for limit := 1; limit <= 5; limit++ {
		got := pageAll(t, limit, func(c store.Cursor, n int) ([]*store.Sample, error) { return s.ListSamples(ctx, c, n) },
			func(x *store.Sample) store.Cursor { return store.Cursor{CreatedAt: x.CreatedAt, ID: x.ID} })
		if fmt.Sprint(got) != want {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
	page, _ := s.ListSamples(ctx, store.Cursor{}, 10)
	if page[0].Elements != nil || page[0].Reported != 1 || !page[0].ExpiresAt.IsZero() || page[1].ExpiresAt.IsZero() {
		t.Fatalf("listing metadata: %+v %+v", page[0], page[1])
	}
	if _, err := s.GetSample(ctx, "s9"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired sample: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSample(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s3", "s9", "nope"} {
		if err := s.DeleteSample(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleting %s: %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.GetSample(ctx, "s3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted sample: %v", err)
	}
	d, rel, err := s.GetDataset(ctx, "d")
	if err != nil || len(rel) != 5 || d.SpentEpsilon != 2.5 {
		t.Fatalf("ledger after deletions: %d releases, spent %g, %v; want 5 and 2.5", len(rel), d.SpentEpsilon, err)
	}
}

// testPurge: PurgeExpired deletes exactly the samples and idempotency keys
// past their expiry, and nothing else.
func testPurge(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	for i, exp := range []time.Duration{-time.Hour, -time.Second, 0, time.Hour} {
		smp := &store.Sample{ID: fmt.Sprint("p", i), CreatedAt: now, Header: []byte(`{}`)}
		if exp != 0 {
			smp.ExpiresAt = now.Add(exp)
		}
		if err := s.CreateSample(ctx, smp, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, exp := range []time.Duration{-time.Second, time.Hour} {
		rec := &store.IdempotencyRecord{Key: fmt.Sprint("k", i), CreatedAt: now, LockedUntil: now, ExpiresAt: now.Add(exp)}
		if _, _, err := s.ReserveIdempotency(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.PurgeExpired(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n.Samples != 2 || n.IdempotencyKeys != 1 {
		t.Fatalf("purged %+v, want 2 samples and 1 key", n)
	}
	if n, _ := s.PurgeExpired(ctx, time.Now()); n != (store.PurgeCount{}) {
		t.Fatalf("second purge deleted %+v", n)
	}
	for i, ok := range []bool{false, false, true, true} {
		_, err := s.GetSample(ctx, fmt.Sprint("p", i))
		if (err == nil) != ok {
			t.Fatalf("sample p%d after purge: %v", i, err)
		}
	}
}
