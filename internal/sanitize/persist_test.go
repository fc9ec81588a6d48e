package sanitize

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/workload"
)

// keptCase is a parameter set whose kept rows are stored: a warm-up of
// steps rows, then rows compared at freqs.
type keptCase struct {
	name  string
	p     Privacy
	s     Sampling
	m     Method
	plan  func(Privacy, int64) restartPlan
	steps int64
	freqs []int64
}

// keptCases cover both methods: rows by restart (the test plan, first
// junction at four warm-ups, q < 1 throughout), a table that reaches its
// stationary cycle within the warm-up (ppswor tau 0.01), and the chain of
// a table whose warm-up stops before its rows are stationary.
func keptCases(t testing.TB) []keptCase {
	var out []keptCase
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		p := mustPrivacy(t, 1, 1e-6)
		out = append(out,
			keptCase{"restarts/" + string(m), p, mustSampling(t, SchemePPSWOR, 1e-7, 1, nil), m, testPlan, 20_000, []int64{1, 2, 77, 256, 1000, 1024, 1025, 3000, 4321, 5000, 9000}},
			keptCase{"stationary/" + string(m), mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 0.01, 1, nil), m, newRestartPlan, 1 << 20, []int64{1, 100, 512, 4000, 1e6, 1e9 + 3}},
			keptCase{"chain/" + string(m), p, mustSampling(t, SchemePriority, 1e-4, 1, nil), m, newRestartPlan, 3000, []int64{1, 200, 256, 2048, 2500, 2999, 3100}},
		)
	}
	return out
}

// warmTable is a fresh table of c after its warm-up.
func (c keptCase) warmTable(t testing.TB) *Table {
	t.Helper()
	tb := newTable(c.p, c.s, c.m, c.plan)
	if _, err := tb.WarmUp(context.Background(), c.steps); err != nil {
		t.Fatal(err)
	}
	return tb
}

// sameRow fails unless a and b are the same row bit for bit.
func sameRow(t testing.TB, what string, a, b Row) {
	t.Helper()
	same := a.Frequency == b.Frequency && math.Float64bits(a.Pi) == math.Float64bits(b.Pi) && len(a.Pieces) == len(b.Pieces)
	for k := 0; same && k < len(a.Pieces); k++ {
		pa, pb := a.Pieces[k], b.Pieces[k]
		same = math.Float64bits(pa.Lo) == math.Float64bits(pb.Lo) && math.Float64bits(pa.Hi) == math.Float64bits(pb.Hi) && math.Float64bits(pa.P) == math.Float64bits(pb.P)
	}
	if !same {
		t.Fatalf("%s: row %d differs from the row computed from row 0", what, a.Frequency)
	}
}

// TestKeptRowsRoundTrip: a fresh table given the kept rows of another's
// warm-up re-encodes them byte for byte, answers every row bit for bit as a
// table that computed everything itself (the oracle), and reaches a kept
// row (a checkpoint, a junction's row, a stationary row) with no row
// stepped, where the oracle table stepped up to it.
func TestKeptRowsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range keptCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			warm := c.warmTable(t)
			data := warm.KeptRows(1 << 30)
			restored := newTable(c.p, c.s, c.m, c.plan)
			if err := restored.RestoreKeptRows(data); err != nil {
				t.Fatal(err)
			}
			if again := restored.KeptRows(1 << 30); !slices.Equal(again, data) {
				t.Fatalf("the restored table encodes %d bytes unlike the %d it was given", len(again), len(data))
			}
			// Every kept row costs no step.
			kept := []int64{}
			for _, r := range warm.cps[1:] {
				kept = append(kept, r.i)
			}
			for i := range warm.starts {
				kept = append(kept, i)
			}
			for i := range warm.mids {
				kept = append(kept, i)
			}
			if st := warm.stationary(); st != nil {
				kept = append(kept, st.from(), st.from()+123_456_789)
			}
			if len(kept) == 0 {
				t.Fatal("the warm-up kept no row")
			}
			for _, i := range kept {
				before := restored.RowsStepped()
				r, err := restored.Row(i)
				if err != nil {
					t.Fatal(err)
				}
				if n := restored.RowsStepped() - before; n != 0 {
					t.Fatalf("row %d, a kept row, stepped %d rows after the restore", i, n)
				}
				oracle := newTable(c.p, c.s, c.m, c.plan)
				want, err := oracle.Row(i)
				if err != nil {
					t.Fatal(err)
				}
				sameRow(t, "kept row", r, want)
			}
			for _, i := range c.freqs {
				got, err := restored.Row(i)
				if err != nil {
					t.Fatal(err)
				}
				want, err := newTable(c.p, c.s, c.m, c.plan).Row(i)
				if err != nil {
					t.Fatal(err)
				}
				sameRow(t, "any row", got, want)
			}
		})
	}
}

// TestWarmUpIsAFunctionOfItsParameters: two warm-ups of the same
// parameters keep the same rows (the encodings are equal byte for byte)
// whatever the tables were asked before, and a table that computed other
// rows first is refused a restore.
func TestWarmUpIsAFunctionOfItsParameters(t *testing.T) {
	t.Parallel()
	c := keptCases(t)[0]
	a := c.warmTable(t).KeptRows(1 << 30)
	b := c.warmTable(t).KeptRows(1 << 30)
	if !slices.Equal(a, b) {
		t.Fatal("two warm-ups of one parameter set keep different rows")
	}
	used := newTable(c.p, c.s, c.m, c.plan)
	if _, err := used.Row(5000); err != nil {
		t.Fatal(err)
	}
	if err := used.RestoreKeptRows(a); !errors.Is(err, ErrKeptRows) {
		t.Fatalf("a table with rows of its own took a restore: %v", err)
	}
}

// shiftUp moves r up by one frequency (a row of the next frequency, in a
// place where the table may keep none).
func shiftUp(r *rowState) {
	for k := range r.x {
		r.x[k]++
	}
	r.i++
}

// resign returns t's encoding of e (with a valid checksum): a stored row
// that a writer with a bug, not corruption, made.
func resign(t *Table, e *keptRowsOfEncoding) []byte { return t.encodeKept(e) }

// TestRestoreKeptRowsRefuses: every damaged, foreign or implausible
// encoding is refused with ErrKeptRows and leaves the table as fresh as
// before (its rows are then computed, and equal the oracle's): a flipped
// bit anywhere (header, rows, checksum), a truncation, another parameter
// set's rows, and, with a valid checksum, another format or algorithm
// version, a mass outside [0, 1], masses that do not sum to pi, pi above
// q_i, a checkpoint, junction row or inner row where the table keeps none,
// and a stationary cycle whose rows are not steps of each other (one mass
// moved by one ulp).
func TestRestoreKeptRowsRefuses(t *testing.T) {
	t.Parallel()
	restarts := keptCases(t)[0]   // junction, inner and checkpoint rows
	stationary := keptCases(t)[1] // a stationary cycle
	goodR := restarts.warmTable(t)
	goodS := stationary.warmTable(t)
	dataR, dataS := goodR.KeptRows(1<<30), goodS.KeptRows(1<<30)
	decoded := func(tb *Table, data []byte) *keptRowsOfEncoding {
		e, err := tb.decodeKeptRows(data)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	flip := func(data []byte, at int) []byte {
		d := slices.Clone(data)
		d[at] ^= 1
		return d
	}
	other := keptCase{p: mustPrivacy(t, 2, 1e-6), s: restarts.s, m: restarts.m, plan: testPlan, steps: 5000}
	cases := []struct {
		name string
		c    keptCase
		data func() []byte
		want string // in the error: the check that refused it
	}{
		{"flipped bit in the magic", restarts, func() []byte { return flip(dataR, 0) }, "checksum"},
		{"flipped bit in a row", restarts, func() []byte { return flip(dataR, len(dataR)/2) }, "checksum"},
		{"flipped bit in the checksum", restarts, func() []byte { return flip(dataR, len(dataR)-1) }, "checksum"},
		{"truncated by one byte", restarts, func() []byte { return dataR[:len(dataR)-1] }, "checksum"},
		{"truncated to half", restarts, func() []byte { return dataR[:len(dataR)/2] }, "checksum"},
		{"empty", restarts, func() []byte { return nil }, "truncated"},
		{"another parameter set", restarts, func() []byte { return other.warmTable(t).KeptRows(1 << 30) }, "other parameters"},
		{"another format", restarts, func() []byte {
			d := slices.Clone(dataR[:len(dataR)-sha256.Size])
			d[len(keptMagic)]++
			s := sha256.Sum256(d)
			return append(d, s[:]...)
		}, fmt.Sprintf("want %d", KeptRowsFormat)},
		{"another algorithm version", restarts, func() []byte {
			d := slices.Clone(dataR[:len(dataR)-sha256.Size])
			d[len(keptMagic)+2]++ // the version string's first byte
			s := sha256.Sum256(d)
			return append(d, s[:]...)
		}, "algorithm version"},
		{"a mass above 1", restarts, func() []byte {
			e := decoded(goodR, dataR)
			e.starts[0].m[0] = 1.5
			return resign(goodR, e)
		}, "mass outside"},
		{"masses that do not sum to pi", restarts, func() []byte {
			e := decoded(goodR, dataR)
			e.cps[0].m[0] *= 0.5
			return resign(goodR, e)
		}, "sum"},
		{"pi above q_i", restarts, func() []byte {
			e := decoded(goodR, dataR)
			r := e.cps[0]
			r.m[len(r.m)-1] += goodR.s.Q(r.i)
			r.pi += goodR.s.Q(r.i)
			return resign(goodR, e)
		}, "q_i"},
		{"a checkpoint off the spacing", restarts, func() []byte {
			e := decoded(goodR, dataR)
			shiftUp(e.cps[0])
			return resign(goodR, e)
		}, "checkpoint where"},
		{"a junction row off the junctions", restarts, func() []byte {
			e := decoded(goodR, dataR)
			shiftUp(e.starts[0])
			return resign(goodR, e)
		}, "junction row off"},
		{"a middle row off the blocks' middles", restarts, func() []byte {
			e := decoded(goodR, dataR)
			shiftUp(e.mids[0])
			return resign(goodR, e)
		}, "middle row off"},
		{"an inner row where none is kept", restarts, func() []byte {
			e := decoded(goodR, dataR)
			e.inner = append(e.cps[:1:1], e.inner...)
			return resign(goodR, e)
		}, "inner row where"},
		{"a stationary cycle that is not steps", stationary, func() []byte {
			e := decoded(goodS, dataS)
			r := e.stat[0]
			r.m[len(r.m)/2] = math.Nextafter(r.m[len(r.m)/2], 1)
			return resign(goodS, e)
		}, "not a cycle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := newTable(tc.c.p, tc.c.s, tc.c.m, tc.c.plan)
			err := tb.RestoreKeptRows(tc.data())
			if !errors.Is(err, ErrKeptRows) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore: %v, want ErrKeptRows naming %q", err, tc.want)
			}
			t.Log(err)
			if len(tb.cps) != 1 || tb.starts != nil || tb.inner != nil || tb.mids != nil || tb.warms != nil || tb.stationary() != nil {
				t.Fatal("a refused restore left rows in the table")
			}
			i := tc.c.freqs[len(tc.c.freqs)-2]
			got, err := tb.Row(i)
			if err != nil {
				t.Fatal(err)
			}
			if tb.RowsStepped() == 0 {
				t.Fatal("the row was not computed")
			}
			want, err := newTable(tc.c.p, tc.c.s, tc.c.m, tc.c.plan).Row(i)
			if err != nil {
				t.Fatal(err)
			}
			sameRow(t, "after a refused restore", got, want)
		})
	}
	// The untouched encodings restore (the cases above fail for their
	// damage alone).
	for _, c := range []struct {
		c    keptCase
		data []byte
	}{{restarts, dataR}, {stationary, dataS}} {
		if err := newTable(c.c.p, c.c.s, c.c.m, c.c.plan).RestoreKeptRows(c.data); err != nil {
			t.Fatalf("%s: the intact encoding: %v", c.c.name, err)
		}
	}
}

// TestKeptRowsBound: an encoding is at most the bytes asked, holds the
// stationary cycle first and then ascending prefixes of the checkpoints,
// junction rows, inner rows and warm-up ends, restores, and is nil when
// not even its header fits.
func TestKeptRowsBound(t *testing.T) {
	t.Parallel()
	c := keptCases(t)[0]
	warm := c.warmTable(t)
	full := warm.KeptRows(1 << 30)
	if warm.KeptRows(20) != nil {
		t.Fatal("an encoding of 20 bytes")
	}
	rows := 0
	limits := []int{200, 4 << 10, 64 << 10, len(full) / 2, len(full) - 1, 2 * len(full)}
	slices.Sort(limits)
	for _, limit := range limits {
		data := warm.KeptRows(limit)
		if len(data) > limit {
			t.Fatalf("limit %d: %d bytes", limit, len(data))
		}
		tb := newTable(c.p, c.s, c.m, c.plan)
		if err := tb.RestoreKeptRows(data); err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		e, err := tb.decodeKeptRows(data)
		if err != nil {
			t.Fatal(err)
		}
		all, err := warm.decodeKeptRows(full)
		if err != nil {
			t.Fatal(err)
		}
		// Each kind is a prefix of the full one, and a larger limit keeps
		// at least as many rows.
		n := 0
		for k, kind := range [][2][]*rowState{{e.cps, all.cps}, {e.starts, all.starts}, {e.mids, all.mids}, {e.inner, all.inner}, {e.warms, all.warms}} {
			got, want := kind[0], kind[1]
			if len(got) > len(want) {
				t.Fatalf("limit %d: kind %d has more rows than the table keeps", limit, k)
			}
			for r := range got {
				if got[r].i != want[r].i {
					t.Fatalf("limit %d: kind %d is not a prefix", limit, k)
				}
			}
			n += len(got)
		}
		if n < rows {
			t.Fatalf("limit %d keeps %d rows, fewer than a smaller limit (%d)", limit, n, rows)
		}
		rows = n
		if limit > len(full) && len(data) != len(full) {
			t.Fatalf("limit %d above the full size: %d bytes, want %d", limit, len(data), len(full))
		}
	}
}

// TestBreakPointForms: break points are written in the shortest form that
// rebuilds them bit for bit (unit steps, steps on the 2^-20 grid as they
// are or against the reference row's, raw) and read back exactly; an
// unknown form, and a step against the reference that leaves the grid, are
// refused.
func TestBreakPointForms(t *testing.T) {
	t.Parallel()
	grid := []float64{3, 3 + 0x1p-20, 3.5, 1e6 + 0x1p-20, 1e6 + 1}
	for _, tc := range []struct {
		name string
		x    []float64
		ref  []float64
		form byte
	}{
		{"grid, steps as the reference's", []float64{5, 5 + 0x1p-20, 5.5, 1e6 + 2 + 0x1p-20, 1e6 + 3}, grid, pointsGridRef},
		{"grid, a reference of other steps", grid, []float64{0, 0.25, 0.5, 0.75, 1, 1.25}, pointsGrid},
		{"grid, a shorter reference", []float64{5, 5 + 0x1p-20, 5.5, 1e6 + 2 + 0x1p-20, 1e6 + 3, 1e6 + 4}, grid, pointsGridRef},
		{"grid, a reference off the grid", grid, []float64{0, 0.1, 0.2}, pointsGrid},
		{"tokens", []float64{41, 42, 43, 44}, nil, pointsUnit},
		{"one piece", []float64{7, 8}, nil, pointsUnit},
		{"grid", []float64{3, 3 + 0x1p-20, 3.5, 1e6 + 0x1p-20, 1e6 + 1}, nil, pointsGrid},
		{"off the grid", []float64{0, 0.1, 0.2, 0.3}, nil, pointsRaw},
		{"a step below the grid", []float64{1, 1 + 0x1p-30, 2}, nil, pointsRaw},
		{"large positions on the grid", []float64{0x1p40, 0x1p40 + 0x1p-12, 0x1p40 + 1}, nil, pointsGrid},
		{"a decreasing step", []float64{2, 1}, nil, pointsRaw},
	} {
		w := binenc.NewWriter(nil)
		writeBreakPoints(w, tc.x, tc.ref)
		if form := w.Bytes()[8]; form != tc.form {
			t.Errorf("%s: form %d, want %d", tc.name, form, tc.form)
		}
		r := binenc.NewReader(w.Bytes(), ErrKeptRows)
		got := readBreakPoints(r, uint64(len(tc.x)), tc.ref)
		if err := r.Close(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for k := range tc.x {
			if math.Float64bits(got[k]) != math.Float64bits(tc.x[k]) {
				t.Fatalf("%s: x[%d] = %v, want %v", tc.name, k, got[k], tc.x[k])
			}
		}
	}
	w := binenc.NewWriter(nil)
	w.Float(1)
	w.Byte(9)
	r := binenc.NewReader(w.Bytes(), ErrKeptRows)
	readBreakPoints(r, 2, nil)
	if r.Err() == nil {
		t.Fatal("an unknown break point form was read")
	}
	// A step one grid unit below the reference's where the reference's is
	// one unit: a step of 0, off the grid.
	w = binenc.NewWriter(nil)
	w.Float(1)
	w.Byte(pointsGridRef)
	w.Uvarint(zigzag(-1))
	r = binenc.NewReader(w.Bytes(), ErrKeptRows)
	if readBreakPoints(r, 2, []float64{0, 0x1p-20}); r.Err() != nil {
		t.Fatalf("a step of 0 against the reference: %v (checkRow refuses it, not the form)", r.Err())
	}
	w = binenc.NewWriter(nil)
	w.Float(1)
	w.Byte(pointsGridRef)
	w.Uvarint(zigzag(-2))
	r = binenc.NewReader(w.Bytes(), ErrKeptRows)
	if readBreakPoints(r, 2, []float64{0, 0x1p-20}); r.Err() == nil {
		t.Fatal("a negative step against the reference was read")
	}
}

// simulatedAnchors returns anchor places as the service derives them
// (tablecache.AnchorPlaces: round(f) - k L/8, k = 0, 1, 2) from simulated
// MLE frequencies: each frequency plus a normal error of 14 rows, about the
// spread measured on the Zipf release at eps 0.1 (docs/store.md).
func simulatedAnchors(freqs []int64, p Privacy) []int64 {
	rng := rand.New(rand.NewPCG(5, 6))
	var places []int64
	for _, f := range freqs {
		mle := math.Round(float64(f) + 14*rng.NormFloat64())
		for k := range 3 {
			if i := int64(mle - math.Round(float64(k)*L(p)/8)); i >= 1 {
				places = append(places, i)
			}
		}
	}
	return places
}

// mustRestored returns a new table of (p, s, m) restored from data, kept
// rows (Table.KeptRows).
func mustRestored(t testing.TB, p Privacy, s Sampling, m Method, data []byte) *Table {
	t.Helper()
	tb := mustTable(t, p, s, m)
	if err := tb.RestoreKeptRows(data); err != nil {
		t.Fatal(err)
	}
	return tb
}

// zipfFreqs returns the frequencies of the Zipf workload's client sample
// at tau (docs/performance.md, "The Zipf workload").
func zipfFreqs(t testing.TB, tau float64) []int64 {
	t.Helper()
	sample, err := workload.DefaultZipf().SamplePPSWOR(tau, 1)
	if err != nil {
		t.Fatal(err)
	}
	freqs := make([]int64, len(sample))
	for i, e := range sample {
		freqs[i] = e.Frequency
	}
	return freqs
}

// drawAll draws freqs on tb with a Drawer, as a release does (Prepare on
// two goroutines, then Draw), and reports the rows tb stepped as rows.
func drawAll(b *testing.B, tb *Table, freqs []int64) {
	before := tb.RowsStepped()
	dr := tb.NewDrawer(rand.New(rand.NewPCG(1, 2)))
	dr.Prepare(freqs, 2)
	for _, f := range freqs {
		if _, err := dr.Draw(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tb.RowsStepped()-before), "rows")
}

// BenchmarkDrawsAfterRestore draws the Zipf workload's client sample at tau
// 1e-4 (docs/performance.md, about 5,400 keys; eps 0.1, delta 1e-6) with a
// Drawer, as a release does (Prepare on two goroutines, then Draw), on a
// fresh table (cold), on the same table again (warm: its samplers are
// cached), and on a fresh table given the kept rows of a warm-up (restored,
// docs/store.md; restored-draws times the draws alone, not the restore;
// anchored-draws the draws on a restored table anchored below simulated
// MLE frequencies, docs/store.md "Anchored rows after a restart").
// rows is the rows the table stepped; kept-bytes the encoding. Run with
// -benchtime 1x.
func BenchmarkDrawsAfterRestore(b *testing.B) {
	freqs := zipfFreqs(b, 1e-4)
	p, s := benchPrivacy(b), mustSampling(b, SchemePPSWOR, 1e-4, 1, nil)
	draw := func(b *testing.B, tb *Table) { drawAll(b, tb, freqs) }
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		warm := mustTable(b, p, s, m)
		if _, err := warm.WarmUp(context.Background(), 1<<20); err != nil {
			b.Fatal(err)
		}
		data := warm.KeptRows(12 << 20)
		b.Run(string(m)+"/cold", func(b *testing.B) {
			for b.Loop() {
				draw(b, mustTable(b, p, s, m))
			}
		})
		b.Run(string(m)+"/warm", func(b *testing.B) {
			tb := mustTable(b, p, s, m)
			draw(b, tb)
			for b.Loop() {
				draw(b, tb)
			}
		})
		b.Run(string(m)+"/restored", func(b *testing.B) {
			for b.Loop() {
				tb := mustRestored(b, p, s, m, data)
				draw(b, tb)
			}
			b.ReportMetric(float64(len(data)), "kept-bytes")
		})
		b.Run(string(m)+"/anchored-draws", func(b *testing.B) {
			places := simulatedAnchors(freqs, p)
			for b.Loop() {
				b.StopTimer()
				tb := mustRestored(b, p, s, m, data)
				if _, err := tb.Anchor(context.Background(), places, math.MaxInt64); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				draw(b, tb)
			}
		})
		b.Run(string(m)+"/restored-draws", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				tb := mustRestored(b, p, s, m, data)
				b.StartTimer()
				draw(b, tb)
			}
		})
	}
}

// BenchmarkAnchorsOverTheBound draws the Zipf workload's client sample at
// tau 1e-4, 2e-4 and 4e-4 (about 5,900, 10,700 and 18,700 keys; eps 0.1,
// delta 1e-6, max_separation) on a restored table anchored below simulated
// MLE frequencies, as BenchmarkDrawsAfterRestore's anchored-draws: from 2e-4
// on, the places' rows exceed the anchored rows' bound (anchorBreakPoints),
// and Anchor keeps those that save the most steps per break point
// (anchorKeeper). rows is the rows the draws stepped, anchored the rows
// kept, anchor-rows the rows Anchor stepped. Run with -benchtime 1x.
func BenchmarkAnchorsOverTheBound(b *testing.B) {
	p := benchPrivacy(b)
	for _, tau := range []float64{1e-4, 2e-4, 4e-4} {
		b.Run(fmt.Sprintf("tau=%g", tau), func(b *testing.B) {
			freqs := zipfFreqs(b, tau)
			s := mustSampling(b, SchemePPSWOR, tau, 1, nil)
			warm := mustTable(b, p, s, MethodMaxSeparation)
			if _, err := warm.WarmUp(context.Background(), 1<<20); err != nil {
				b.Fatal(err)
			}
			data := warm.KeptRows(12 << 20)
			places := simulatedAnchors(freqs, p)
			for b.Loop() {
				b.StopTimer()
				tb := mustRestored(b, p, s, MethodMaxSeparation, data)
				before := tb.RowsStepped()
				n, err := tb.Anchor(context.Background(), places, math.MaxInt64)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "anchored")
				b.ReportMetric(float64(tb.RowsStepped()-before), "anchor-rows")
				b.StartTimer()
				drawAll(b, tb, freqs)
			}
		})
	}
}

// TestKeptMiddleRows: a warm-up keeps the middle row (midRow) of every
// block it walked through, at a place fixed by the plan alone; after a
// restore a row d rows above a block's middle row steps exactly d rows
// and a row just below it exactly its distance from the block's verified
// first row (the oracle: the nearest kept row below, no junction to
// check), each equal bit for bit to the row computed from row 0.
func TestKeptMiddleRows(t *testing.T) {
	t.Parallel()
	for _, c := range keptCases(t)[:1] {
		for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
			c.m = m
			warm := c.warmTable(t)
			pl := warm.plan
			if len(warm.mids) == 0 {
				t.Fatalf("%s: the warm-up kept no middle row", m)
			}
			for i := range warm.mids {
				a := pl.junctionBelow(i)
				if pl.midRow(a) != i || i-a < pl.block/4 || a+pl.block-i < pl.block/4 {
					t.Fatalf("%s: middle row %d of the block at %d (%d rows) is not near its middle", m, i, a, pl.block)
				}
				if warm.starts[a] == nil {
					t.Fatalf("%s: middle row %d kept without its block's first row", m, i)
				}
			}
			data := warm.KeptRows(1 << 30)
			mids := sortedKept(warm.mids)
			for _, k := range []int{0, len(mids) / 2, len(mids) - 1} {
				mid := mids[k].i
				a := pl.junctionBelow(mid)
				for _, tc := range []struct{ i, steps int64 }{{mid, 0}, {mid + 1, 1}, {mid + 40, 40}, {mid - 1, mid - 1 - a}} {
					tb := newTable(c.p, c.s, c.m, c.plan)
					if err := tb.RestoreKeptRows(data); err != nil {
						t.Fatal(err)
					}
					before := tb.RowsStepped()
					got, err := tb.Row(tc.i)
					if err != nil {
						t.Fatal(err)
					}
					if n := tb.RowsStepped() - before; n != tc.steps {
						t.Errorf("%s: row %d (middle row %d) stepped %d rows after the restore, want %d", m, tc.i, mid, n, tc.steps)
					}
					want, err := newTable(c.p, c.s, c.m, c.plan).Row(tc.i)
					if err != nil {
						t.Fatal(err)
					}
					sameRow(t, "a row near a middle row", got, want)
				}
			}
		}
	}
}

// keptStarts returns, ascending, the rows tb keeps from which walks start
// with no junction to check: its checkpoints, verified junction rows and
// middle rows.
func keptStarts(tb *Table) []int64 {
	var kept []int64
	for _, r := range tb.cps {
		kept = append(kept, r.i)
	}
	for _, m := range []map[int64]*rowState{tb.starts, tb.mids} {
		for i := range m {
			kept = append(kept, i)
		}
	}
	slices.Sort(kept)
	return kept
}

// prepareCase is the setup of the tests that count the rows Drawer.Prepare
// steps on a restored table (skipped under pwsd_reference, whose Prepare
// prepares nothing): the rows-by-restart kept case, a table warmed up over
// it and its kept rows.
func prepareCase(t *testing.T) (keptCase, *Table, []byte) {
	t.Helper()
	if referenceOnly {
		t.Skip("the reference Prepare prepares nothing: it counts the rows Prepare steps")
	}
	c := keptCases(t)[0]
	warm := c.warmTable(t)
	return c, warm, warm.KeptRows(1 << 30)
}

// TestPrepareAfterRestoreSteps: on a restored table, Drawer.Prepare steps
// exactly the rows a brute-force count gives (each distinct frequency in
// ascending order walked from the nearer of the previous frequency and the
// nearest kept row below it: checkpoint, verified junction row or middle
// row, every junction's row being kept), on one goroutine or two (the
// clusters cut at kept rows step the rows one walk would), and the draws
// are those of a Drawer on a table that computed every row itself, bit for
// bit.
func TestPrepareAfterRestoreSteps(t *testing.T) {
	t.Parallel()
	c, warm, data := prepareCase(t)
	kept := keptStarts(warm)
	top := slices.Max(kept)
	rng := rand.New(rand.NewPCG(37, 2))
	freqs := make([]int64, 400)
	for k := range freqs {
		freqs[k] = 1 + rng.Int64N(top)
		if k%3 == 0 {
			freqs[k] = 1 + rng.Int64N(2000) // denser low down
		}
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(freqs)))
	want, prev := int64(0), int64(-1)
	for _, f := range distinct {
		below := kept[sort.Search(len(kept), func(k int) bool { return kept[k] > f })-1]
		want += f - max(below, prev)
		prev = f
	}
	wantOut := seededDraws(t, newTable(c.p, c.s, c.m, c.plan), freqs, 0)
	for _, workers := range []int{1, 2} {
		tb := newTable(c.p, c.s, c.m, c.plan)
		if err := tb.RestoreKeptRows(data); err != nil {
			t.Fatal(err)
		}
		before := tb.RowsStepped()
		got := seededDraws(t, tb, freqs, workers)
		if n := tb.RowsStepped() - before; n != want {
			t.Errorf("%d workers: Prepare stepped %d rows, want %d", workers, n, want)
		}
		sameDraws(t, fmt.Sprintf("%d workers", workers), freqs, got, wantOut)
	}
}

// seededDraws returns the draws of freqs, in order, by a Drawer of tb
// seeded (1, 1), after Prepare on workers goroutines (none when 0).
func seededDraws(t testing.TB, tb *Table, freqs []int64, workers int) []Outcome {
	t.Helper()
	dr := tb.NewDrawer(rand.New(rand.NewPCG(1, 1)))
	if workers > 0 {
		dr.Prepare(freqs, workers)
	}
	out := make([]Outcome, len(freqs))
	for k, f := range freqs {
		o, err := dr.Draw(f)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = o
	}
	return out
}

// sameDraws fails unless got and want, the draws of freqs, are equal.
func sameDraws(t testing.TB, what string, freqs []int64, got, want []Outcome) {
	t.Helper()
	for k, f := range freqs {
		if got[k] != want[k] {
			t.Fatalf("%s: frequency %d drew %+v, want %+v", what, f, got[k], want[k])
		}
	}
}

// TestMassBitsForms: a mass is written as its bits XOR its reference's in
// as few bytes as the XOR's nonzero byte span (one byte when they are
// equal) and read back bit for bit; a form byte that claims more than 8
// bytes, or none, is refused, and so is a mass that decodes to NaN.
func TestMassBitsForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		x     uint64
		bytes int
	}{
		{"equal masses", 0, 1},
		{"lowest byte", 0x5a, 2},
		{"one middle byte", 0x00_00_00_7f_00_00_00_00, 2},
		{"highest byte", 0xff << 56, 2},
		{"a span with zeros inside", 0x01_00_00_00_00_00_00_01, 9},
		{"three bytes up high", 0x12_34_56 << 40, 4},
	} {
		w := binenc.NewWriter(nil)
		writeMassBits(w, tc.x)
		if len(w.Bytes()) != tc.bytes {
			t.Errorf("%s: %d bytes, want %d", tc.name, len(w.Bytes()), tc.bytes)
		}
		r := binenc.NewReader(w.Bytes(), ErrKeptRows)
		if got := readMassBits(r); got != tc.x || r.Close() != nil {
			t.Errorf("%s: read %#x (%v), want %#x", tc.name, got, r.Err(), tc.x)
		}
	}
	for _, form := range []byte{0x10, 0x09, 0x63} { // no byte; 9 bytes; bytes 6..8, past the 8th
		r := binenc.NewReader(append([]byte{form}, make([]byte, 9)...), ErrKeptRows)
		readMassBits(r)
		if r.Err() == nil {
			t.Errorf("form %#x was read", form)
		}
	}
	// A row whose mass decodes to NaN (the XOR of 0.5 and NaN's bits
	// against a reference of 0.5) is refused.
	ref := &rowState{i: 2, x: []float64{1, 2}, m: []float64{0.5}}
	bad := &rowState{i: 2, x: []float64{1, 2}, m: []float64{math.NaN()}}
	w := binenc.NewWriter(nil)
	writeRow(w, bad, ref)
	r := binenc.NewReader(w.Bytes(), ErrKeptRows)
	if readRow(r, ref) != nil || r.Err() == nil {
		t.Error("a NaN mass was read")
	}
}

// TestPrepareClustersCutAtKeptRows: Prepare's clusters (Table.clusters)
// cut between two frequencies exactly where a brute-force scan finds a
// kept row (checkpoint, verified junction row or middle row) at or above
// the first and at or below the second, or the two lie more than a block
// apart above the first junction; a table that keeps only row 0 cuts only
// at those gaps. Below the first junction, where the only way to a row is
// the chain from row 0, a gap of more than a block does not cut: a second
// cluster there would walk that chain again from the checkpoint below.
func TestPrepareClustersCutAtKeptRows(t *testing.T) {
	t.Parallel()
	c := keptCases(t)[0]
	warm := c.warmTable(t)
	restored := newTable(c.p, c.s, c.m, c.plan)
	if err := restored.RestoreKeptRows(warm.KeptRows(1 << 30)); err != nil {
		t.Fatal(err)
	}
	kept := keptStarts(warm)
	rng := rand.New(rand.NewPCG(37, 4))
	var todo []int64
	pl := restored.plan
	for f := int64(1); f < slices.Max(kept); f += 1 + rng.Int64N(90) {
		todo = append(todo, f)
		if len(todo)%10 == 0 { // gaps of more than a block, below the first junction and above it
			f += pl.block + rng.Int64N(pl.block)
		}
	}
	if todo[0] >= pl.from || !slices.ContainsFunc(todo, func(f int64) bool { return f >= pl.from }) {
		t.Fatalf("the frequencies %d..%d do not straddle the first junction %d", todo[0], todo[len(todo)-1], pl.from)
	}
	gapCut := func(a, b int64) bool { return b >= pl.from && b-a > pl.block }
	for _, tc := range []struct {
		name string
		tb   *Table
		cut  func(a, b int64) bool
	}{
		{"restored", restored, func(a, b int64) bool {
			k := sort.Search(len(kept), func(k int) bool { return kept[k] > b }) - 1
			return gapCut(a, b) || kept[k] >= a
		}},
		{"cold", newTable(c.p, c.s, c.m, c.plan), gapCut},
	} {
		clusters := tc.tb.clusters(todo)
		if got := slices.Concat(clusters...); !slices.Equal(got, todo) {
			t.Fatalf("%s: the clusters hold %d frequencies, not the %d given in order", tc.name, len(got), len(todo))
		}
		cuts := 0
		for k := 1; k < len(clusters); k++ {
			a, b := clusters[k-1][len(clusters[k-1])-1], clusters[k][0]
			if !tc.cut(a, b) {
				t.Errorf("%s: cut between %d and %d with no kept row between", tc.name, a, b)
			}
			cuts++
		}
		for _, cl := range clusters {
			for k := 1; k < len(cl); k++ {
				if tc.cut(cl[k-1], cl[k]) {
					t.Errorf("%s: %d and %d in one cluster, a kept row between", tc.name, cl[k-1], cl[k])
				}
			}
		}
		t.Logf("%s: %d frequencies, %d clusters", tc.name, len(todo), cuts+1)
	}
}
