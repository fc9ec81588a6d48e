package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/store"
)

// datasetsChecks are the checks of the Datasets domain and its ledger.
func datasetsChecks() []check {
	return []check{
		{"datasets", testDatasets},
		{"budget refuses overspend atomically", testBudgetAtomic},
		{"list datasets with ledgers", testListDatasets},
		{"creation ignores spending and dates the dataset", testCreateDataset},
		{"every release path charges within the budget or not at all", testChargeLimits},
		{"concurrent releases of every kind never overspend", testConcurrentMixedCharges},
		{"a PLD dataset admits what optimal composition allows", testPLDAdmits},
		{"a PLD dataset composes Laplace releases by their PLD", testPLDLaplace},
	}
}

// chargeSamples charges n samples of (eps, delta, mechanism) to dataset one
// after the other and returns how many were admitted; every refusal must be
// ErrBudget and write nothing.
func chargeSamples(t *testing.T, s store.Store, dataset, mechanism string, n int, eps, delta float64) int {
	t.Helper()
	ctx := context.Background()
	ok := 0
	for i := range n {
		id := fmt.Sprintf("%s-%d", dataset, i)
		err := s.CreateSample(ctx, &store.Sample{ID: id, Dataset: dataset, CreatedAt: time.Now(), Header: []byte(`{}`)},
			&store.Charge{Dataset: dataset, Kind: "sample", Ref: id, Epsilon: eps, Delta: delta, Mechanism: mechanism})
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrBudget):
			if _, err := s.GetSample(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("refused sample %s was written (%v)", id, err)
			}
		default:
			t.Fatal(err)
		}
	}
	return ok
}

// testPLDAdmits: a budget (5, 1e-5) admits 128 releases of (0.1, 1e-9) by
// PLD (the Kairouz-Oh-Viswanath optimum is 128) against 50 by basic
// composition, and a dataset created without accounting is basic. The
// ledger and the basic sums record exactly the admitted releases.
func testPLDAdmits(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "p", EpsilonBudget: 5, DeltaBudget: 1e-5, Accounting: store.AccountingPLD}); err != nil {
		t.Fatal(err)
	}
	newDataset(t, s, "b", 5, 1e-5)
	if got := chargeSamples(t, s, "p", "generic", 131, 0.1, 1e-9); got != 128 {
		t.Errorf("PLD dataset admitted %d releases of (0.1, 1e-9), want 128", got)
	}
	if got := chargeSamples(t, s, "b", "", 55, 0.1, 1e-9); got != 50 {
		t.Errorf("basic dataset admitted %d releases of (0.1, 1e-9), want 50", got)
	}
	d, rel := ledgerOf(t, s, "p")
	if d.Accounting != store.AccountingPLD || len(rel) != 128 || math.Abs(d.SpentEpsilon-12.8) > 1e-9 || rel[0].Mechanism != "generic" {
		t.Errorf("PLD ledger: accounting %q, %d releases, basic sum %g, mechanism %q", d.Accounting, len(rel), d.SpentEpsilon, rel[0].Mechanism)
	}
	if b, _ := ledgerOf(t, s, "b"); b.Accounting != store.AccountingBasic {
		t.Errorf("a dataset created without accounting has %q, want basic", b.Accounting)
	}
	pld, err := s.ComposedLedger(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if eps := pld.Epsilon(1e-5); !(eps <= 5 && eps > 4.5) {
		t.Errorf("composed ledger epsilon at 1e-5 = %g, want in (4.5, 5]", eps)
	}
	if _, err := s.ComposedLedger(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("composed ledger of an unknown dataset: %v", err)
	}
}

// testPLDLaplace: Laplace releases of epsilon 0.1 on a budget (3, 1e-5):
// as many as the Laplace PLD composed allows, more than basic's 30 and at
// least the generic pair's optimum (every 0.1-DP release is dominated
// by it), which is an independent bound computed here by its closed form.
func testPLDLaplace(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "l", EpsilonBudget: 3, DeltaBudget: 1e-5, Accounting: store.AccountingPLD}); err != nil {
		t.Fatal(err)
	}
	got := chargeSamples(t, s, "l", "laplace", 75, 0.1, 0)
	// The generic (0.1, 0) pair's k-fold divergence at 3 (Kairouz-Oh-
	// Viswanath): sum over j of C(k, j) p^(k-j) (1-p)^j (1 - e^(3-(k-2j)0.1))+.
	kov := func(k int) float64 {
		p := 1 / (1 + math.Exp(-0.1))
		s := 0.0
		for j := 0; j <= k; j++ {
			l := float64(k-2*j) * 0.1
			if l > 3 {
				lc, _ := math.Lgamma(float64(k + 1))
				l1, _ := math.Lgamma(float64(j + 1))
				l2, _ := math.Lgamma(float64(k - j + 1))
				s += math.Exp(lc-l1-l2+float64(k-j)*math.Log(p)+float64(j)*math.Log(1-p)) * -math.Expm1(3-l)
			}
		}
		return s
	}
	generic := 0
	for kov(generic+1) <= 1e-5 {
		generic++
	}
	t.Logf("Laplace(0.1) releases admitted by (3, 1e-5): %d (generic optimum %d, basic 30)", got, generic)
	if got <= 30 || got < generic || got == 75 {
		t.Errorf("admitted %d Laplace releases, want more than basic's 30, at least the generic optimum %d, fewer than 75", got, generic)
	}
}

// releasePath is one way a release is charged to a dataset: creating a
// sample, creating a stream, or releasing from a stream (UpdateState).
type releasePath struct {
	name string
	kind string // the Charge's Kind
	// prepare runs before release, uncharged (the stream a release reads).
	prepare func(t *testing.T, s store.Store, ref, dataset string)
	// release makes the release ref charged by c.
	release func(ctx context.Context, s store.Store, ref string, c *store.Charge) error
	// released reports whether the release ref was written.
	released func(t *testing.T, s store.Store, ref string) bool
}

func releasePaths() []releasePath {
	ctx := context.Background()
	return []releasePath{
		{
			name:    "sample",
			kind:    "sample",
			prepare: func(*testing.T, store.Store, string, string) {},
			release: func(ctx context.Context, s store.Store, ref string, c *store.Charge) error {
				return s.CreateSample(ctx, &store.Sample{ID: ref, Dataset: c.Dataset, CreatedAt: time.Now(), Header: []byte(`{}`)}, c)
			},
			released: func(t *testing.T, s store.Store, ref string) bool {
				_, err := s.GetSample(ctx, ref)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				return err == nil
			},
		},
		{
			name:    "stream creation",
			kind:    "stream",
			prepare: func(*testing.T, store.Store, string, string) {},
			release: func(ctx context.Context, s store.Store, ref string, c *store.Charge) error {
				now := time.Now().UTC()
				return s.CreateState(ctx, &store.StateRecord{Kind: "stream", ID: ref, Dataset: c.Dataset, Config: []byte(`{}`), State: []byte{0}, CreatedAt: now, UpdatedAt: now}, c)
			},
			released: func(t *testing.T, s store.Store, ref string) bool {
				_, err := s.GetState(ctx, "stream", ref)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				return err == nil
			},
		},
		{
			name: "stream release",
			kind: "stream",
			prepare: func(t *testing.T, s store.Store, ref, dataset string) {
				newState(t, s, "stream", ref, dataset)
			},
			release: func(ctx context.Context, s store.Store, ref string, c *store.Charge) error {
				return s.UpdateState(ctx, "stream", ref, func(r *store.StateRecord) (*store.Charge, error) {
					r.Releases++
					r.State = []byte{1}
					return c, nil
				})
			},
			released: func(t *testing.T, s store.Store, ref string) bool {
				r, err := s.GetState(ctx, "stream", ref)
				if err != nil {
					t.Fatal(err)
				}
				if (r.Releases == 1) != (string(r.State) == "\x01") {
					t.Fatalf("stream %s half written: %d releases, state % x", ref, r.Releases, r.State)
				}
				return r.Releases == 1
			},
		},
	}
}

// testChargeLimits: on a dataset (epsilon 1, delta 1e-5) half spent, each
// release path accepts a charge that fits (up to the rounding slack of
// 1e-9 of the budget) and records it in the ledger exactly as asked; it
// refuses one past either budget, negative or not finite with ErrBudget,
// and then writes neither the release nor the charge.
func testChargeLimits(t *testing.T, s store.Store) {
	ctx := context.Background()
	cases := []struct {
		name       string
		eps, delta float64
		fits       bool
	}{
		{"the rest of both budgets", 0.5, 5e-6, true},
		{"epsilon within the rounding slack", 0.5 + 1e-10, 0, true},
		{"a zero charge", 0, 0, true},
		{"epsilon past the budget", 0.5 + 1e-6, 0, false},
		{"delta past the budget", 0, 5e-6 + 1e-10, false},
		{"negative epsilon", -0.1, 0, false},
		{"negative delta", 0, -1e-6, false},
		{"NaN epsilon", math.NaN(), 0, false},
		{"infinite delta", 0, math.Inf(1), false},
		{"largest epsilon", math.MaxFloat64, 0, false},
	}
	for pi, p := range releasePaths() {
		for ci, c := range cases {
			t.Run(p.name+"/"+c.name, func(t *testing.T) {
				ds, ref := fmt.Sprintf("d%d-%d", pi, ci), fmt.Sprintf("r%d-%d", pi, ci)
				newDataset(t, s, ds, 1, 1e-5)
				if err := s.CreateSample(ctx, &store.Sample{ID: "half-" + ds, Dataset: ds, CreatedAt: time.Now(), Header: []byte(`{}`)},
					&store.Charge{Dataset: ds, Kind: "sample", Ref: "half-" + ds, Epsilon: 0.5, Delta: 5e-6}); err != nil {
					t.Fatal(err)
				}
				p.prepare(t, s, ref, ds)
				before, rel0 := ledgerOf(t, s, ds)
				err := p.release(ctx, s, ref, &store.Charge{Dataset: ds, Kind: p.kind, Ref: ref, Epsilon: c.eps, Delta: c.delta})
				after, rel := ledgerOf(t, s, ds)
				if !c.fits {
					if !errors.Is(err, store.ErrBudget) {
						t.Fatalf("charge (%g, %g): %v, want ErrBudget", c.eps, c.delta, err)
					}
					if after != before || len(rel) != len(rel0) || p.released(t, s, ref) {
						t.Fatalf("a refused charge wrote something: spent %g/%g -> %g/%g, %d -> %d releases", before.SpentEpsilon, before.SpentDelta, after.SpentEpsilon, after.SpentDelta, len(rel0), len(rel))
					}
					return
				}
				if err != nil {
					t.Fatalf("charge (%g, %g): %v", c.eps, c.delta, err)
				}
				if after.SpentEpsilon != before.SpentEpsilon+c.eps || after.SpentDelta != before.SpentDelta+c.delta {
					t.Errorf("spent %g/%g after charging (%g, %g) to %g/%g", after.SpentEpsilon, after.SpentDelta, c.eps, c.delta, before.SpentEpsilon, before.SpentDelta)
				}
				last := rel[len(rel)-1]
				if len(rel) != len(rel0)+1 || last.Kind != p.kind || last.Ref != ref || last.Epsilon != c.eps || last.Delta != c.delta {
					t.Errorf("ledger %+v after charging (%g, %g) for %s %s", rel, c.eps, c.delta, p.kind, ref)
				}
				if !p.released(t, s, ref) {
					t.Error("the release was charged but not written")
				}
			})
		}
	}
}

// Tally counts the outcomes of concurrent charges: admitted, or refused
// with store.ErrBudget; any other error fails the test.
type Tally struct{ Admitted, Refused atomic.Int32 }

// Add counts err, the outcome of one charge.
func (c *Tally) Add(t testing.TB, err error) {
	switch {
	case err == nil:
		c.Admitted.Add(1)
	case errors.Is(err, store.ErrBudget):
		c.Refused.Add(1)
	default:
		t.Error(err)
	}
}

// testConcurrentMixedCharges: 12 sample creations, 12 stream creations
// and 12 stream releases, all at once, each charging (0.1, 1e-6) to a
// budget of (1, 1e-5): exactly 10 succeed, the other 26 are refused with
// ErrBudget, and the ledger names exactly the releases that were written.
func testConcurrentMixedCharges(t *testing.T, s store.Store) {
	ctx := context.Background()
	newDataset(t, s, "d", 1, 1e-5)
	paths := releasePaths()
	const each = 12
	for i := range each {
		paths[2].prepare(t, s, fmt.Sprint("u", i), "d")
	}
	var tally Tally
	var wg sync.WaitGroup
	for pi, p := range paths {
		for i := range each {
			ref := fmt.Sprint([]string{"s", "c", "u"}[pi], i)
			wg.Go(func() {
				tally.Add(t, p.release(ctx, s, ref, &store.Charge{Dataset: "d", Kind: p.kind, Ref: ref, Epsilon: 0.1, Delta: 1e-6}))
			})
		}
	}
	wg.Wait()
	if ok, refused := tally.Admitted.Load(), tally.Refused.Load(); ok != 10 || refused != 3*each-10 {
		t.Fatalf("%d succeeded and %d refused, want 10 and %d", ok, refused, 3*each-10)
	}
	d, rel := ledgerOf(t, s, "d")
	if len(rel) != 10 || math.Abs(d.SpentEpsilon-1) > 1e-9 || math.Abs(d.SpentDelta-1e-5) > 1e-14 {
		t.Fatalf("ledger of %d releases, spent %g/%g; want 10 and 1/1e-5", len(rel), d.SpentEpsilon, d.SpentDelta)
	}
	charged := map[string]bool{}
	for _, r := range rel {
		charged[r.Ref] = true
	}
	for pi, p := range paths {
		for i := range each {
			ref := fmt.Sprint([]string{"s", "c", "u"}[pi], i)
			if w := p.released(t, s, ref); w != charged[ref] {
				t.Errorf("%s %s: written %v, charged %v", p.name, ref, w, charged[ref])
			}
		}
	}
}

// testCreateDataset: a new dataset has spent nothing whatever it is
// created with, keeps the creation time given, and is dated now when given
// none.
func testCreateDataset(t *testing.T, s store.Store) {
	ctx := context.Background()
	given := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, c := range []struct {
		name string
		in   store.Dataset
	}{
		{"spent given", store.Dataset{Name: "spent", EpsilonBudget: 3, DeltaBudget: 1e-6, SpentEpsilon: 1.5, SpentDelta: 1e-7, CreatedAt: given}},
		{"no creation time", store.Dataset{Name: "undated", EpsilonBudget: 3, DeltaBudget: 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := time.Now().UTC().Truncate(time.Microsecond)
			if err := s.CreateDataset(ctx, c.in); err != nil {
				t.Fatal(err)
			}
			after := time.Now().UTC()
			got, rel := ledgerOf(t, s, c.in.Name)
			if got.SpentEpsilon != 0 || got.SpentDelta != 0 || len(rel) != 0 || got.EpsilonBudget != c.in.EpsilonBudget || got.DeltaBudget != c.in.DeltaBudget {
				t.Errorf("created %+v as %+v with %d releases", c.in, got, len(rel))
			}
			if c.in.CreatedAt.IsZero() && (got.CreatedAt.Before(before) || got.CreatedAt.After(after)) {
				t.Errorf("dated %v, want between %v and %v", got.CreatedAt, before, after)
			}
			if !c.in.CreatedAt.IsZero() && !got.CreatedAt.Equal(c.in.CreatedAt) {
				t.Errorf("dated %v, want %v", got.CreatedAt, c.in.CreatedAt)
			}
		})
	}
}

func testDatasets(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1e-5}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 1e-5}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate dataset: %v", err)
	}
	// Ten charges of 0.1 fit a budget of 1 despite float rounding.
	for i := 0; i < 10; i++ {
		c := &store.Charge{Dataset: "d", Kind: "sample", Ref: "s" + string(rune('0'+i)), Epsilon: 0.1, Delta: 1e-6}
		if err := s.CreateSample(ctx, &store.Sample{ID: c.Ref, Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
	}
	d, rel, err := s.GetDataset(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(rel) != 10 || math.Abs(d.SpentEpsilon-1) > 1e-9 || math.Abs(d.SpentDelta-1e-5) > 1e-15 {
		t.Fatalf("spent %g/%g with %d releases", d.SpentEpsilon, d.SpentDelta, len(rel))
	}
	if rel[0].Ref != "s0" || rel[9].Ref != "s9" {
		t.Fatalf("ledger out of order: %v", rel)
	}
	if _, _, err := s.GetDataset(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown dataset: %v", err)
	}
	c := &store.Charge{Dataset: "nope", Kind: "sample", Ref: "x", Epsilon: 0.1}
	if err := s.CreateSample(ctx, &store.Sample{ID: "x", Dataset: "nope", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("charge to unknown dataset: %v", err)
	}
}

func testBudgetAtomic(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.CreateDataset(ctx, store.Dataset{Name: "d", EpsilonBudget: 1, DeltaBudget: 0}); err != nil {
		t.Fatal(err)
	}
	c := &store.Charge{Dataset: "d", Kind: "sample", Ref: "big", Epsilon: 1.5}
	if err := s.CreateSample(ctx, &store.Sample{ID: "big", Dataset: "d", CreatedAt: time.Now(), Header: []byte(`{}`)}, c); !errors.Is(err, store.ErrBudget) {
		t.Fatalf("overspend: %v, want ErrBudget", err)
	}
	if _, err := s.GetSample(ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused sample was stored: %v", err)
	}
	d, rel, _ := s.GetDataset(ctx, "d")
	if d.SpentEpsilon != 0 || len(rel) != 0 {
		t.Fatalf("refused charge left spent=%g releases=%d", d.SpentEpsilon, len(rel))
	}
}

// testListDatasets: every dataset once, in creation order, with its own ledger.
func testListDatasets(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := time.Now().UTC().Truncate(time.Microsecond)
	for i, name := range []string{"zeta", "alpha", "mid"} {
		if err := s.CreateDataset(ctx, store.Dataset{Name: name, EpsilonBudget: 5, CreatedAt: base.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i; j++ {
			id := fmt.Sprint(name, j)
			if err := s.CreateSample(ctx, &store.Sample{ID: id, CreatedAt: base, Dataset: name, Header: []byte(`{}`)}, &store.Charge{Dataset: name, Kind: "sample", Ref: id, Epsilon: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	var c store.Cursor
	for {
		ds, rel, err := s.ListDatasets(ctx, c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range ds {
			got = append(got, d.Name)
			if len(rel[i]) != int(d.SpentEpsilon) || rel[i][0].Ref != d.Name+"0" {
				t.Fatalf("dataset %s: ledger %v, spent %g", d.Name, rel[i], d.SpentEpsilon)
			}
		}
		if len(ds) < 2 {
			break
		}
		c = store.Cursor{CreatedAt: ds[len(ds)-1].CreatedAt, ID: ds[len(ds)-1].Name}
	}
	if fmt.Sprint(got) != "[zeta alpha mid]" {
		t.Fatalf("listed %v", got)
	}
}
