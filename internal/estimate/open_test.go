package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// methodSource is a plain row source that claims a sanitizer method (and
// has neither dense nor grid rows): Open's fast rows for that method then
// see rows they may have to decline.
type methodSource struct {
	RowSource
	m sanitize.Method
}

func (s methodSource) Method() sanitize.Method { return s.m }

// openSources are the sources the decision-table tests read: small tables
// of both methods, cheap to build.
type openSources struct {
	discrete, grid, sampled func() *sanitize.Table
}

func newOpenSources(t *testing.T) openSources {
	p := mustPrivacy(1, 1e-6)
	none := mustSampling(sanitize.SchemeNone, 0, nil)
	return openSources{
		discrete: tableMaker(t, p, none, sanitize.MethodDiscrete),
		grid:     tableMaker(t, p, none, sanitize.MethodMaxSeparation),
		// q_i = 1 - exp(-i tau) reaches 1 far above 2 n: not mostly
		// stationary, so Build leaves the grid builder aside.
		sampled: tableMaker(t, p, mustSampling(sanitize.SchemePPSWOR, 1e-4, nil), sanitize.MethodMaxSeparation),
	}
}

// TestOpenDecisionTable: Open takes the row of the decision table that
// docs/estimator-builders.md states for each kind of source and ask (the
// first whose condition holds and whose builder does not decline), and
// under pwsd_reference the reference row of the same form. Each case names
// the row by hand, so a reordered or changed table fails here first.
func TestOpenDecisionTable(t *testing.T) {
	t.Parallel()
	src := newOpenSources(t)
	identity := G{Kind: GIdentity}
	table := func(e Estimator) Ask { return Ask{Table: &Spec{MaxFrequency: 200, G: identity, Estimator: e}} }
	chunks := func(estimatesOnly bool) Ask {
		return Ask{Chunks: &ChunkAsk{Gs: []G{identity}, Size: 64, First: 2, Count: 1, EstimatesOnly: estimatesOnly}}
	}
	rows := Ask{Rows: &RowsAsk{G: identity, From: 40, To: 42, Margin: 100, Fn: func(sanitize.Row, []RowOutcome) error { return nil }}}
	fractional := methodSource{RowSource: &sliceSource{rows: fractionalRows(260, 3, 7)}, m: sanitize.MethodDiscrete}
	for _, c := range []struct {
		name string
		src  RowSource
		ask  Ask
		want string // without pwsd_reference
	}{
		{"discrete MLE table", src.discrete(), table(MLE), "unit"},
		{"discrete biased-down table", src.discrete(), table(BiasedDown), "unit"},
		{"discrete unbiased table: no fast builder", src.discrete(), Ask{Table: &Spec{MaxFrequency: 10, G: identity, Estimator: Unbiased}}, "general-ref"},
		{"stationary Algorithm 5 table", src.grid(), table(MLE), "grid"},
		{"sampled Algorithm 5 table: not mostly stationary", src.sampled(), table(BiasedDown), "general"},
		{"source of no known method", generalSource{src.grid()}, table(MLE), "general"},
		{"rows not on unit cells: unit declines", fractional, Ask{Table: &Spec{MaxFrequency: 200, G: identity, Estimator: MLE}}, "general"},
		{"Algorithm 4 chunks", src.discrete(), chunks(false), "chunks-unit"},
		{"Algorithm 4 chunk estimates", src.discrete(), chunks(true), "chunks-unit"},
		{"Algorithm 5 chunks", src.grid(), chunks(false), "chunks-grid"},
		{"Algorithm 5 chunk estimates", src.grid(), chunks(true), "chunks-grid-estimates"},
		{"chunks of a source of no known method", generalSource{src.grid()}, chunks(false), "chunks-general"},
		{"Algorithm 4 rows", src.discrete(), rows, "rows-unit"},
		{"Algorithm 5 rows", src.grid(), rows, "rows-general"},
		{"stationary rows with the caller's tables", src.grid(), Ask{Rows: &RowsAsk{G: identity, From: 700, To: 701, Fn: rows.Rows.Fn,
			Tables: func(spec Spec) (*Table, error) { return Build(src.grid(), spec) }}}, "rows-from-tables"},
		{"rows below the stationary tables' size", src.grid(), Ask{Rows: &RowsAsk{G: identity, From: 40, To: 42, Fn: rows.Rows.Fn,
			Tables: func(spec Spec) (*Table, error) { return Build(src.grid(), spec) }}}, "rows-general"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Open(context.Background(), c.src, c.ask)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if referenceOnly {
				want = refRowOf(t, want)
			}
			if out.By != want {
				t.Errorf("built by %q, want %q", out.By, want)
			}
		})
	}
}

// refRowOf returns the reference row of the decision table's row name (the
// row itself when it is a reference).
func refRowOf(t *testing.T, name string) string {
	t.Helper()
	for _, r := range builders {
		if r.name == name {
			if r.fast {
				return r.ref
			}
			return r.name
		}
	}
	t.Fatalf("no row %q in the decision table", name)
	return ""
}

// TestDecisionTableIsWellFormed: every fast row names a reference row of
// its own form that is not fast, names are unique, and every form ends in
// a reference row that takes any source (so Open always finds a builder,
// and under pwsd_reference every form still has one).
func TestDecisionTableIsWellFormed(t *testing.T) {
	t.Parallel()
	byName := map[string]builderRow{}
	for _, r := range builders {
		if _, dup := byName[r.name]; dup {
			t.Errorf("row %q appears twice", r.name)
		}
		byName[r.name] = r
	}
	for _, r := range builders {
		if !r.fast {
			if r.ref != "" {
				t.Errorf("reference row %q names a reference of its own", r.name)
			}
			continue
		}
		ref, ok := byName[r.ref]
		if !ok || ref.fast || ref.form != r.form {
			t.Errorf("fast row %q: reference %q is not a reference row of its form", r.name, r.ref)
		}
	}
	for _, f := range []form{formTable, formChunks, formRows} {
		var last builderRow
		for _, r := range builders {
			if r.form == f {
				last = r
			}
		}
		if last.fast || !last.when(&job{}) {
			t.Errorf("form %d does not end in a reference row that takes any source (%q)", f, last.name)
		}
	}
}

// TestBuilderPairs tests every fast row of the decision table against its
// reference row as a pair, bit for bit, on sources where the fast row
// applies and does not decline: tables (bounds, estimates, every
// frequency's statistics, the tail), chunks (tokens, estimates and, where
// the fast builder keeps them, statistics) and row outcomes with their
// estimates. A fast row without a case here fails the test.
func TestBuilderPairs(t *testing.T) {
	t.Parallel()
	src := newOpenSources(t)
	gs := []G{{Kind: GIdentity}, {Kind: GCap, Param: 7}}
	table := func(n int64, e Estimator) Ask { return Ask{Table: &Spec{MaxFrequency: n, G: gs[0], Estimator: e}} }
	chunks := func(estimatesOnly bool) Ask {
		return Ask{Chunks: &ChunkAsk{Gs: gs, Size: 64, First: 2, Count: 2, EstimatesOnly: estimatesOnly}}
	}
	rows := func(from, to, margin int64) Ask {
		return Ask{Rows: &RowsAsk{G: gs[0], From: from, To: to, Margin: margin}}
	}
	cases := map[string][]struct {
		src func() RowSource
		ask Ask
	}{
		"unit": {
			{func() RowSource { return src.discrete() }, table(300, MLE)},
			{func() RowSource { return src.discrete() }, table(300, BiasedDown)},
			{func() RowSource { return piecesSource{src.discrete()} }, table(120, MLE)},
		},
		"grid": {
			{func() RowSource { return src.grid() }, table(300, MLE)},
			{func() RowSource { return src.grid() }, table(300, BiasedDown)},
		},
		"general": {
			{func() RowSource { return src.sampled() }, table(250, MLE)},
			{func() RowSource { return src.sampled() }, table(250, BiasedDown)},
			{func() RowSource { return &sliceSource{rows: fractionalRows(260, 3, 11)} }, table(200, BiasedDown)},
		},
		"chunks-grid-estimates": {{func() RowSource { return src.grid() }, chunks(true)}},
		"chunks-unit": {
			{func() RowSource { return src.discrete() }, chunks(false)},
			{func() RowSource { return src.discrete() }, chunks(true)},
		},
		"chunks-grid":    {{func() RowSource { return src.grid() }, chunks(false)}},
		"chunks-general": {{func() RowSource { return src.sampled() }, chunks(false)}},
		"rows-unit": {
			{func() RowSource { return src.discrete() }, rows(40, 44, 100)},
			{func() RowSource { return src.discrete() }, rows(90, 91, 0)}, // the margin misses: a band from row 1
		},
		"rows-general": {
			{func() RowSource { return src.grid() }, rows(40, 44, 100)},
			{func() RowSource { return src.sampled() }, rows(90, 91, 0)},
		},
	}
	byName := map[string]builderRow{}
	for _, r := range builders {
		byName[r.name] = r
	}
	for _, fast := range builders {
		if !fast.fast {
			continue
		}
		t.Run(fast.name, func(t *testing.T) {
			t.Parallel()
			cs := cases[fast.name]
			if len(cs) == 0 {
				t.Fatalf("fast row %q has no pair test case", fast.name)
			}
			ref := byName[fast.ref]
			for k, c := range cs {
				got, gotRows := runRow(t, fast, c.src(), c.ask)
				want, wantRows := runRow(t, ref, c.src(), c.ask)
				if !reflect.DeepEqual(gotRows, wantRows) {
					t.Fatalf("case %d: row outcomes differ from %s's", k, ref.name)
				}
				switch {
				case want.Table != nil:
					sameTable(t, got.Table, want.Table)
				case want.Chunks != nil:
					sameChunks(t, got.Chunks, want.Chunks)
				}
			}
		})
	}
}

// runRow builds ask with one row of the decision table, which must apply
// and not decline; for a rows ask it returns the rows and outcomes passed
// to Fn.
func runRow(t *testing.T, row builderRow, src RowSource, ask Ask) (*Opened, []string) {
	t.Helper()
	var seen []string
	if ask.Rows != nil {
		r := *ask.Rows
		r.Fn = func(row sanitize.Row, out []RowOutcome) error {
			seen = append(seen, fmt.Sprintf("%d %v %v", row.Frequency, row.Pieces, out))
			return nil
		}
		ask.Rows = &r
	}
	j := &job{ctx: context.Background(), src: src, ask: ask, method: methodOf(src)}
	if err := j.validate(); err != nil {
		t.Fatal(err)
	}
	if !row.when(j) {
		t.Fatalf("row %q does not apply to its test case", row.name)
	}
	out, err := row.build(j)
	if err != nil {
		t.Fatalf("row %q: %v", row.name, err)
	}
	if ask.Rows != nil && len(seen) != int(ask.Rows.To-ask.Rows.From+1) {
		t.Fatalf("row %q passed %d rows, want %d", row.name, len(seen), ask.Rows.To-ask.Rows.From+1)
	}
	return out, seen
}

// sameChunks fails the test unless got is want bit for bit: tokens and
// estimates, and the statistics where got keeps them (an estimates-only
// fast chunk may keep none; the reference's are then not compared).
func sameChunks(t *testing.T, got, want [][]*Chunk) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d chunk runs, want %d", len(got), len(want))
	}
	for k := range want {
		for m := range want[k] {
			g, w := got[k][m], want[k][m]
			if g.G != w.G || g.Index != w.Index || g.Size != w.Size || !slices.Equal(g.Bounds, w.Bounds) || !slices.Equal(g.A, w.A) {
				t.Fatalf("chunk %d of %s: tokens or estimates differ", w.Index, w.G)
			}
			if g.HasStats() && !slices.Equal(g.Frequencies, w.Frequencies) {
				t.Fatalf("chunk %d of %s: statistics differ", w.Index, w.G)
			}
		}
	}
}

// TestOpenRejectsBadAsks: what Open cannot answer is refused before any
// row is read, with an error saying what is wrong.
func TestOpenRejectsBadAsks(t *testing.T) {
	t.Parallel()
	g := G{Kind: GIdentity}
	spec := Spec{MaxFrequency: 10, G: g, Estimator: MLE}
	fn := func(sanitize.Row, []RowOutcome) error { return nil }
	src := &countingRows{}
	for _, c := range []struct {
		name string
		src  RowSource
		ask  Ask
	}{
		{"nothing asked", src, Ask{}},
		{"two things asked", src, Ask{Table: &spec, Rows: &RowsAsk{G: g, From: 1, To: 1, Fn: fn}}},
		{"invalid spec", src, Ask{Table: &Spec{MaxFrequency: 0, G: g, Estimator: MLE}}},
		{"nil source", nil, Ask{Table: &spec}},
		{"no chunk g", src, Ask{Chunks: &ChunkAsk{Size: 64, Count: 1}}},
		{"invalid chunk g", src, Ask{Chunks: &ChunkAsk{Gs: []G{{Kind: GPower, Param: math.NaN()}}, Size: 64, Count: 1}}},
		{"chunk size 0", src, Ask{Chunks: &ChunkAsk{Gs: []G{g}, Size: 0, Count: 1}}},
		{"no chunks", src, Ask{Chunks: &ChunkAsk{Gs: []G{g}, Size: 64, Count: 0}}},
		{"negative chunk", src, Ask{Chunks: &ChunkAsk{Gs: []G{g}, Size: 64, First: -1, Count: 1}}},
		{"chunks beyond the largest frequency", src, Ask{Chunks: &ChunkAsk{Gs: []G{g}, Size: 64, First: sanitize.MaxFrequency / 64, Count: 1}}},
		{"rows from 0", src, Ask{Rows: &RowsAsk{G: g, From: 0, To: 1, Fn: fn}}},
		{"rows to below from", src, Ask{Rows: &RowsAsk{G: g, From: 5, To: 4, Fn: fn}}},
		{"rows without a function", src, Ask{Rows: &RowsAsk{G: g, From: 1, To: 1}}},
		{"rows of an invalid g", src, Ask{Rows: &RowsAsk{G: G{Kind: "square"}, From: 1, To: 1, Fn: fn}}},
	} {
		if _, err := Open(context.Background(), c.src, c.ask); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if src.calls != 0 {
		t.Errorf("a refused ask read rows %d times", src.calls)
	}
}

// countingRows counts the calls of Rows and has no rows.
type countingRows struct{ calls int }

func (s *countingRows) Rows(int64, int64, func(sanitize.Row) bool) error {
	s.calls++
	return errors.New("no rows")
}

// TestOpenStopsWhenCancelled: whatever row of the decision table builds
// the answer, a cancelled context ends Open with the context's error (each
// ask reads past row ctxEvery = 1024, where every builder checks), and Fn
// is never called. Under pwsd_reference the reference rows are checked.
func TestOpenStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	src := newOpenSources(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	identity := G{Kind: GIdentity}
	called := false
	fn := func(sanitize.Row, []RowOutcome) error { called = true; return nil }
	for _, c := range []struct {
		name string
		src  RowSource
		ask  Ask
	}{
		{"unit table", src.discrete(), Ask{Table: &Spec{MaxFrequency: 1500, G: identity, Estimator: MLE}}},
		{"grid table", src.grid(), Ask{Table: &Spec{MaxFrequency: 1500, G: identity, Estimator: BiasedDown}}},
		{"general table", generalSource{src.grid()}, Ask{Table: &Spec{MaxFrequency: 1500, G: identity, Estimator: MLE}}},
		{"unit chunks", src.discrete(), Ask{Chunks: &ChunkAsk{Gs: []G{identity}, Size: 64, First: 15, Count: 2}}},
		{"grid chunks", src.grid(), Ask{Chunks: &ChunkAsk{Gs: []G{identity}, Size: 64, First: 15, Count: 2}}},
		{"grid chunk estimates", src.grid(), Ask{Chunks: &ChunkAsk{Gs: []G{identity}, Size: 64, First: 15, Count: 2, EstimatesOnly: true}}},
		{"general chunks", generalSource{src.grid()}, Ask{Chunks: &ChunkAsk{Gs: []G{identity}, Size: 64, First: 15, Count: 2}}},
		{"unit rows", src.discrete(), Ask{Rows: &RowsAsk{G: identity, From: 1100, To: 1101, Margin: 100, Fn: fn}}},
		{"general rows", src.grid(), Ask{Rows: &RowsAsk{G: identity, From: 1100, To: 1101, Margin: 100, Fn: fn}}},
	} {
		if _, err := Open(ctx, c.src, c.ask); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", c.name, err)
		}
	}
	if called {
		t.Error("a cancelled rows ask called Fn")
	}
}

// TestRowsFromTablesMatchBand: where a sanitizer table's rows are
// stationary below the rows asked for, Open answers a rows ask that gives
// Tables from the two tables of size TableSize and their stationary tails
// (rows-from-tables), asking Tables for exactly those two; the answer
// agrees with the band of rows computed from row 1 (rows-general-ref, an
// independent route: the tails continue the tables by their closed forms,
// so agreement is to 1e-9 relative, not bit for bit). Where the rows are
// not stationary below To, the row declines and the band answers.
func TestRowsFromTablesMatchBand(t *testing.T) {
	t.Parallel()
	src := newOpenSources(t)
	g := G{Kind: GIdentity}
	for _, c := range []struct {
		name     string
		tab      func() *sanitize.Table
		from, to int64
		want     string
	}{
		{"Algorithm 4, stationary", src.discrete, 600, 604, "rows-from-tables"},
		{"Algorithm 5, stationary", src.grid, 700, 702, "rows-from-tables"},
		{"Algorithm 5, sampled: not stationary below to", src.sampled, 300, 301, "rows-general"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := c.tab()
			var asked []Spec
			tables := func(spec Spec) (*Table, error) {
				asked = append(asked, spec)
				return BuildContext(context.Background(), tab, spec)
			}
			var got []string
			var gotOut [][]RowOutcome
			ask := Ask{Rows: &RowsAsk{G: g, From: c.from, To: c.to, Margin: 100, Tables: tables, Fn: func(r sanitize.Row, out []RowOutcome) error {
				got = append(got, fmt.Sprint(r.Frequency, r.Pi, r.Pieces))
				gotOut = append(gotOut, slices.Clone(out))
				return nil
			}}}
			opened, err := Open(context.Background(), tab, ask)
			if err != nil {
				t.Fatal(err)
			}
			if want := refRowOf(t, c.want); opened.By != c.want && (!referenceOnly || opened.By != want) {
				t.Fatalf("built by %q, want %q", opened.By, c.want)
			}
			if c.want != "rows-from-tables" {
				if len(asked) != 0 {
					t.Fatalf("a declined rows-from-tables asked for tables %v", asked)
				}
				return
			}
			n, err := TableSize(context.Background(), tab, float64(c.to))
			if err != nil || n > c.to {
				t.Fatalf("TableSize %d (%v): the case is not stationary below %d", n, err, c.to)
			}
			if want := []Spec{{MaxFrequency: n, G: g, Estimator: MLE}, {MaxFrequency: n, G: g, Estimator: BiasedDown}}; !reflect.DeepEqual(asked, want) {
				t.Fatalf("asked for tables %v, want %v", asked, want)
			}
			var want []string
			var wantOut [][]RowOutcome
			bandAsk := *ask.Rows
			bandAsk.Tables = nil
			bandAsk.Fn = func(r sanitize.Row, out []RowOutcome) error {
				want = append(want, fmt.Sprint(r.Frequency, r.Pi, r.Pieces))
				wantOut = append(wantOut, slices.Clone(out))
				return nil
			}
			band := &job{ctx: context.Background(), src: tab, ask: Ask{Rows: &bandAsk}, method: tab.Method()}
			err = rowEstimates(band, func(bandStart int64) ([]sanitize.Row, *Table, *Table, error) {
				return rowBand(context.Background(), tab, newEstimatesOnlyRef, g, c.from, c.to, bandStart, false)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows differ:\n%v\nwant\n%v", got, want)
			}
			for k := range wantOut {
				if len(gotOut[k]) != len(wantOut[k]) {
					t.Fatalf("row %d: %d outcomes, the band has %d", c.from+int64(k), len(gotOut[k]), len(wantOut[k]))
				}
				for x, w := range wantOut[k] {
					o := gotOut[k][x]
					for _, v := range [][2]float64{{o.Lo, w.Lo}, {o.Hi, w.Hi}, {o.P, w.P}, {o.MLE, w.MLE}, {o.BiasedDown, w.BiasedDown}} {
						if !relClose(v[0], v[1], 1e-9) {
							t.Fatalf("row %d, outcome %d: %+v, the band has %+v", c.from+int64(k), x, o, w)
						}
					}
				}
			}
		})
	}
}
