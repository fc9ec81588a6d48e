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
				mk := func() *sanitize.Table {
					tab, err := sanitize.NewTable(mustPrivacy(pc.eps, pc.delta), smp, sanitize.MethodDiscrete)
					if err != nil {
						t.Fatal(err)
					}
					return tab
				}
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
			tr := &builder{}
			if tr.trackShiftDense(13, 0.6, 10, m) {
				t.Fatal("the first row cannot be a copy")
			}
			if got := tr.trackShiftDense(14, c.pi, c.lo, c.m); got != c.want {
				t.Errorf("copied = %v, want %v", got, c.want)
			}
		})
	}
}
