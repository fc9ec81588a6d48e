package estimate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// piecesSource is an Algorithm 4 table seen through Rows only (no dense
// UnitRows): buildUnit then parses pieces instead of reading dense rows.
type piecesSource struct{ t *sanitize.Table }

func (s piecesSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return s.t.Rows(from, to, fn)
}
func (s piecesSource) Method() sanitize.Method       { return s.t.Method() }
func (s piecesSource) StationaryFrom() (int64, bool) { return s.t.StationaryFrom() }

// TestBuildUnitDenseEqualsPieces: the unit-cell builder reading dense rows
// (sanitize.Table.UnitRows, with the dense shift tracking) and reading
// pieces (Rows) build the same table bit for bit: bounds, estimates, every
// frequency's statistics and the stationary tail. Both are checked against
// the general builder by TestBuildUnitMatchesGeneral for the dense path;
// this covers the pieces path, which other row sources take.
func TestBuildUnitDenseEqualsPieces(t *testing.T) {
	for _, pc := range []struct {
		eps, delta float64
		scheme     sanitize.Scheme
		tau        float64
		g          G
		n          int64
	}{
		{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, G{Kind: GIdentity}, 3000},
		{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5, G{Kind: GIdentity}, 1500},
		{1, 1e-4, sanitize.SchemeNone, 0, mustG("cap:50"), 600},
		{0.7, 1e-5, sanitize.SchemePriority, 0.01, mustG("count"), 800},
	} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s,tau=%g,g=%s,n=%d/%s", pc.eps, pc.delta, pc.scheme, pc.tau, pc.g, pc.n, est), func(t *testing.T) {
				smp, err := sanitize.NewSampling(pc.scheme, pc.tau, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				mk := tableMaker(t, mustPrivacy(pc.eps, pc.delta), smp, sanitize.MethodDiscrete)
				spec := Spec{MaxFrequency: pc.n, G: pc.g, Estimator: est}
				dense, err := buildUnit(context.Background(), mk(), spec)
				if err != nil {
					t.Fatal(err)
				}
				pieces, err := buildUnit(context.Background(), piecesSource{mk()}, spec)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dense.Bounds, pieces.Bounds) || !slices.Equal(dense.A, pieces.A) {
					t.Fatal("tokens or estimates differ")
				}
				if !slices.Equal(dense.Frequencies, pieces.Frequencies) {
					t.Fatal("statistics differ")
				}
				if (dense.Tail == nil) != (pieces.Tail == nil) || (dense.Tail != nil && fmt.Sprint(*dense.Tail) != fmt.Sprint(*pieces.Tail)) {
					t.Fatalf("tail %+v, pieces path %+v", dense.Tail, pieces.Tail)
				}
				if pc.scheme == sanitize.SchemeNone && dense.Tail == nil {
					t.Fatal("a stationary case must exercise the tail")
				}
			})
		}
	}
}

// TestUnitMLEShortcutOnShiftedCopies: on stationary rows (q = 1, every row
// the previous one shifted up by a cell, bit for bit) the unit-cell MLE
// takes each token's argmax from the previous token's without scanning the
// rows; the estimates and statistics are bit for bit those of the full
// scan, and the shortcut is taken on most tokens (it cannot pass by never
// being used). Rows that are not copies (ppswor with q_i < 1) never take it.
func TestUnitMLEShortcutOnShiftedCopies(t *testing.T) {
	for _, c := range []struct {
		name     string
		scheme   sanitize.Scheme
		tau      float64
		n        int64
		wantMost bool
	}{
		{"none", sanitize.SchemeNone, 0, 3000, true},
		{"ppswor q<1", sanitize.SchemePPSWOR, 2e-5, 1500, false},
		{"ppswor reaching q=1", sanitize.SchemePPSWOR, 0.05, 3000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			smp, err := sanitize.NewSampling(c.scheme, c.tau, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			build := func(scan bool) *unitBD {
				tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), smp, sanitize.MethodDiscrete)
				if err != nil {
					t.Fatal(err)
				}
				u := newUnitBD(G{Kind: GIdentity}, c.n, 0)
				u.est, u.stats, u.scanAlways = MLE, make([]FrequencyStats, c.n), scan
				err = tab.UnitRows(1, c.n+maxLookahead, func(i int64, pi, lo float64, m []float64) bool {
					if err = u.addDense(i, pi, lo, m); err != nil {
						return false
					}
					return !u.done
				})
				if err != nil || !u.done {
					t.Fatalf("build: %v (done %v)", err, u.done)
				}
				return u
			}
			fast, scan := build(false), build(true)
			if !slices.Equal(fast.a, scan.a) || !slices.Equal(fast.stats, scan.stats) {
				t.Fatal("the shortcut changed an estimate or a statistic")
			}
			if scan.shortcuts != 0 {
				t.Fatal("the reference took the shortcut")
			}
			if most := fast.shortcuts > int(c.n)/2; most != c.wantMost || (!c.wantMost && fast.shortcuts != 0) {
				t.Errorf("shortcut taken on %d of %d tokens", fast.shortcuts, c.n)
			}
		})
	}
}

// TestTrackShiftDenseReportsCopies: the row goroutine's tracker, which
// flags the rows the unit-cell MLE may take its shortcut on, says "copy"
// exactly for the previous row shifted up one cell bit for bit.
func TestTrackShiftDenseReportsCopies(t *testing.T) {
	m := []float64{0.1, 0.2, 0.3}
	for _, c := range []struct {
		name string
		pi   float64
		lo   int64
		m    []float64
		want bool
	}{
		{"copy", 0.6, 11, m, true},
		{"same cells", 0.6, 10, m, false},
		{"pi differs in the last bit", math.Nextafter(0.6, 1), 11, m, false},
		{"a mass differs", 0.6, 11, []float64{0.1, 0.2, math.Nextafter(0.3, 1)}, false},
		{"wider", 0.6, 11, []float64{0.1, 0.2, 0.3, 0}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &shiftTracker{}
			if tr.trackShiftDense(13, 0.6, 10, m) {
				t.Fatal("the first row cannot be a copy")
			}
			if got := tr.trackShiftDense(14, c.pi, c.lo, c.m); got != c.want {
				t.Errorf("copied = %v, want %v", got, c.want)
			}
		})
	}
}

// runsSource gives dense unit rows of width w below their frequency whose
// masses follow one of two patterns, switching every period rows: runs of
// shifted copies broken by rows that differ (a stress case for rows that
// share buffers; no sanitizer table breaks a run once it has begun).
type runsSource struct{ w, period int64 }

func (s runsSource) UnitRows(from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	m := make([]float64, s.w)
	for i := from; i <= to; i++ {
		lo := max(i-s.w, 0)
		m = m[:i-lo]
		alt := (i/s.period)%2 == 1
		pi := 0.0
		for k := range m {
			v := float64(k+1) / float64(s.w*s.w)
			if alt {
				v = float64(len(m)-k) / float64(3*s.w*s.w)
			}
			if k == len(m)-1 {
				v += 0.01 // the top cell carries mass
			}
			m[k] = v
			pi += v
		}
		if !fn(i, pi, float64(lo), m) {
			return nil
		}
	}
	return nil
}

// TestUnitRowsShareCopiedBuffers: on the row goroutine, a row the shift
// tracker reports as a copy of the row before it shares that row's masses
// and suffix sums instead of filling its own; the estimates and statistics
// are bit for bit those of rows that each hold their own (the pieces path),
// and most stationary rows do share.
func TestUnitRowsShareCopiedBuffers(t *testing.T) {
	const n = 8000
	smp, err := sanitize.NewSampling(sanitize.SchemeNone, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := func() unitSource {
		tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), smp, sanitize.MethodDiscrete)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	for _, c := range []struct {
		name   string
		src    func() unitSource
		shares int // at least this many rows must share
	}{
		{"stationary table", table, n / 2},
		{"runs broken every 37 rows", func() unitSource { return runsSource{w: 40, period: 37} }, n / 2},
		// Long runs: a row that lent its buffers comes back from the
		// row goroutine's pool (batches of pipeBatchRows) while rows of
		// its run still read them.
		{"runs broken every 2500 rows", func() unitSource { return runsSource{w: 40, period: 2500} }, n / 2},
	} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			t.Run(c.name+"/"+string(est), func(t *testing.T) {
				testSharedBuffers(t, c.src, est, n, c.shares)
			})
		}
	}
}

// testSharedBuffers builds a unit-cell table of src with the row goroutine
// (rows may share buffers) and row by row on the caller's goroutine with
// addDense (every row fills its own), and compares them bit for bit.
func testSharedBuffers(t *testing.T, src func() unitSource, est Estimator, n int64, minShared int) {
	t.Helper()
	{
		{
			u := newUnitBD(G{Kind: GIdentity}, n, 0)
			u.est, u.stats = est, make([]FrequencyStats, n)
			tr := &shiftTracker{}
			pre := func(it *unitItem, m []float64) error {
				it.copied = tr.trackShiftDense(it.i, it.pi, int64(it.lo), m)
				return nil
			}
			shared := 0
			var lerr error
			fn := func(it *unitItem) bool {
				if it.err != nil {
					lerr = it.err
					return false
				}
				if it.r.aliased {
					shared++
				}
				it.r.copied = it.copied
				if lerr = u.link(it.r); lerr != nil {
					return false
				}
				return !u.done
			}
			if err := u.pipeDense(context.Background(), src(), 1, n+maxLookahead, math.MaxInt64, pre, fn); err != nil || lerr != nil || !u.done {
				t.Fatalf("dense build: %v, %v (done %v)", err, lerr, u.done)
			}
			ref := newUnitBD(G{Kind: GIdentity}, n, 0)
			ref.est, ref.stats = est, make([]FrequencyStats, n)
			err := src().UnitRows(1, n+maxLookahead, func(i int64, pi, lo float64, m []float64) bool {
				if lerr = ref.addDense(i, pi, lo, m); lerr != nil {
					return false
				}
				return !ref.done
			})
			if err != nil || lerr != nil || !ref.done {
				t.Fatalf("reference build: %v, %v", err, lerr)
			}
			if !slices.Equal(u.a, ref.a) || !slices.Equal(u.stats, ref.stats) {
				t.Fatal("shared buffers changed an estimate or a statistic")
			}
			if shared < minShared {
				t.Errorf("%d of %d rows shared their predecessor's buffers", shared, n)
			}
		}
	}
}
