package sanitize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize/sanitizetest"
)

// L(eps, delta) from equation (4) is an integer exactly when delta is
// (e^eps - 1)/((e^eps + 1) e^{eps L} - 2); and L is >= 0 and decreasing in delta.
func TestLIntegralDelta(t *testing.T) {
	t.Parallel()
	for _, eps := range []float64{0.05, 0.1, 0.5, 1, 2, 5} {
		t.Run(fmt.Sprintf("eps=%g", eps), func(t *testing.T) {
			for _, l := range []int{0, 1, 3, 10, 40} {
				d := sanitizetest.IntegralDelta(eps, l)
				if d <= 0 || d > 1 {
					continue
				}
				if got := L(mustPrivacy(t, eps, d)); math.Abs(got-float64(l)) > 1e-9*math.Max(1, float64(l)) {
					t.Errorf("L(%g, %g) = %.15g, want %d", eps, d, got, l)
				}
			}
		})
	}
	if got := L(mustPrivacy(t, 1, 1)); got != 0 {
		t.Errorf("L(1, 1) = %g, want 0", got)
	}
	if got := L(mustPrivacy(t, 1000, 1e-6)); math.Abs(got-math.Log(1e6)/1000) > 1e-12 {
		t.Errorf("L(1000, 1e-6) = %g, want ln(1/delta)/eps", got)
	}
	if !math.IsNaN(L(Privacy{})) {
		t.Errorf("L of an invalid Privacy should be NaN")
	}
}

// Lemma 4.2: for q = 1 and integral L, pi_i has a closed form (to 1e-12).
// Note: equation (5) as printed has an off-by-one in the second branch for
// L as defined in (4) (docs/algorithms.md, "The closed form, corrected
// (Lemma 4.2)"): the recursion of Algorithm 3 (the definition) gives
//
//	pi_i = delta (e^{eps i} - 1)/(e^eps - 1)            for i <= L+1
//	pi_i = 1 - delta (e^{eps (2L+1-i)} - 1)/(e^eps - 1)  for L+1 <= i <= 2L+1
//	pi_i = 1                                             for i >= 2L+1,
//
// which is also the tail sum of Lemma 5.2's stationary row (a symmetric
// sequence of 2L+1 entries summing to 1); the printed 2L+2-i would make the
// two branches disagree at i = L+1. The test checks this form, and that
// the printed one is off by exactly one index.
func TestReportingProbabilitiesLemma42(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps float64
		l   int
	}{{0.1, 5}, {0.1, 40}, {0.5, 10}, {1, 3}, {1, 12}, {2, 4}, {3, 1}} {
		t.Run(fmt.Sprintf("eps=%g,L=%d", tc.eps, tc.l), func(t *testing.T) {
			d := sanitizetest.IntegralDelta(tc.eps, tc.l)
			p := mustPrivacy(t, tc.eps, d)
			n := 2*tc.l + 10
			pi := ReportingProbabilities(p, Sampling{Scheme: SchemeNone}, n)
			e := math.Exp(tc.eps)
			L := float64(tc.l)
			up := func(k float64) float64 { return d * (math.Exp(tc.eps*k) - 1) / (e - 1) }
			for i := 1; i <= n; i++ {
				fi := float64(i)
				var want, printed float64
				switch {
				case fi <= L+1:
					want, printed = up(fi), up(fi)
				case fi <= 2*L+1:
					want, printed = 1-up(2*L+1-fi), 1-up(2*L+2-fi)
				default:
					want, printed = 1, math.Min(1, 1-up(2*L+2-fi))
				}
				if math.Abs(pi[i-1]-want) > 1e-12 {
					t.Errorf("eps=%g L=%d: pi_%d = %.17g, closed form %.17g", tc.eps, tc.l, i, pi[i-1], want)
				}
				if i >= tc.l+2 && i <= 2*tc.l+1 && math.Abs(pi[i-1]-printed) < 1e-6 {
					t.Errorf("eps=%g L=%d: pi_%d also matches the printed form; the off-by-one note is wrong", tc.eps, tc.l, i)
				}
			}
		})
	}
}

// Lemma 5.2: for q = 1 and integral L, Algorithm 4's row i is
// pi_{i,j} = delta e^{(i-j) eps} for 0 <= i-j <= L, delta e^{(2L-(i-j)) eps}
// for L < i-j <= 2L, 0 otherwise (to 1e-12) -- for both methods, which
// coincide there (Algorithm 5 == Algorithm 4).
func TestFrequencyRowsLemma52(t *testing.T) {
	t.Parallel()
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		for _, tc := range []struct {
			eps float64
			l   int
		}{{0.1, 5}, {0.1, 30}, {0.5, 10}, {1, 3}, {2, 4}, {3, 1}} {
			t.Run(fmt.Sprintf("%s,eps=%g,L=%d", m, tc.eps, tc.l), func(t *testing.T) {
				d := sanitizetest.IntegralDelta(tc.eps, tc.l)
				p := mustPrivacy(t, tc.eps, d)
				tb := mustTable(t, p, Sampling{Scheme: SchemeNone}, m)
				n := int64(4*tc.l + 12)
				for _, r := range rowsOf(t, tb, n) {
					i := r.Frequency
					for _, pc := range r.Pieces {
						if pc.Lo != math.Floor(pc.Lo) || pc.Hi != pc.Lo+1 {
							t.Fatalf("%s eps=%g L=%d row %d: piece (%v, %v] is not an integer token", m, tc.eps, tc.l, i, pc.Lo, pc.Hi)
						}
					}
					for j := int64(1); j <= i; j++ {
						want := sanitizetest.Lemma52(tc.eps, d, int64(tc.l), i, j)
						if got := tokenMass(r, j); math.Abs(got-want) > 1e-12 {
							t.Errorf("%s eps=%g L=%d: pi_{%d,%d} = %.17g, Lemma 5.2 %.17g", m, tc.eps, tc.l, i, j, got, want)
						}
					}
				}
			})
		}
	}
}

// The sparse, rounding-safe Algorithm 4 equals a literal dense port of the
// paper's pseudo-code (to 1e-12 absolute) for every kind of sampling.
func TestAlgorithm4MatchesDenseReference(t *testing.T) {
	t.Parallel()
	samplings := []Sampling{
		{Scheme: SchemeNone},
		mustSampling(t, SchemePPSWOR, 0.05, 1, nil),
		mustSampling(t, SchemePriority, 0.002, 1.5, nil),
		mustSampling(t, SchemeCustom, 0, 0, []float64{1e-7, 1e-5, 0.001, 0.01, 0.3, 0.3, 0.5, 0.9}),
	}
	for _, pr := range [][2]float64{{0.1, 1e-6}, {0.5, 1e-3}, {1, 1e-9}, {2, 0.05}, {0.05, 0.2}} {
		p := mustPrivacy(t, pr[0], pr[1])
		for _, s := range samplings {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s", pr[0], pr[1], s.Scheme), func(t *testing.T) {
				n := 160
				dense := sanitizetest.DenseAlgorithm4(pr[0], pr[1], s.Q, n)
				tb := mustTable(t, p, s, MethodDiscrete)
				for _, r := range rowsOf(t, tb, int64(n)) {
					i := r.Frequency
					worst := math.Abs(r.Pi - (1 - dense[i][0]))
					for j := int64(1); j <= i; j++ {
						worst = math.Max(worst, math.Abs(tokenMass(r, j)-dense[i][j]))
					}
					if worst > 1e-12 {
						t.Fatalf("eps=%g delta=%g %s: row %d differs from the dense reference by %g", pr[0], pr[1], s.Scheme, i, worst)
					}
				}
			})
		}
	}
}

// Algorithm 5 equals Algorithm 4 when q = 1 and L is integral: its pieces
// are integer tokens and every token has the same probability (to 1e-12).
func TestAlgorithm5EqualsAlgorithm4IntegralL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps float64
		l   int
	}{{0.1, 8}, {0.5, 6}, {1, 5}, {2, 2}} {
		t.Run(fmt.Sprintf("eps=%g,L=%d", tc.eps, tc.l), func(t *testing.T) {
			p := mustPrivacy(t, tc.eps, sanitizetest.IntegralDelta(tc.eps, tc.l))
			n := int64(6*tc.l + 20)
			r4 := rowsOf(t, mustTable(t, p, Sampling{Scheme: SchemeNone}, MethodDiscrete), n)
			r5 := rowsOf(t, mustTable(t, p, Sampling{Scheme: SchemeNone}, MethodMaxSeparation), n)
			for k := range r4 {
				a, b := r4[k], r5[k]
				if math.Abs(a.Pi-b.Pi) > 1e-12 {
					t.Fatalf("eps=%g L=%d row %d: pi %v vs %v", tc.eps, tc.l, a.Frequency, a.Pi, b.Pi)
				}
				for _, pc := range b.Pieces {
					if pc.Lo != math.Floor(pc.Lo) || pc.Hi != pc.Lo+1 {
						t.Fatalf("eps=%g L=%d row %d: Algorithm 5 piece (%v, %v] is not an integer token", tc.eps, tc.l, a.Frequency, pc.Lo, pc.Hi)
					}
				}
				for j := int64(1); j <= a.Frequency; j++ {
					if d := math.Abs(tokenMass(a, j) - tokenMass(b, j)); d > 1e-12 {
						t.Fatalf("eps=%g L=%d row %d token %d: differs by %g", tc.eps, tc.l, a.Frequency, j, d)
					}
				}
			}
		})
	}
}

// A consequence of the tail form of both constructions (S_i = h_i(S_{i-1})
// pointwise, with the same h_i): Algorithm 5's row, integrated over each
// integer token (j-1, j], is Algorithm 4's row, for any sampling. Algorithm 5
// only refines the tokens. (Tolerance: break points of Algorithm 5 are on a
// 2^-20 grid, which moves mass by up to ~1e-7 times the local density.)
func TestAlgorithm5RefinesAlgorithm4(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	for _, pr := range [][2]float64{{0.1, 1e-6}, {0.7, 1e-4}, {2, 1e-9}} {
		p := mustPrivacy(t, pr[0], pr[1])
		for _, s := range []Sampling{{Scheme: SchemeNone}, mustSampling(t, SchemePPSWOR, 0.01, 1, nil), mustSampling(t, SchemePriority, 0.01, 0.7, nil)} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s", pr[0], pr[1], s.Scheme), func(t *testing.T) {
				n := int64(300)
				r4 := rowsOf(t, mustTable(t, p, s, MethodDiscrete), n)
				r5 := rowsOf(t, mustTable(t, p, s, MethodMaxSeparation), n)
				worst := 0.0
				for k := range r4 {
					for j := int64(1); j <= r4[k].Frequency; j++ {
						worst = math.Max(worst, math.Abs(tokenMass(r4[k], j)-tokenMass(r5[k], j)))
					}
				}
				if worst > 1e-6 {
					t.Errorf("eps=%g delta=%g %s: Algorithm 5 aggregated to tokens differs from Algorithm 4 by %g", pr[0], pr[1], s.Scheme, worst)
				}
				t.Logf("eps=%g delta=%g %s: max token difference %.3g", pr[0], pr[1], s.Scheme, worst)
			})
		}
	}
}

// Corollary 6.1: Algorithm 5 orders every pair of frequencies i > h at
// least as well as Algorithm 4. Ordering probability = P(V_i > V_h) +
// P(V_i = V_h)/2, where "not reported" is the value 0 below every reported
// value (so a reported key beats an unreported one, and two unreported keys
// tie) and two values inside the same elementary interval tie in
// distribution (they count half); Algorithm 4's values are the tokens j.
func TestAlgorithm5OrdersPairsAtLeastAsWellAsAlgorithm4(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	const n = 45
	for _, pr := range [][2]float64{{0.3, 1e-3}, {1, 1e-4}, {0.1, 0.02}} {
		p := mustPrivacy(t, pr[0], pr[1])
		for _, s := range []Sampling{{Scheme: SchemeNone}, mustSampling(t, SchemePPSWOR, 0.03, 1, nil), mustSampling(t, SchemeCustom, 0, 0, []float64{0.01, 0.2, 0.2, 0.25, 0.6, 0.6, 0.7, 1})} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s", pr[0], pr[1], s.Scheme), func(t *testing.T) {
				r4 := rowsOf(t, mustTable(t, p, s, MethodDiscrete), n)
				r5 := rowsOf(t, mustTable(t, p, s, MethodMaxSeparation), n)
				gain, pairs := 0.0, 0
				for i := 1; i < n; i++ {
					for h := 0; h < i; h++ {
						c4, c5 := concordance(r4[i], r4[h]), concordance(r5[i], r5[h])
						if c5 < c4-1e-12 {
							t.Errorf("eps=%g delta=%g %s: pair (%d, %d) ordered with probability %.15f by Algorithm 5 < %.15f by Algorithm 4",
								pr[0], pr[1], s.Scheme, i+1, h+1, c5, c4)
						}
						gain = math.Max(gain, c5-c4)
						pairs++
					}
				}
				t.Logf("eps=%g delta=%g %s: %d pairs, largest gain of Algorithm 5 %.4g", pr[0], pr[1], s.Scheme, pairs, gain)
			})
		}
	}
}

// The concordance helper itself: a row against itself orders with
// probability exactly 1/2, and it is not symmetric in a wrong way.
func TestConcordanceHelper(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-3)
	rows := rowsOf(t, mustTable(t, p, Sampling{Scheme: SchemeNone}, MethodMaxSeparation), 30)
	for _, r := range rows {
		if c := concordance(r, r); math.Abs(c-0.5) > 1e-12 {
			t.Fatalf("row %d against itself: %g", r.Frequency, c)
		}
	}
	a, b := rows[29], rows[3]
	if s := concordance(a, b) + concordance(b, a); math.Abs(s-1) > 1e-12 {
		t.Fatalf("P(a>b) + P(b>a) = %g, want 1", s)
	}
	if concordance(a, b) < 0.99 {
		t.Fatalf("frequency 30 vs 4 should be ordered almost surely, got %g", concordance(a, b))
	}
}

// TestBuild5MatchesPlain: build5, step5's fast row builder, writes the
// same pieces, values, cut points and partial sums bit for bit as its plain
// reference build5Plain, for the rows of Algorithm 5 tables across the
// regimes (small and large epsilon, the stationary cycle, tiny delta) and
// for every cut (lowEnd, cpos) at a break point, on the grid inside a
// piece, or at the ends, lowEnd <= cpos as step5 has them.
// TestScaleRunMatchesPlain: scaleRun (registers, pairs, no call in its
// loop) gives the values and both sums of scaleRunPlain (ceilDiv1 or
// floorMul1 and ddSum.add, one piece at a time) bit for bit, on runs of
// every length up to 41, from sums already under way, on both sides of the
// cut, at four epsilons; a run with a product below 2^-1000 (masses down to
// the subnormals, and zeros) takes the plain loop, one without takes the
// fast one, and both kinds occur.
func TestScaleRunMatchesPlain(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	bits := func(v []float64) []uint64 {
		out := make([]uint64, len(v))
		for k, x := range v {
			out[k] = math.Float64bits(x)
		}
		return out
	}
	sumBits := func(a, b ddSum) [4]uint64 {
		return [4]uint64{math.Float64bits(a.s), math.Float64bits(a.c), math.Float64bits(b.s), math.Float64bits(b.c)}
	}
	for _, eps := range []float64{0.1, 0.5, 1, 4} {
		c := mustTable(t, mustPrivacy(t, eps, 1e-6), mustSampling(t, SchemePPSWOR, 1e-4, 1, nil), MethodMaxSeparation).c
		tinyRuns, plainRuns := 0, 0
		for n := range 42 {
			for trial := range 40 {
				pm := make([]float64, n)
				tiny := trial%4 == 3
				for k := range pm {
					pm[k] = rng.Float64() * math.Ldexp(1, -rng.IntN(60))
					if tiny && rng.IntN(4) == 0 {
						// Down to the subnormals (and zero): products below 2^-1000.
						pm[k] = math.Ldexp(rng.Float64(), -990-rng.IntN(90))
					}
				}
				a := ddSum{s: rng.Float64(), c: rng.Float64() * 0x1p-60}
				b := ddSum{s: rng.Float64() * 0.5, c: -rng.Float64() * 0x1p-61}
				for _, below := range []bool{true, false} {
					fast, plain := make([]float64, n), make([]float64, n)
					fa, fb := c.scaleRun(fast, pm, below, a, b)
					pa, pb := c.scaleRunPlain(plain, pm, below, a, b)
					if !slices.Equal(bits(fast), bits(plain)) || sumBits(fa, fb) != sumBits(pa, pb) {
						t.Fatalf("eps %g, %d masses, below %v: scaleRun and scaleRunPlain differ", eps, n, below)
					}
					if slices.ContainsFunc(plain, func(v float64) bool { return v < 0x1p-1000 }) {
						tinyRuns++
					} else {
						plainRuns++
					}
				}
			}
		}
		if tinyRuns == 0 || plainRuns == 0 {
			t.Fatalf("eps %g: %d runs with a tiny product, %d without: the test must take both paths", eps, tinyRuns, plainRuns)
		}
	}
}

// TestLocateTailMatchesPlain: locateTail (its tail sum in registers)
// returns locateTailPlain's position (a ddSum) bit for bit, on the rows of
// tables at four epsilons, for needs at every piece's tail (the tail
// above it, plus a random part of the piece, plus or minus an ulp or two)
// and for a need beyond the row's mass.
func TestLocateTailMatchesPlain(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	for _, eps := range []float64{0.1, 0.5, 1, 4} {
		tb := mustTable(t, mustPrivacy(t, eps, 1e-6), mustSampling(t, SchemePPSWOR, 1e-4, 1, nil), MethodMaxSeparation)
		e := tb.c.e
		cu := tb.startFor(1, nil, nil)
		compared := 0
		if err := tb.walk(t.Context(), cu, 1, 300, func(r *rowState, d int64) bool {
			if d != 0 {
				return false
			}
			if r.i%7 != 0 {
				return true
			}
			var tail ddSum
			for k := len(r.m) - 1; k >= 0; k-- {
				for _, u := range []float64{0, rng.Float64(), 1} {
					at := tail.dd().addF(u * r.m[k])
					for _, ulps := range []float64{-2, 0, 1} {
						need := at.addF(ulps * 0x1p-52 * at.hi)
						if got, want := locateTail(r, need, e), locateTailPlain(r, need, e); math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("eps %g row %d piece %d: locateTail %v, plain %v", eps, r.i, k, got, want)
						}
						compared++
					}
				}
				tail.add(r.m[k])
			}
			beyond := tail.dd().mulF(2)
			if got, want := locateTail(r, beyond, e), locateTailPlain(r, beyond, e); got != want {
				t.Fatalf("eps %g row %d: beyond the mass, locateTail %v, plain %v", eps, r.i, got, want)
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if compared < 1000 {
			t.Fatalf("eps %g: only %d needs compared", eps, compared)
		}
	}
}

func TestBuild5MatchesPlain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		eps, delta, tau float64
		n               int64
	}{{0.1, 1e-6, 1e-4, 400}, {0.5, 1e-6, 0.01, 300}, {1, 1e-9, 2e-5, 300}, {4, 1e-12, 1e-3, 120}}
	for _, tc := range cases {
		tb := mustTable(t, mustPrivacy(t, tc.eps, tc.delta), mustSampling(t, SchemePPSWOR, tc.tau, 1, nil), MethodMaxSeparation)
		cu := tb.startFor(1, nil, nil)
		rng := rand.New(rand.NewPCG(uint64(tc.n), 7))
		compared := 0
		if err := tb.walk(t.Context(), cu, 1, tc.n, func(r *rowState, d int64) bool {
			if d != 0 || len(r.m) == 0 {
				return d == 0
			}
			prev := r.clone()
			// Cuts: the break points, grid points inside pieces, both ends.
			var cuts []float64
			for k, v := range prev.x {
				cuts = append(cuts, v)
				if k+1 < len(prev.x) {
					w := prev.x[k+1] - v
					cuts = append(cuts, v+math.Floor(rng.Float64()*w*gridScale)/gridScale)
				}
			}
			for range 12 {
				lowEnd, cpos := cuts[rng.IntN(len(cuts))], cuts[rng.IntN(len(cuts))]
				if lowEnd > cpos {
					lowEnd, cpos = cpos, lowEnd
				}
				var fast, plain rowState
				var scF, scP scratch5
				f1, f2 := tb.c.build5(prev, lowEnd, cpos, &fast, &scF)
				p1, p2 := tb.c.build5Plain(prev, lowEnd, cpos, &plain, &scP)
				if f1 != p1 || f2 != p2 || !slices.Equal(fast.x, plain.x) || !slices.Equal(fast.m, plain.m) ||
					!slices.Equal(scF.newPts, scP.newPts) {
					t.Fatalf("eps %g row %d cut (%v, %v): build5 and build5Plain differ", tc.eps, prev.i, lowEnd, cpos)
				}
				compared++
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if compared < int(tc.n) {
			t.Fatalf("eps %g: compared %d cuts over %d rows", tc.eps, compared, tc.n)
		}
	}
}
