package estimate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/sanitize/sanitizetest"
)

// Test row sources, independent of internal/sanitize.

// sliceSource serves precomputed rows. It hands fn a scratch copy of the
// pieces and overwrites it afterwards, so a consumer that retains
// row.Pieces computes garbage.
type sliceSource struct {
	rows []sanitize.Row
}

func (s *sliceSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	var buf []sanitize.Piece
	for i := from; i <= to && i <= int64(len(s.rows)); i++ {
		r := s.rows[i-1]
		buf = append(buf[:0], r.Pieces...)
		r.Pieces = buf
		if !fn(r) {
			return nil
		}
		for k := range buf {
			buf[k] = sanitize.Piece{Lo: -1, Hi: -1, P: math.NaN()}
		}
	}
	return nil
}

// statSliceSource is a sliceSource that claims stationarity from `from`.
type statSliceSource struct {
	sliceSource
	from int64
}

func (s *statSliceSource) StationaryFrom() (int64, bool) { return s.from, true }

// lemma52 generates Lemma 5.2's closed-form rows for q = 1 and integral L:
// pi*_{i,j} = delta e^{(i-j) eps} for 0 <= i-j <= L, delta e^{(2L-(i-j)) eps}
// for L+1 <= i-j <= 2L, 0 otherwise; delta chosen to make L integral. Rows
// 2L+1, 2L+2, ... are shifted copies.
type lemma52 struct {
	eps, delta float64
	L          int64
	noStat     bool // hide StationaryFrom (wrapped by plainSource)
}

func newLemma52(eps float64, L int64) lemma52 {
	return lemma52{eps: eps, L: L, delta: sanitizetest.IntegralDelta(eps, int(L))}
}

func (s lemma52) row(i int64) sanitize.Row {
	r := sanitize.Row{Frequency: i}
	for j := max(1, i-2*s.L); j <= i; j++ {
		p := sanitizetest.Lemma52(s.eps, s.delta, s.L, i, j)
		r.Pieces = append(r.Pieces, sanitize.Piece{Lo: float64(j - 1), Hi: float64(j), P: p})
		r.Pi += p
	}
	return r
}

func (s lemma52) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	for i := from; i <= to; i++ {
		if !fn(s.row(i)) {
			return nil
		}
	}
	return nil
}

func (s lemma52) StationaryFrom() (int64, bool) { return 2*s.L + 1, true }

// plainSource hides any StationaryFrom method of the wrapped source.
type plainSource struct{ RowSource }

// alg4Rows is the dense reference Algorithm 4 (sanitizetest.DenseAlgorithm4),
// O(n^2), as rows 1..n with integer tokens, used as an independent table
// generator for q < 1.
func alg4Rows(eps, delta float64, q func(int64) float64, n int) []sanitize.Row {
	dense := sanitizetest.DenseAlgorithm4(eps, delta, q, n)
	rows := make([]sanitize.Row, 0, n)
	for i := 1; i <= n; i++ {
		r := sanitize.Row{Frequency: int64(i)}
		for j := 1; j <= i; j++ {
			if p := dense[i][j]; p > 0 {
				r.Pieces = append(r.Pieces, sanitize.Piece{Lo: float64(j - 1), Hi: float64(j), P: p})
			}
		}
		// Pi as the sum actually held, so pieces sum to Pi exactly.
		for _, p := range r.Pieces {
			r.Pi += p.P
		}
		rows = append(rows, r)
	}
	return rows
}

// fractionalRows is a hand-made table with fractional, row-specific break
// points, gaps and supports of width about w (not DP; it exercises the
// common refinement of Algorithm 5 style tables). Every integer is a break
// point, row i always has mass on (i-1, i], supports start at non-decreasing
// positions.
func fractionalRows(n int, w int, seed uint64) []sanitize.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	rows := make([]sanitize.Row, 0, n)
	for i := 1; i <= n; i++ {
		fi := float64(i)
		lo := math.Max(0, fi-float64(w)-0.37)
		pts := []float64{lo, fi}
		for d := 1; d < w+1; d++ {
			if x := fi - float64(d); x > lo {
				pts = append(pts, x)
			}
			if x := fi - float64(d) + 0.1 + 0.8*rng.Float64(); x > lo && rng.IntN(3) > 0 {
				pts = append(pts, x)
			}
		}
		slices.Sort(pts)
		pts = slices.Compact(pts)
		pi := math.Min(1, 0.05+0.03*fi)
		var ws []float64
		var pieces []sanitize.Piece
		for k := 0; k+1 < len(pts); k++ {
			top := k+2 == len(pts)
			if k > 0 && !top && rng.IntN(5) == 0 {
				continue // a gap
			}
			ws = append(ws, 0.2+rng.Float64())
			pieces = append(pieces, sanitize.Piece{Lo: pts[k], Hi: pts[k+1]})
		}
		tot := 0.0
		for _, x := range ws {
			tot += x
		}
		sum := 0.0
		for k := range pieces {
			pieces[k].P = pi * ws[k] / tot
			sum += pieces[k].P
		}
		rows = append(rows, sanitize.Row{Frequency: int64(i), Pi: sum, Pieces: pieces})
	}
	return rows
}

// bruteTieTol is the brute-force oracle's own statement of the MLE tie
// rule (eq. 11 leaves ties open; pwsd gives them to the smallest
// frequency): two row probabilities of one token within a relative 1e-10
// are the same probability computed along different routes. It is spelled
// out here, not imported from build.go, so that moving Build's tolerance
// fails TestBuildMatchesBruteForce and TestRealTablesMatchBruteForce.
const bruteTieTol = 1e-10

// brute is the dense oracle: eq. 11, 41, the cell triangular solve and the
// Section 7.1 statistics computed literally from the full matrix.
type brute struct {
	bounds []float64   // token boundaries, bounds[0] = 0
	p      [][]float64 // p[i-1][j-1] = pi_{i,j}
	pi     []float64
}

// newBrute builds the dense matrix over all rows; tokens are the union of
// all end points up to n.
func newBrute(rows []sanitize.Row, n int64) *brute {
	pts := []float64{0}
	for _, r := range rows {
		for _, p := range r.Pieces {
			for _, x := range [2]float64{p.Lo, p.Hi} {
				if x > 0 && x <= float64(n) {
					pts = append(pts, x)
				}
			}
		}
	}
	slices.Sort(pts)
	// The same point computed along different routes (or an ulp-wide
	// piece) is one break point, as in Build.
	pts = slices.CompactFunc(pts, func(a, b float64) bool { return math.Abs(b-a) <= relTol*math.Max(1, math.Max(a, b)) })
	b := &brute{bounds: pts}
	for _, r := range rows {
		row := make([]float64, len(pts)-1)
		for _, p := range r.Pieces {
			dens := p.P / (p.Hi - p.Lo)
			first, _ := slices.BinarySearch(pts, p.Lo)
			for j := max(first-1, 0); j < len(row) && pts[j] < p.Hi; j++ {
				lo, hi := pts[j], pts[j+1]
				if ov := math.Min(hi, p.Hi) - math.Max(lo, p.Lo); ov > relTol*math.Max(1, hi) {
					row[j] += dens * ov
				}
			}
		}
		b.p = append(b.p, row)
		b.pi = append(b.pi, r.Pi)
	}
	return b
}

func (b *brute) estimates(g G, est Estimator) []float64 {
	nt := len(b.bounds) - 1
	a := make([]float64, nt)
	switch est {
	case MLE:
		// Eq. 11 with the oracle's own tie rule (not Build's constant):
		// the token's largest row probability M is found first; every
		// frequency whose probability is within bruteTieTol of M,
		// relatively, is tied with it, and the smallest tied frequency wins.
		for j := 0; j < nt; j++ {
			var top float64
			for i := range b.p {
				top = math.Max(top, b.p[i][j])
			}
			best := -1
			for i := range b.p {
				if m := b.p[i][j]; m > 0 && m*(1+bruteTieTol) >= top {
					best = i
					break
				}
			}
			if best >= 0 {
				a[j] = g.at(int64(best+1)) / b.pi[best]
			} else if j > 0 {
				a[j] = a[j-1]
			}
		}
	case BiasedDown:
		for j := 0; j < nt; j++ {
			a[j] = math.Inf(1)
			for i := range b.p {
				if b.p[i][j] <= 0 {
					continue
				}
				num, den := g.at(int64(i+1)), b.pi[i]
				for h := 0; h < j; h++ {
					num -= a[h] * b.p[i][h]
					den -= b.p[i][h]
				}
				a[j] = math.Min(a[j], num/den)
			}
			if math.IsInf(a[j], 1) {
				a[j] = 0
				if j > 0 {
					a[j] = a[j-1]
				}
			}
		}
	case Unbiased:
		cell := func(j int) int { return int(math.Ceil(b.bounds[j+1] - 1e-9)) } // unit of token j
		n := cell(nt - 1)
		cm := make([][]float64, n+1) // cm[k][c]: row k's mass in cell c
		for k := 1; k <= n; k++ {
			cm[k] = make([]float64, n+1)
			for j := 0; j < nt; j++ {
				cm[k][cell(j)] += b.p[k-1][j]
			}
		}
		ac := make([]float64, n+1)
		for k := 1; k <= n; k++ {
			s := g.at(int64(k))
			for c := 1; c < k; c++ {
				s -= cm[k][c] * ac[c]
			}
			ac[k] = s / cm[k][k]
		}
		for j := 0; j < nt; j++ {
			a[j] = ac[cell(j)]
		}
	}
	return a
}

// ratios returns eq. 41's r_{i,j} = (g(i) - sum_{h<j} a_h pi_{i,h}) /
// (pi_i - sum_{h<j} pi_{i,h}) for every row and token where pi_{i,j} > 0
// (NaN elsewhere), given the estimates a.
func (b *brute) ratios(g G, a []float64) [][]float64 {
	r := make([][]float64, len(b.p))
	for i, row := range b.p {
		r[i] = make([]float64, len(row))
		num, den := g.at(int64(i+1)), b.pi[i]
		for j, m := range row {
			r[i][j] = math.NaN()
			if m > 0 {
				r[i][j] = num / den
			}
			num -= a[j] * m
			den -= m
		}
	}
	return r
}

// stats are the paper's definitions: Var = MSE - Bias^2.
func (b *brute) stats(g G, a []float64, i int64) FrequencyStats {
	row := b.p[i-1]
	gi := g.at(i)
	e, mse := 0.0, (1-b.pi[i-1])*gi*gi
	for j, m := range row {
		e += m * a[j]
		mse += m * (a[j] - gi) * (a[j] - gi)
	}
	return FrequencyStats{Frequency: i, G: gi, Reported: b.pi[i-1], Expected: e, Bias: e - gi, MSE: mse, Variance: mse - (e-gi)*(e-gi)}
}

func relClose(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func rowsOf(src RowSource, n int64) []sanitize.Row {
	var rows []sanitize.Row
	_ = src.Rows(1, n, func(r sanitize.Row) bool {
		r.Pieces = slices.Clone(r.Pieces)
		rows = append(rows, r)
		return true
	})
	return rows
}

func mustG(s string) G {
	g, err := ParseG(s)
	if err != nil {
		panic(err)
	}
	return g
}

func ppswor(tau float64) func(int64) float64 {
	return func(i int64) float64 { return -math.Expm1(-tau * float64(i)) }
}

func priority(tau float64) func(int64) float64 {
	return func(i int64) float64 { return math.Min(1, tau*float64(i)) }
}

func qNone(int64) float64 { return 1 }

// tableMaker returns a function that makes a fresh sanitizer table (no
// cached rows) of the given parameters, failing t on error.
func tableMaker(t *testing.T, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method) func() *sanitize.Table {
	return func() *sanitize.Table {
		tab, err := sanitize.NewTable(p, smp, m)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
}

// builderCase is one point of the parameter grid on which the dense
// builders (buildUnit, buildGrid) are compared with the reference one.
type builderCase struct {
	eps, delta float64
	scheme     sanitize.Scheme
	tau, power float64
	g          G
	n          int64
}

// builderCases is the grid both comparisons share: every scheme,
// stationary tables (none) and tables that never become stationary, each
// kind of g.
var builderCases = []builderCase{
	{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, 1, G{Kind: GIdentity}, 2000},
	{1, 1e-3, sanitize.SchemePriority, 0.002, 1, mustG("count"), 2000},
	{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5, 1, G{Kind: GIdentity}, 1500},
	{2, 1e-9, sanitize.SchemeNone, 0, 1, G{Kind: GIdentity}, 300},
	{0.5, 1e-3, sanitize.SchemeNone, 0, 1, mustG("cap:40"), 400},
	{0.3, 1e-5, sanitize.SchemePPSWOR, 1e-4, 2, mustG("power:0.5"), 1000},
}

// runBuilderCases runs fn as a subtest for each case and each of MLE and
// biased-down, with a maker of fresh sanitizer tables of method m, the
// case's spec and the reference builder's table for it (buildGeneralRef).
func runBuilderCases(t *testing.T, cases []builderCase, m sanitize.Method,
	fn func(t *testing.T, pc builderCase, mk func() *sanitize.Table, spec Spec, want *Table)) {
	for _, pc := range cases {
		for _, est := range []Estimator{MLE, BiasedDown} {
			name := fmt.Sprintf("eps=%g,delta=%g,%s,tau=%g,p=%g,g=%s,n=%d/%s", pc.eps, pc.delta, pc.scheme, pc.tau, pc.power, pc.g, pc.n, est)
			t.Run(name, func(t *testing.T) {
				smp, err := sanitize.NewSampling(pc.scheme, pc.tau, pc.power, nil)
				if err != nil {
					t.Fatal(err)
				}
				mk := tableMaker(t, mustPrivacy(pc.eps, pc.delta), smp, m)
				spec := Spec{MaxFrequency: pc.n, G: pc.g, Estimator: est}
				want, err := buildGeneralRef(context.Background(), generalSource{mk()}, spec)
				if err != nil {
					t.Fatal(err)
				}
				fn(t, pc, mk, spec, want)
			})
		}
	}
}

// generalSource hides a table's method, so Build takes the general path.
type generalSource struct{ t *sanitize.Table }

func (s generalSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return s.t.Rows(from, to, fn)
}
func (s generalSource) StationaryFrom() (int64, bool) { return s.t.StationaryFrom() }
