package estimate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// testTables are small row tables of both shapes: Algorithm 4 tables (the
// closed form, and dense Algorithm 4 with sampling) and a hand-made table
// with fractional, row-specific break points and gaps (Algorithm 5 shape).
type testTable struct {
	name string
	rows []sanitize.Row // rows 1..len, enough beyond n for every token <= n
	n    int64
	q    func(int64) float64 // sampling of a PWS (DP) table; nil for the hand-made ones
}

func testTables() []testTable {
	return []testTable{
		{"lemma52 eps=0.7 L=3", rowsOf(newLemma52(0.7, 3), 80), 60, qNone},
		{"lemma52 eps=0.3 L=5", rowsOf(newLemma52(0.3, 5), 90), 60, qNone},
		{"alg4 ppswor tau=0.05", alg4Rows(0.5, 1e-3, ppswor(0.05), 140), 100, ppswor(0.05)},
		{"alg4 priority tau=0.02", alg4Rows(0.8, 1e-2, priority(0.02), 140), 100, priority(0.02)},
		{"alg4 none", alg4Rows(1.0, 1e-4, qNone, 120), 90, qNone},
		{"fractional w=4", fractionalRows(90, 4, 1), 70, nil},
		{"fractional w=9", fractionalRows(90, 9, 2), 60, nil},
	}
}

var testGs = []string{"identity", "count", "power:2", "power:0.5", "cap:7"}

// buildTest builds the table of tt for g and est. The unbiased estimator
// becomes numerically unstable within a few dozen frequencies on DP tables
// (its estimates grow about like (e^{L eps})^i with alternating signs); then
// the table is rebuilt up to the last stable frequency, and the returned n is
// the one used.
func buildTest(t *testing.T, tt testTable, g G, est Estimator) (*Table, int64) {
	t.Helper()
	n := tt.n
	tab, err := Build(&sliceSource{rows: tt.rows}, Spec{MaxFrequency: n, G: g, Estimator: est})
	var ue *UnstableError
	if est == Unbiased && errors.As(err, &ue) {
		if ue.Frequency < 2 || ue.Frequency > n {
			t.Fatalf("%s %s: unstable frequency %d outside [2, %d]", tt.name, g, ue.Frequency, n)
		}
		n = ue.Frequency - 1
		tab, err = Build(&sliceSource{rows: tt.rows}, Spec{MaxFrequency: n, G: g, Estimator: est})
	}
	if err != nil {
		t.Fatalf("%s %s %s: %v", tt.name, g, est, err)
	}
	return tab, n
}

// TestLemma52IsAlgorithm4 checks the test oracle itself: the closed form of
// Lemma 5.2 equals a direct implementation of Algorithm 4 for q = 1 and
// integral L, and every row sums to pi_i of Algorithm 3.
func TestLemma52IsAlgorithm4(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		eps float64
		L   int64
	}{{0.7, 3}, {0.3, 5}, {1.5, 2}} {
		t.Run(fmt.Sprintf("eps=%g,L=%d", c.eps, c.L), func(t *testing.T) {
			cf := newLemma52(c.eps, c.L)
			dense := alg4Rows(c.eps, cf.delta, qNone, 40)
			for i, d := range dense {
				// Algorithm 4 in floating point leaves rounding crumbs (~1e-18).
				d.Pieces = slices.DeleteFunc(d.Pieces, func(p sanitize.Piece) bool { return p.P < 1e-15 })
				r := cf.row(int64(i + 1))
				if len(r.Pieces) != len(d.Pieces) || !relClose(r.Pi, d.Pi, 1e-12) {
					t.Fatalf("eps=%g L=%d row %d: closed form %v, algorithm 4 %v", c.eps, c.L, i+1, r, d)
				}
				for k := range r.Pieces {
					if r.Pieces[k].Lo != d.Pieces[k].Lo || !relClose(r.Pieces[k].P, d.Pieces[k].P, 1e-12) {
						t.Fatalf("eps=%g L=%d row %d piece %d: %v vs %v", c.eps, c.L, i+1, k, r.Pieces[k], d.Pieces[k])
					}
				}
			}
		})
	}
}

// TestBuildMatchesBruteForce: the streaming O(nL) builder reproduces the
// literal formulas (eq. 11 argmax over all rows, eq. 41 with full prefix
// sums, the triangular solve, Section 7.1 statistics) on every test table,
// g and estimator. The source overwrites row pieces after each callback, so
// this also proves Build does not retain them.
func TestBuildMatchesBruteForce(t *testing.T) {
	t.Parallel()
	for _, tt := range testTables() {
		t.Run(tt.name, func(t *testing.T) {
			br := newBrute(tt.rows, tt.n)
			for _, gs := range testGs {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown, Unbiased} {
					tab, n := buildTest(t, tt, g, est)
					br := br
					if n != tt.n {
						br = newBrute(tt.rows, n)
					}
					want := br.estimates(g, est)
					if len(tab.A) != len(want) {
						t.Fatalf("%s %s %s: %d tokens, brute force %d", tt.name, gs, est, len(tab.A), len(want))
					}
					for j := range want {
						if tab.Bounds[j+1] != br.bounds[j+1] {
							t.Fatalf("%s: token %d bound %g, want %g", tt.name, j+1, tab.Bounds[j+1], br.bounds[j+1])
						}
						if !relClose(tab.A[j], want[j], 1e-9) {
							t.Fatalf("%s %s %s: a_%d = %.15g, brute force %.15g", tt.name, gs, est, j+1, tab.A[j], want[j])
						}
					}
					for i := int64(1); i <= n; i++ {
						got, w := tab.Frequencies[i-1], br.stats(g, want, i)
						scale := math.Max(w.MSE, w.G*w.G)
						if got.Frequency != i || !relClose(got.Expected, w.Expected, 1e-9) ||
							math.Abs(got.MSE-w.MSE) > 1e-9*scale || math.Abs(got.Variance-w.Variance) > 1e-8*scale {
							t.Fatalf("%s %s %s: frequency %d stats %+v, brute force %+v", tt.name, gs, est, i, got, w)
						}
					}
				}
			}
		})
	}
}

// TestBiasedDownGuarantees: Lemma E.1 — E_i <= g(i) for every i (never
// over-estimates) and a_j >= 0 on every table and g. Monotonicity: on PWS
// tables a_j is non-decreasing whenever g(i)/q_i is non-decreasing in i
// (every g when q = 1; identity and power >= 1 under ppswor and priority).
// Lemma E.1's monotonicity argument only follows rows already in the
// minimum; a row entering at token j brings about g(i)/q_i, so when that
// falls (count under sampling: 1/q_i) a_j falls too — see
// TestBiasedDownCanDecrease. Hand-made (non-DP) tables are only held to
// E_i <= g(i).
func TestBiasedDownGuarantees(t *testing.T) {
	t.Parallel()
	for _, tt := range testTables() {
		t.Run(tt.name, func(t *testing.T) {
			for _, gs := range testGs {
				g := mustG(gs)
				tab, err := Build(&sliceSource{rows: tt.rows}, Spec{MaxFrequency: tt.n, G: g, Estimator: BiasedDown})
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range tab.Frequencies {
					if f.Expected > f.G*(1+1e-9) {
						t.Errorf("%s %s: E_%d = %.15g > g = %g", tt.name, gs, f.Frequency, f.Expected, f.G)
					}
				}
				monotone := tt.q != nil
				for i := int64(1); monotone && i < int64(len(tt.rows)); i++ {
					monotone = g.at(i+1)/tt.q(i+1) >= g.at(i)/tt.q(i)
				}
				for j := 1; j < len(tab.A); j++ {
					if monotone && tab.A[j] < tab.A[j-1]-1e-9*math.Abs(tab.A[j]) {
						t.Errorf("%s %s: a_%d = %g < a_%d = %g", tt.name, gs, j+1, tab.A[j], j, tab.A[j-1])
					}
					if tab.A[j] < 0 {
						t.Errorf("%s %s: a_%d negative", tt.name, gs, j+1)
					}
				}
			}
		})
	}
}

// TestBiasedDownDecreasesOnlyWhereRowsEnter checks what Lemma E.1's proof
// does establish, on hand-made, Algorithm 4 and real Algorithm 4/5 tables:
// (1) a row's ratio r_{i,j} never decreases between consecutive tokens where
// the row has mass (a_j <= r_{i,j} removes below-average value); (2) hence
// a_j < a_{j-1} happens only at a token where the minimum is attained by a
// row that had no mass on the previous token (it enters, or returns after a
// gap, with its own ratio). (1) fails for any bug in the prefix sums; (2)
// pins every decrease on its cause.
func TestBiasedDownDecreasesOnlyWhereRowsEnter(t *testing.T) {
	t.Parallel()
	tables := testTables()
	for _, c := range realCases(mustPrivacy(0.5, 1e-3)) {
		tables = append(tables, testTable{name: c.name, rows: rowsOf(c.table(t), 110), n: 50})
	}
	decreases := 0
	for _, tt := range tables {
		t.Run(tt.name, func(t *testing.T) {
			br := newBrute(tt.rows, tt.n)
			for _, gs := range []string{"identity", "count", "power:0.5"} {
				g := mustG(gs)
				tab, err := Build(&sliceSource{rows: tt.rows}, Spec{MaxFrequency: tt.n, G: g, Estimator: BiasedDown})
				if err != nil {
					t.Fatal(err)
				}
				r := br.ratios(g, tab.A)
				for j := 1; j < len(tab.A); j++ {
					explained := false
					for i := range r {
						cur, prev := r[i][j], r[i][j-1]
						if math.IsNaN(cur) {
							continue
						}
						if !math.IsNaN(prev) && cur < prev-1e-9*math.Abs(prev) {
							t.Fatalf("%s %s: row %d ratio falls from %g to %g at token %d", tt.name, gs, i+1, prev, cur, j+1)
						}
						if math.IsNaN(prev) && relClose(cur, tab.A[j], 1e-9) {
							explained = true
						}
					}
					if tab.A[j] < tab.A[j-1]-1e-9*math.Abs(tab.A[j-1]) {
						decreases++
						if !explained {
							t.Fatalf("%s %s: a_%d = %g < a_%d = %g without an entering row", tt.name, gs, j+1, tab.A[j], j, tab.A[j-1])
						}
					}
				}
			}
		})
	}
	if decreases == 0 {
		t.Error("no decrease at all: the test tables should include counterexamples")
	}
}

// TestBiasedDownCanDecrease documents the counterexample to an unconditional
// "a_j non-decreasing": g = count under ppswor sampling, where 1/pi_i falls.
func TestBiasedDownCanDecrease(t *testing.T) {
	t.Parallel()
	tab, err := Build(&sliceSource{rows: alg4Rows(0.5, 1e-3, ppswor(0.05), 140)}, Spec{MaxFrequency: 100, G: mustG("count"), Estimator: BiasedDown})
	if err != nil {
		t.Fatal(err)
	}
	if !(tab.A[1] < tab.A[0]) {
		t.Errorf("expected a_2 < a_1 for count under sampling, got %g >= %g", tab.A[1], tab.A[0])
	}
	for _, f := range tab.Frequencies {
		if f.Expected > f.G*(1+1e-9) {
			t.Errorf("E_%d = %g > 1", f.Frequency, f.Expected)
		}
	}
}

// TestUnbiasedIsUnbiased: the triangular solve gives E_i = g(i) for every i
// (1e-9 relative) up to the stability limit, and the limit is genuine: at the
// first unstable frequency the brute-force cancellation sum_j pi_{i,j}|a_j|
// exceeds 1e5 g(i).
func TestUnbiasedIsUnbiased(t *testing.T) {
	t.Parallel()
	for _, tt := range testTables() {
		t.Run(tt.name, func(t *testing.T) {
			for _, gs := range testGs {
				g := mustG(gs)
				tab, n := buildTest(t, tt, g, Unbiased)
				if n < tt.n {
					br := newBrute(tt.rows, n+1)
					a := br.estimates(g, Unbiased)
					s := 0.0
					for j, m := range br.p[n] {
						s += m * math.Abs(a[j])
					}
					if s <= 1e5*g.at(n+1) {
						t.Errorf("%s %s: declared unstable at %d but cancellation is only %g", tt.name, gs, n+1, s/g.at(n+1))
					}
				}
				if n < 10 {
					t.Errorf("%s %s: unstable already at %d", tt.name, gs, n+1)
				}
				for _, f := range tab.Frequencies {
					if !relClose(f.Expected, f.G, 1e-9) {
						t.Errorf("%s %s: E_%d = %.15g, g = %g", tt.name, gs, f.Frequency, f.Expected, f.G)
					}
				}
			}
		})
	}
}

// TestMSEDecomposition: per frequency MSE_i = Bias_i^2 + Var_i, where the
// variance is computed around E_i independently of the MSE.
func TestMSEDecomposition(t *testing.T) {
	t.Parallel()
	for _, tt := range testTables() {
		t.Run(tt.name, func(t *testing.T) {
			for _, gs := range testGs {
				for _, est := range []Estimator{MLE, BiasedDown, Unbiased} {
					tab, _ := buildTest(t, tt, mustG(gs), est)
					for _, f := range tab.Frequencies {
						if math.Abs(f.MSE-(f.Bias*f.Bias+f.Variance)) > 1e-9*math.Max(f.MSE, 1e-12*f.G*f.G) || f.Variance < 0 || f.MSE < 0 {
							t.Errorf("%s %s %s: frequency %d: MSE %.15g, bias^2+var %.15g", tt.name, gs, est, f.Frequency, f.MSE, f.Bias*f.Bias+f.Variance)
						}
					}
				}
			}
		})
	}
}

// TestNoPrivacyIsExact: with delta = 1 and no sampling every key is reported
// with its true frequency, and every estimator returns g exactly (zero bias,
// zero variance).
func TestNoPrivacyIsExact(t *testing.T) {
	t.Parallel()
	sources := map[string]RowSource{
		"lemma52 L=0":     newLemma52(0.5, 0),
		"alg4 delta=1":    &sliceSource{rows: alg4Rows(0.5, 1, qNone, 60)},
		"alg4 delta=1 e2": &sliceSource{rows: alg4Rows(2, 1, qNone, 60)},
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			for _, gs := range testGs {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown, Unbiased} {
					tab, err := Build(src, Spec{MaxFrequency: 50, G: g, Estimator: est})
					if err != nil {
						t.Fatal(err)
					}
					for j, a := range tab.A {
						if a != g.at(int64(j+1)) {
							t.Fatalf("%s %s %s: a_%d = %g, want g = %g", name, gs, est, j+1, a, g.at(int64(j+1)))
						}
					}
					for _, f := range tab.Frequencies {
						if f.Bias != 0 || f.MSE != 0 || f.Variance != 0 {
							t.Fatalf("%s %s %s: frequency %d not exact: %+v", name, gs, est, f.Frequency, f)
						}
					}
				}
			}
		})
	}
}

// TestBuildRejectsBadInput: invalid specs and malformed row tables fail
// with an error instead of producing a table.
func TestBuildRejectsBadInput(t *testing.T) {
	t.Parallel()
	good := alg4Rows(0.5, 1e-3, qNone, 60)
	bad := func(mut func(rows []sanitize.Row)) []sanitize.Row {
		rows := rowsOf(&sliceSource{rows: good}, 60)
		mut(rows)
		return rows
	}
	cases := []struct {
		name string
		src  RowSource
		spec Spec
	}{
		{"n=0", &sliceSource{rows: good}, Spec{0, mustG("identity"), MLE}},
		{"bad g", &sliceSource{rows: good}, Spec{10, G{Kind: "square"}, MLE}},
		{"bad estimator", &sliceSource{rows: good}, Spec{10, mustG("identity"), "median"}},
		{"short table", &sliceSource{rows: good}, Spec{100, mustG("identity"), MLE}},
		{"piece above frequency", &sliceSource{rows: bad(func(r []sanitize.Row) { r[4].Pieces[len(r[4].Pieces)-1].Hi = 7 })}, Spec{30, mustG("identity"), MLE}},
		{"pieces do not sum to pi", &sliceSource{rows: bad(func(r []sanitize.Row) { r[4].Pi += 0.01 })}, Spec{30, mustG("identity"), MLE}},
		{"out of order", &sliceSource{rows: bad(func(r []sanitize.Row) { r[3].Frequency = 9 })}, Spec{30, mustG("identity"), MLE}},
		{"support moves down", &sliceSource{rows: bad(func(r []sanitize.Row) {
			r[40].Pieces = append([]sanitize.Piece{{Lo: 0, Hi: 1, P: 0.01}}, r[40].Pieces...)
			r[40].Pi += 0.01
		})}, Spec{50, mustG("identity"), MLE}},
		{"false stationarity", &statSliceSource{sliceSource{rows: stationaryFractional(120, 30, 4, 5)}, 10}, Spec{50, mustG("identity"), MLE}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Build(c.src, c.spec); err == nil {
				t.Errorf("%s: Build succeeded", c.name)
			}
		})
	}
}

// TestTokenMapping: Algorithm 4 values map to their token j, fractional
// values to the refinement token containing them, values <= 0 are "not
// reported", and values beyond a table without a tail are out of range.
func TestTokenMapping(t *testing.T) {
	t.Parallel()
	tab, err := Build(plainSource{newLemma52(0.7, 3)}, Spec{MaxFrequency: 30, G: mustG("identity"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	for j := int64(1); j <= 30; j++ {
		for _, v := range []float64{float64(j), float64(j) - 0.5, float64(j) - 0.999} {
			got, err := tab.Token(v)
			if err != nil || got != j {
				t.Fatalf("Token(%g) = %d, %v; want %d", v, got, err, j)
			}
			a, err := tab.Estimate(v)
			if err != nil || a != tab.A[j-1] {
				t.Fatalf("Estimate(%g) = %g, %v; want %g", v, a, err, tab.A[j-1])
			}
		}
	}
	for _, v := range []float64{0, -1, math.NaN()} {
		t.Run(fmt.Sprintf("v=%g", v), func(t *testing.T) {
			if _, err := tab.Estimate(v); !errors.Is(err, ErrNotReported) {
				t.Errorf("Estimate(%g): err %v, want ErrNotReported", v, err)
			}
		})
	}
	if _, err := tab.Estimate(31); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("Estimate beyond a tail-less table: err %v, want ErrOutOfRange", err)
	}

	rows := fractionalRows(60, 5, 3)
	ft, err := Build(&sliceSource{rows: rows}, Spec{MaxFrequency: 40, G: mustG("identity"), Estimator: BiasedDown})
	if err != nil {
		t.Fatal(err)
	}
	for j := 1; j < len(ft.Bounds); j++ {
		lo, hi := ft.Bounds[j-1], ft.Bounds[j]
		for _, v := range []float64{lo + (hi-lo)*1e-6, (lo + hi) / 2, hi} {
			got, err := ft.Token(v)
			if err != nil || got != int64(j) {
				t.Fatalf("fractional Token(%g) = %d, %v; want %d", v, got, err, j)
			}
		}
	}
	// Tokens splits a piece into the refinement tokens it contains.
	var n int
	if err := ft.Tokens(10, 12, func(tok Token) bool {
		if tok.Lo < 10-1e-12 || tok.Hi > 12+1e-12 || tok.Estimate != ft.A[tok.Index-1] {
			t.Errorf("token %+v outside (10, 12] or wrong estimate", tok)
		}
		n++
		return true
	}); err != nil || n < 2 {
		t.Errorf("Tokens(10, 12): %d tokens, %v", n, err)
	}
}

// TestSumStatsIsEq12: the selection statistics are the eq. 12 sums of the
// per-frequency ones.
func TestSumStatsIsEq12(t *testing.T) {
	t.Parallel()
	tab, err := Build(&sliceSource{rows: alg4Rows(0.5, 1e-3, ppswor(0.05), 140)}, Spec{MaxFrequency: 100, G: mustG("identity"), Estimator: MLE})
	if err != nil {
		t.Fatal(err)
	}
	dist := []FrequencyCount{{1, 1000}, {5, 200}, {20, 30}, {77, 2.5}, {100, 1}}
	got, err := tab.SumStats(dist)
	if err != nil {
		t.Fatal(err)
	}
	var s, bias, v float64
	for _, fc := range dist {
		f := tab.Frequencies[fc.Frequency-1]
		s += fc.Keys * float64(fc.Frequency)
		bias += fc.Keys * f.Bias
		v += fc.Keys * f.Variance
	}
	mse := v + bias*bias
	if !relClose(got.Statistic, s, 1e-12) || !relClose(got.Bias, bias, 1e-12) || !relClose(got.Variance, v, 1e-12) ||
		!relClose(got.MSE, mse, 1e-12) || !relClose(got.NRMSE, math.Sqrt(mse)/s, 1e-12) || got.Keys != 1233.5 {
		t.Errorf("SumStats = %+v; want s=%g bias=%g var=%g", got, s, bias, v)
	}
	if _, err := tab.SumStats([]FrequencyCount{{101, 1}}); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("frequency beyond the table: %v", err)
	}
	if _, err := tab.SumStats(nil); err == nil {
		t.Error("empty selection accepted")
	}
	if _, err := tab.SumStats([]FrequencyCount{{3, -1}}); err == nil {
		t.Error("negative count accepted")
	}
}
