package estimate

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/sanitize/sanitizetest"
)

// Tests against real internal/sanitize tables (Algorithms 4 and 5).

type realCase struct {
	name   string
	p      sanitize.Privacy
	s      sanitize.Sampling
	method sanitize.Method
}

func (c realCase) table(t *testing.T) *sanitize.Table {
	t.Helper()
	tab, err := sanitize.NewTable(c.p, c.s, c.method)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return tab
}

func mustPrivacy(eps, delta float64) sanitize.Privacy {
	p, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		panic(err)
	}
	return p
}

func mustSampling(scheme sanitize.Scheme, tau float64, probs []float64) sanitize.Sampling {
	s, err := sanitize.NewSampling(scheme, tau, 1, probs)
	if err != nil {
		panic(err)
	}
	return s
}

// realCases crosses both methods with several schemes.
func realCases(p sanitize.Privacy) []realCase {
	schemes := []struct {
		name string
		s    sanitize.Sampling
	}{
		{"none", mustSampling(sanitize.SchemeNone, 0, nil)},
		{"ppswor", mustSampling(sanitize.SchemePPSWOR, 0.05, nil)},
		{"priority", mustSampling(sanitize.SchemePriority, 0.02, nil)},
		{"custom", mustSampling(sanitize.SchemeCustom, 0, []float64{0.01, 0.05, 0.2, 0.5, 0.5, 0.9})},
	}
	var out []realCase
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, sc := range schemes {
			out = append(out, realCase{name: string(m) + " " + sc.name, p: p, s: sc.s, method: m})
		}
	}
	return out
}

// TestRealTablesMatchBruteForce: on real Algorithm 4 and 5 tables (tokens =
// common refinement of the rows) the streaming builder equals the dense
// literal formulas for every estimator.
func TestRealTablesMatchBruteForce(t *testing.T) {
	t.Parallel()
	const n = 50
	for _, c := range realCases(mustPrivacy(0.5, 1e-3)) {
		t.Run(c.name, func(t *testing.T) {
			tab := c.table(t)
			rows := rowsOf(tab, n+60)
			tt := testTable{name: c.name, rows: rows, n: n}
			br := newBrute(rows, n)
			for _, gs := range []string{"identity", "count"} {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown, Unbiased} {
					et, nu := buildTest(t, tt, g, est)
					b := br
					if nu != n {
						b = newBrute(rows, nu)
					}
					want := b.estimates(g, est)
					if len(et.A) != len(want) {
						t.Fatalf("%s %s %s: %d tokens, brute force %d", c.name, gs, est, len(et.A), len(want))
					}
					for j := range want {
						if !relClose(et.Bounds[j+1], b.bounds[j+1], 1e-12) || !relClose(et.A[j], want[j], 1e-9) {
							t.Fatalf("%s %s %s: token %d (%g, a=%.15g), brute force (%g, %.15g)", c.name, gs, est, j+1, et.Bounds[j+1], et.A[j], b.bounds[j+1], want[j])
						}
					}
					for i := int64(1); i <= nu; i++ {
						got, w := et.Frequencies[i-1], b.stats(g, want, i)
						if !relClose(got.Expected, w.Expected, 1e-9) || math.Abs(got.MSE-w.MSE) > 1e-9*math.Max(w.MSE, w.G*w.G) {
							t.Fatalf("%s %s %s: stats %d %+v, brute force %+v", c.name, gs, est, i, got, w)
						}
					}
					// Build straight from the sanitize.Table equals Build from
					// the copied rows.
					direct, err := Build(tab, Spec{MaxFrequency: nu, G: g, Estimator: est})
					if err != nil || len(direct.A) != len(et.A) {
						t.Fatalf("%s: direct build: %v", c.name, err)
					}
					for j := range et.A {
						if direct.A[j] != et.A[j] {
							t.Fatalf("%s: direct build differs at token %d", c.name, j+1)
						}
					}
				}
			}
		})
	}
}

// TestRealTablesGuarantees: on larger real tables of both methods, several
// schemes and two privacy levels: biased-down never over-estimates (and on
// Algorithm 4 tables is non-decreasing where g(i)/q_i is), MSE = bias^2 +
// variance for MLE and
// biased-down, and the unbiased estimator is exactly unbiased up to its
// stability limit.
func TestRealTablesGuarantees(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const n = 400
	for _, p := range []sanitize.Privacy{mustPrivacy(0.5, 1e-6), mustPrivacy(1, 1e-4)} {
		for _, c := range realCases(p) {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s", p.Epsilon, p.Delta, c.name), func(t *testing.T) {
				tab := c.table(t)
				for _, gs := range []string{"identity", "count", "power:2"} {
					g := mustG(gs)
					// Empirical rule for Algorithm 4 (see TestBiasedDownGuarantees);
					// Algorithm 5 tables are covered by
					// TestBiasedDownDecreasesOnlyWhereRowsEnter.
					monotone := c.method == sanitize.MethodDiscrete
					for i := int64(1); monotone && i < n+100; i++ {
						monotone = monotone && g.at(i+1)/c.s.Q(i+1) >= g.at(i)/c.s.Q(i)
					}
					for _, est := range []Estimator{MLE, BiasedDown} {
						et, err := Build(tab, Spec{MaxFrequency: n, G: g, Estimator: est})
						if err != nil {
							t.Fatalf("%s %s %s: %v", c.name, gs, est, err)
						}
						for _, f := range et.Frequencies {
							if math.Abs(f.MSE-(f.Bias*f.Bias+f.Variance)) > 1e-9*math.Max(f.MSE, 1e-12*f.G*f.G) {
								t.Fatalf("%s %s %s: frequency %d: MSE %g != bias^2 + var %g", c.name, gs, est, f.Frequency, f.MSE, f.Bias*f.Bias+f.Variance)
							}
							if est == BiasedDown && f.Expected > f.G*(1+1e-9) {
								t.Fatalf("%s %s: E_%d = %.15g > g = %g", c.name, gs, f.Frequency, f.Expected, f.G)
							}
						}
						if est == BiasedDown && monotone {
							for j := 1; j < len(et.A); j++ {
								if et.A[j] < et.A[j-1]-1e-9*math.Abs(et.A[j]) {
									t.Fatalf("%s %s: a_%d = %g < a_%d = %g", c.name, gs, j+1, et.A[j], j, et.A[j-1])
								}
							}
						}
					}
					ut, err := Build(tab, Spec{MaxFrequency: n, G: g, Estimator: Unbiased})
					var ue *UnstableError
					if errors.As(err, &ue) {
						ut, err = Build(tab, Spec{MaxFrequency: ue.Frequency - 1, G: g, Estimator: Unbiased})
					}
					if err != nil {
						t.Fatalf("%s %s unbiased: %v", c.name, gs, err)
					}
					for _, f := range ut.Frequencies {
						if !relClose(f.Expected, f.G, 1e-9) {
							t.Fatalf("%s %s unbiased: E_%d = %.15g, g = %g", c.name, gs, f.Frequency, f.Expected, f.G)
						}
					}
				}
			})
		}
	}
}

// TestRealNoPrivacyIsExact: delta = 1 and no sampling, both methods: every
// estimator returns g exactly.
func TestRealNoPrivacyIsExact(t *testing.T) {
	t.Parallel()
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			c := realCase{name: string(m), p: mustPrivacy(0.5, 1), s: mustSampling(sanitize.SchemeNone, 0, nil), method: m}
			tab := c.table(t)
			for _, gs := range testGs {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown, Unbiased} {
					et, err := Build(tab, Spec{MaxFrequency: 200, G: g, Estimator: est})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range et.Frequencies {
						if f.Expected != f.G || f.MSE != 0 || f.Variance != 0 {
							t.Fatalf("%s %s %s: frequency %d not exact: %+v", m, gs, est, f.Frequency, f)
						}
					}
					for j := int64(1); j <= 200; j++ {
						if a, err := et.Estimate(float64(j) - 0.5); err != nil || a != g.at(j) {
							t.Fatalf("%s %s %s: estimate of a value in (j-1, j] = %g, want g(%d) = %g", m, gs, est, a, j, g.at(j))
						}
					}
				}
			}
		})
	}
}

// TestRealAlgorithm5EqualsAlgorithm4: with q = 1 and integral L the two
// sanitizers coincide, and so do their estimator tables (per unit).
func TestRealAlgorithm5EqualsAlgorithm4(t *testing.T) {
	t.Parallel()
	delta := sanitizetest.IntegralDelta(0.5, 10) // L = 10
	none := mustSampling(sanitize.SchemeNone, 0, nil)
	for _, est := range []Estimator{MLE, BiasedDown} {
		t.Run(string(est), func(t *testing.T) {
			var tabs [2]*Table
			for k, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
				st := realCase{name: string(m), p: mustPrivacy(0.5, delta), s: none, method: m}.table(t)
				var err error
				if tabs[k], err = Build(st, Spec{MaxFrequency: 300, G: mustG("identity"), Estimator: est}); err != nil {
					t.Fatal(err)
				}
			}
			for j := int64(1); j <= 300; j++ {
				a4, err4 := tabs[0].Estimate(float64(j) - 0.5)
				a5, err5 := tabs[1].Estimate(float64(j) - 0.5)
				if err4 != nil || err5 != nil || !relClose(a4, a5, 1e-9) {
					t.Fatalf("%s: unit %d: algorithm 4 %g (%v), algorithm 5 %g (%v)", est, j, a4, err4, a5, err5)
				}
			}
			for i := int64(1); i <= 300; i++ {
				f4, f5 := tabs[0].Frequencies[i-1], tabs[1].Frequencies[i-1]
				if !relClose(f4.Expected, f5.Expected, 1e-9) || !relClose(f4.MSE, f5.MSE, 1e-8) {
					t.Fatalf("%s: frequency %d: %+v vs %+v", est, i, f4, f5)
				}
			}
		})
	}
}

// TestRealStationaryTail: on real tables that become stationary, a table
// extended beyond its max frequency equals the explicitly computed larger
// table (MLE for every g; biased-down where a period was established).
func TestRealStationaryTail(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(0.5, 1e-3)
	cases := []realCase{
		{"discrete none", p, mustSampling(sanitize.SchemeNone, 0, nil), sanitize.MethodDiscrete},
		{"discrete priority", p, mustSampling(sanitize.SchemePriority, 0.02, nil), sanitize.MethodDiscrete},
		{"max_separation none", p, mustSampling(sanitize.SchemeNone, 0, nil), sanitize.MethodMaxSeparation},
		{"max_separation custom q=0.9", p, mustSampling(sanitize.SchemeCustom, 0, []float64{0.01, 0.05, 0.2, 0.5, 0.5, 0.9}), sanitize.MethodMaxSeparation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := c.table(t)
			for _, gs := range []string{"identity", "count", "power:2"} {
				g := mustG(gs)
				for _, est := range []Estimator{MLE, BiasedDown} {
					const n1, n2 = 700, 760
					t1, err := Build(tab, Spec{MaxFrequency: n1, G: g, Estimator: est})
					if err != nil {
						t.Fatal(err)
					}
					t2, err := Build(tab, Spec{MaxFrequency: n2, G: g, Estimator: est})
					if err != nil {
						t.Fatal(err)
					}
					if t1.Tail == nil {
						t.Fatalf("%s: no stationary tail", c.name)
					}
					if est == BiasedDown && gs == "count" && t1.Tail.Period == 0 {
						t.Errorf("%s: biased-down count has no period", c.name)
					}
					extends := est == MLE || t1.Tail.Period > 0
					first, _ := t2.explicitToken(n1 + 1e-9)
					for j := first; j <= len(t2.A); j++ {
						mid := (t2.Bounds[j-1] + t2.Bounds[j]) / 2
						a, err := t1.Estimate(mid)
						if !extends {
							if !errors.Is(err, ErrOutOfRange) {
								t.Fatalf("%s %s %s: beyond the table without a period: %v", c.name, gs, est, err)
							}
							break
						}
						if err != nil || !relClose(a, t2.A[j-1], 1e-9) {
							t.Fatalf("%s %s %s: extended a_%d = %.15g (%v), explicit %.15g", c.name, gs, est, j, a, err, t2.A[j-1])
						}
					}
					if !extends {
						continue
					}
					for i := int64(n1 + 1); i <= n2; i++ {
						got, err := t1.Stats(i)
						want := t2.Frequencies[i-1]
						if err != nil || !relClose(got.Expected, want.Expected, 1e-9) || !relClose(got.MSE, want.MSE, 1e-8) {
							t.Fatalf("%s %s %s: extended stats(%d) %+v (%v), explicit %+v", c.name, gs, est, i, got, err, want)
						}
					}
				}
			}
		})
	}
}
