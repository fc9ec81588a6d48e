package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// sameTable fails the test unless got is want bit for bit: bounds,
// estimates, every frequency's statistics and the stationary tail.
func sameTable(t *testing.T, got, want *Table) {
	t.Helper()
	if !slices.Equal(got.Bounds, want.Bounds) {
		t.Fatalf("tokens differ: %d/%d tokens", len(got.A), len(want.A))
	}
	if !slices.Equal(got.A, want.A) {
		for j := range want.A {
			if got.A[j] != want.A[j] {
				t.Fatalf("token %d (%g, %g]: estimate %v, want %v", j+1, want.Bounds[j], want.Bounds[j+1], got.A[j], want.A[j])
			}
		}
	}
	for i := range want.Frequencies {
		if got.Frequencies[i] != want.Frequencies[i] {
			t.Fatalf("frequency %d: %+v, want %+v", i+1, got.Frequencies[i], want.Frequencies[i])
		}
	}
	if (got.Tail == nil) != (want.Tail == nil) || (got.Tail != nil && fmt.Sprint(*got.Tail) != fmt.Sprint(*want.Tail)) {
		t.Fatalf("tail %+v, want %+v", got.Tail, want.Tail)
	}
}

// TestBuildGridMatchesRef: for Algorithm 5 tables the 2^-20 grid builder
// (buildGrid) gives exactly the reference builder's table (buildGeneralRef: bounds,
// estimates, every frequency's statistics, stationary tail), on a grid of
// parameters, functions g and both estimators it serves, with stationary
// cases (q = 1 from some row on: copies share their masses) and ones that
// never become stationary. It must take the dense path (no fallback).
func TestBuildGridMatchesRef(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	cases := append(slices.Clone(builderCases),
		builderCase{0.5, 1e-6, sanitize.SchemePPSWOR, 0.01, 1, G{Kind: GIdentity}, 6000},
		builderCase{0.1, 1e-6, sanitize.SchemeNone, 0, 1, G{Kind: GIdentity}, 700},
		// Rows far wider than the table: their pieces above n+1 fold.
		builderCase{0.02, 1e-6, sanitize.SchemeNone, 0, 1, G{Kind: GIdentity}, 5},
		builderCase{0.05, 1e-5, sanitize.SchemePPSWOR, 0.01, 1, mustG("cap:10"), 30},
	)
	runBuilderCases(t, cases, sanitize.MethodMaxSeparation, func(t *testing.T, pc builderCase, mk func() *sanitize.Table, spec Spec, want *Table) {
		tab := mk()
		// A small slack makes the producer drop old tokens often.
		got, p, loop, err := buildGridProducer(context.Background(), tab, tab, spec, 7)
		if err != nil {
			t.Fatalf("dense path: %v", err)
		}
		sameTable(t, got, want)
		if pc.n >= 1000 && p.boff == 0 {
			t.Fatal("the producer never dropped old tokens")
		}
		if pc.scheme != sanitize.SchemeNone || pc.n < 100 {
			return
		}
		if want.Tail == nil || p.shared < int(pc.n)/3 {
			t.Fatalf("a stationary case must exercise the tail and shared masses (%d rows shared)", p.shared)
		}
		// Wide rows (small eps) reach the rows that are all copies late
		// in a table of this size.
		most := len(got.A) / 2
		if pc.eps < 0.5 {
			most = 50
		}
		if spec.Estimator != MLE || referenceOnly { // pwsd_reference: denseMLERef, no shortcut
			return
		}
		if mle, ok := loop.(*denseMLE); !ok {
			t.Fatalf("the MLE table was built by %T", loop)
		} else if mle.shortcuts < most {
			t.Fatalf("the MLE shortcut took %d of %d tokens, want %d", mle.shortcuts, len(got.A), most)
		}
	})
}

// gridRowsSource serves hand-made rows as an Algorithm 5 table would:
// Rows, Method and PieceRows, which flags a row as copied when it is the
// row before it shifted up by one, bit for bit.
type gridRowsSource struct{ rows []sanitize.Row }

func (s gridRowsSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return (&sliceSource{rows: s.rows}).Rows(from, to, fn)
}
func (s gridRowsSource) Method() sanitize.Method { return sanitize.MethodMaxSeparation }
func (s gridRowsSource) PieceRows(from, to int64, fn func(i int64, pi float64, x, m []float64, d int64, copied bool) bool) error {
	var prev sanitize.Row
	return s.Rows(from, to, func(r sanitize.Row) bool {
		copied := r.Frequency > from && r.Pi == prev.Pi && len(r.Pieces) == len(prev.Pieces)
		for k := 0; copied && k < len(r.Pieces); k++ {
			p, q := r.Pieces[k], prev.Pieces[k]
			copied = p.P == q.P && p.Lo == q.Lo+1 && p.Hi == q.Hi+1
		}
		prev = r.Clone()
		var x, m []float64
		for k, p := range r.Pieces {
			if k == 0 {
				x = append(x, p.Lo)
			} else if p.Lo != x[len(x)-1] {
				m = append(m, 0) // a gap
				x = append(x, p.Lo)
			}
			m = append(m, p.P)
			x = append(x, p.Hi)
		}
		if len(x) == 0 {
			x = []float64{0}
		}
		return fn(r.Frequency, r.Pi, x, m, 0, copied)
	})
}

// snapRows moves every break point of rows to the grid 2^-20 (rows keep
// their masses; the pieces stay sorted and non-empty for these rows).
func snapRows(rows []sanitize.Row) []sanitize.Row {
	snap := func(x float64) float64 { return math.Round(x*sanitize.GridScale) / sanitize.GridScale }
	for _, r := range rows {
		for k := range r.Pieces {
			r.Pieces[k].Lo, r.Pieces[k].Hi = snap(r.Pieces[k].Lo), snap(r.Pieces[k].Hi)
		}
	}
	return rows
}

// TestBuildGridHandMadeRows: rows with row-specific break points and gaps
// between pieces, on the grid: the dense builder equals the general one.
// Off the grid it declines (errNotGrid) and Build falls back to the
// general builder, so Build's table is still the general builder's.
func TestBuildGridHandMadeRows(t *testing.T) {
	t.Parallel()
	for _, est := range []Estimator{MLE, BiasedDown} {
		t.Run(string(est), func(t *testing.T) {
			spec := Spec{MaxFrequency: 300, G: G{Kind: GIdentity}, Estimator: est}
			rows := snapRows(fractionalRows(400, 12, 5))
			want, err := Build(&sliceSource{rows: rows}, spec)
			if err != nil {
				t.Fatal(err)
			}
			src := gridRowsSource{rows}
			got, err := buildGrid(context.Background(), src, src, spec)
			if err != nil {
				t.Fatalf("dense path: %v", err)
			}
			sameTable(t, got, want)

			off := fractionalRows(400, 12, 5)
			if _, err := buildGrid(context.Background(), gridRowsSource{off}, gridRowsSource{off}, spec); !errors.Is(err, errNotGrid) {
				t.Fatalf("off-grid rows: %v, want errNotGrid", err)
			}
			want, err = Build(&sliceSource{rows: off}, spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err = Build(gridRowsSource{off}, spec)
			if err != nil {
				t.Fatal(err)
			}
			sameTable(t, got, want)
		})
	}
}

// TestBuildGridNearTolerance: two break points one grid step apart where
// the general builder's tolerance (1e-12 relative) exceeds the grid step
// (positions above 2^20/1e12, about 953674) would be one token for it and
// two for exact comparisons: the dense builder must decline.
func TestBuildGridNearTolerance(t *testing.T) {
	t.Parallel()
	p := &gridProducer{n: 2e6, nf: 2e6, bounds: []float64{0}, pending: []float64{1e6, 1e6 + 1.0/sanitize.GridScale}, lastLo: 1.5e6}
	if err := p.advance(); !errors.Is(err, errNotGrid) {
		t.Fatalf("advance: %v, want errNotGrid", err)
	}
	p = &gridProducer{n: 2e6, nf: 2e6, bounds: []float64{0}, pending: []float64{1e5, 1e5 + 1.0/sanitize.GridScale}, lastLo: 1.5e6}
	if err := p.advance(); err != nil || p.lastTok() != 2 {
		t.Fatalf("advance below the limit: %v, %d tokens", err, p.lastTok())
	}
}

// rowOf is row i with pieces ps, its reporting probability their sum.
func rowOf(i int, ps []sanitize.Piece) sanitize.Row {
	pi := 0.0
	for _, p := range ps {
		pi += p.P
	}
	return sanitize.Row{Frequency: int64(i), Pi: pi, Pieces: ps}
}

// stationaryRows is a hand-made table whose rows from s on are one
// pattern shifted (pieces (i-3, i-2], (i-2, i-1.5], (i-1.5, i]) and whose
// row s-1 has a break point inside the supports of rows s and s+1 only, so
// that row s+1 spans as many tokens as row s but not the same tokens
// shifted by one: it must not share row s's masses.
func stationaryRows(n, s int) []sanitize.Row {
	var rows []sanitize.Row
	for i := 1; i <= n; i++ {
		fi := float64(i)
		var ps []sanitize.Piece
		if i >= s {
			ps = []sanitize.Piece{{Lo: fi - 3, Hi: fi - 2, P: 0.1}, {Lo: fi - 2, Hi: fi - 1.5, P: 0.2}, {Lo: fi - 1.5, Hi: fi, P: 0.3}}
		} else {
			lo := max(0, fi-3)
			c := fi - 0.5
			if i == s-1 {
				c = fi - 0.25 // in the supports of rows s and s+1 only
			}
			ps = []sanitize.Piece{{Lo: lo, Hi: fi - 1, P: 0.2}, {Lo: fi - 1, Hi: c, P: 0.2}, {Lo: c, Hi: fi, P: 0.2}}
			if lo == fi-1 {
				ps = ps[1:]
			}
		}
		rows = append(rows, rowOf(i, ps))
	}
	return rows
}

// gapRows is a hand-made table whose rows below s have whole-number
// break points only and whose rows from s on are one pattern shifted
// ((i-3, i-2.5], (i-2.5, i-0.5], (i-0.5, i]): the break point i-2.5 of
// row s+1 is new although i-0.5 repeats two rows later, so a copy must
// add the points whose next repeat (kmin) lies beyond its shift.
func gapRows(n, s int) []sanitize.Row {
	var rows []sanitize.Row
	for i := 1; i <= n; i++ {
		fi := float64(i)
		ps := []sanitize.Piece{{Lo: fi - 3, Hi: fi - 2.5, P: 0.1}, {Lo: fi - 2.5, Hi: fi - 0.5, P: 0.2}, {Lo: fi - 0.5, Hi: fi, P: 0.3}}
		if i < s {
			ps = []sanitize.Piece{{Lo: max(0, fi-3), Hi: fi - 1, P: 0.3}, {Lo: fi - 1, Hi: fi, P: 0.3}}
			if i == 1 {
				ps = ps[1:]
			}
		}
		rows = append(rows, rowOf(i, ps))
	}
	return rows
}

// TestBuildGridCopiesCheckTokens: copies share masses only where the
// tokens repeat (stationaryRows) and add the break points that are new
// to them (gapRows); the table is the general builder's, with the rows
// computed on a second goroutine or in line.
func TestBuildGridCopiesCheckTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		rows []sanitize.Row
	}{{"stationaryRows", stationaryRows(80, 10)}, {"gapRows", gapRows(80, 10)}} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			for _, inline := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/inline=%v", c.name, est, inline), func(t *testing.T) {
					t.Parallel()
					rows := c.rows
					spec := Spec{MaxFrequency: 60, G: G{Kind: GIdentity}, Estimator: est}
					want, err := Build(&sliceSource{rows: rows}, spec)
					if err != nil {
						t.Fatal(err)
					}
					src := gridRowsSource{rows}
					got, p, _, err := buildGridProducer(rowsMode(context.Background(), inline), src, src, spec, 3)
					if err != nil {
						t.Fatalf("dense path: %v", err)
					}
					sameTable(t, got, want)
					if p.shared < 40 {
						t.Fatalf("%d rows shared masses, want most copies to", p.shared)
					}
				})
			}
		}
	}
}

// countingPieces counts the rows a piece source delivers.
type countingPieces struct {
	*sanitize.Table
	rows int64
}

func (c *countingPieces) PieceRows(from, to int64, fn func(i int64, pi float64, x, m []float64, d int64, copied bool) bool) error {
	return c.Table.PieceRows(from, to, func(i int64, pi float64, x, m []float64, d int64, copied bool) bool {
		c.rows++
		return fn(i, pi, x, m, d, copied)
	})
}

// rowsMode returns ctx with the rows read in line (withInlineRows) or on a
// second goroutine (withPipelinedRows).
func rowsMode(ctx context.Context, inline bool) context.Context {
	if inline {
		return withInlineRows(ctx)
	}
	return withPipelinedRows(ctx)
}

// TestBuildGridStopsWhenCancelled: with a cancelled context the dense
// Algorithm 5 builder reads at most ctxEvery rows before returning the
// context's error, with one core or two.
func TestBuildGridStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	if referenceOnly {
		t.Skip("pwsd_reference: Build takes no dense path")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			t.Parallel()
			tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), mustSampling(sanitize.SchemePPSWOR, 0.01, nil), sanitize.MethodMaxSeparation)
			if err != nil {
				t.Fatal(err)
			}
			src := &countingPieces{Table: tab}
			_, err = BuildContext(rowsMode(ctx, inline), src, Spec{MaxFrequency: 1e6, G: G{Kind: GIdentity}, Estimator: BiasedDown})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if src.rows == 0 || src.rows > ctxEvery {
				t.Fatalf("read %d rows after cancellation, want 1 to %d (the dense path)", src.rows, ctxEvery)
			}
		})
	}
}

// TestMostlyStationary: Build takes the dense Algorithm 5 builder when q
// is constant from n/2 on at the latest (most rows can be copies), and the
// general builder for rows that never settle within the table.
func TestMostlyStationary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scheme sanitize.Scheme
		tau    float64
		n      int64
		want   bool
	}{
		{sanitize.SchemeNone, 0, 10, true},
		{sanitize.SchemePPSWOR, 0.01, 1e6, true},
		{sanitize.SchemePPSWOR, 0.01, 1000, false},
		{sanitize.SchemePPSWOR, 1e-7, 1e6, false},
		{sanitize.SchemePriority, 0.002, 2000, true},
	} {
		tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), mustSampling(c.scheme, c.tau, nil), sanitize.MethodMaxSeparation)
		if err != nil {
			t.Fatal(err)
		}
		if got := mostlyStationary(tab, c.n); got != c.want {
			from, ok := tab.ConstantQFrom()
			t.Errorf("%s tau %g n %d: %v, want %v (q constant from %d, %v)", c.scheme, c.tau, c.n, got, c.want, from, ok)
		}
	}
	if !mostlyStationary(&sliceSource{}, 10) {
		t.Error("a source that cannot tell must take the dense path (it falls back when it must)")
	}
}
