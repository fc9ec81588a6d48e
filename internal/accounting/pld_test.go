package accounting

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
)

// slack is the absolute error the PLD may carry beyond rounding losses up:
// tail truncation (TailBound a composition) and convolution rounding.
const slack = 1e-11

// checkBracket asserts exact(e) <= got(e) <= exact(e - shift) + slack at
// each e: pessimistic, and no worse than shifting every composed loss up by
// the grid's rounding (shift).
func checkBracket(t *testing.T, p *PLD, exact func(float64) float64, shift, tol float64, es []float64) {
	t.Helper()
	for _, e := range es {
		got, lo, hi := p.Delta(e), exact(e), exact(e-shift)
		if got < lo-tol || got > hi+tol+slack {
			t.Errorf("Delta(%g) = %.6g, want in [exact %.6g, exact at e-%.3g %.6g]", e, got, lo, shift, hi)
		}
	}
}

func TestGenericMatchesKOV(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	h := g.Step()
	for _, c := range []struct {
		eps, delta float64
		k          int
	}{
		{0.1, 1e-9, 128}, {0.05, 1e-9, 504}, {0.5, 1e-8, 100}, {0.25, 1e-8, 24},
		{1, 0, 7}, {0.3, 1e-6, 1}, {0, 1e-3, 5}, {2, 0.01, 3},
	} {
		t.Run(fmt.Sprintf("%g_%g_x%d", c.eps, c.delta, c.k), func(t *testing.T) {
			t.Parallel()
			one, err := Generic(g, c.eps, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			p, err := one.SelfCompose(c.k)
			if err != nil {
				t.Fatal(err)
			}
			shift := float64(c.k) * h
			exact := func(e float64) float64 { return kovDelta(c.k, c.eps, c.delta, e) }
			top := float64(c.k) * c.eps
			es := []float64{0, 0.1 * top, 0.3 * top, 0.5 * top, 0.8 * top, top, top + 1}
			checkBracket(t, p, exact, shift, 1e-12, es)
			for _, target := range []float64{1e-5, 1e-3, 0.1} {
				if 1-math.Pow(1-c.delta, float64(c.k)) >= target {
					if got := p.Epsilon(target); !math.IsInf(got, 1) {
						t.Errorf("Epsilon(%g) = %g, want +Inf: the delta outcomes alone exceed it", target, got)
					}
					continue
				}
				want := bisectEpsilon(exact, target, top+1)
				got := p.Epsilon(target)
				if got < want-1e-9 || got > want+shift+1e-9 {
					t.Errorf("Epsilon(%g) = %.6f, want in [%.6f, %.6f]", target, got, want, want+shift)
				}
			}
		})
	}
}

// TestAdmitsTargets checks the targets for a budget (5, 1e-5) and
// that the PLD never admits more than the exact optimum (it is pessimistic).
func TestAdmitsTargets(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	for _, c := range []struct {
		eps, delta float64
		atLeast    int
	}{
		{0.5, 1e-8, 10}, {0.5, 0, 10}, {0.25, 1e-8, 23}, {0.1, 1e-9, 125}, {0.05, 1e-9, 490},
	} {
		t.Run(fmt.Sprintf("%g_%g", c.eps, c.delta), func(t *testing.T) {
			t.Parallel()
			id, _ := Identity(g)
			q, err := Generic(g, c.eps, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			n, err := id.Admits(q, 5, 1e-5, 10000)
			if err != nil {
				t.Fatal(err)
			}
			optimum := kovCount(5, 1e-5, c.eps, c.delta)
			t.Logf("(%g, %g): pld admits %d, exact optimum %d, basic %d", c.eps, c.delta, n, optimum, int(math.Floor(5/c.eps+1e-9)))
			if n < c.atLeast || n > optimum {
				t.Errorf("admits %d releases, want in [%d, optimum %d]", n, c.atLeast, optimum)
			}
		})
	}
}

func TestLaplaceMatchesClosedForm(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	h := g.Step()
	for _, eps := range []float64{0.1, 0.5, 1.3} {
		t.Run(fmt.Sprint(eps), func(t *testing.T) {
			t.Parallel()
			one, err := Laplace(g, eps)
			if err != nil {
				t.Fatal(err)
			}
			d1 := func(e float64) float64 { return laplaceDelta1(eps, e) }
			es := []float64{0, eps / 4, eps / 2, 0.9 * eps, eps, 1.5 * eps, 2.5 * eps}
			checkBracket(t, one, d1, h, 1e-13, es)
			// Two and three Laplace by quadrature of the closed form; Simpson on
			// 4000 intervals of a function with two kinks is accurate to ~1e-8.
			d2 := laplaceComposeOnce(eps, d1, 4000)
			two, err := one.Compose(one)
			if err != nil {
				t.Fatal(err)
			}
			checkBracket(t, two, d2, 2*h, 1e-7, es)
			d3 := laplaceComposeOnce(eps, d2, 400)
			three, err := two.Compose(one)
			if err != nil {
				t.Fatal(err)
			}
			checkBracket(t, three, d3, 3*h, 1e-5, []float64{0, eps, 2 * eps, 2.9 * eps})
		})
	}
}

// TestDiscreteLaplaceUnitIsRandomizedResponse: the discrete Laplace
// mechanism of sensitivity 1 has exactly the generic (eps, 0) pair's PLD;
// of sensitivity 3 it is compared with its explicit distributions (the
// outcomes beyond +-60 carry less than 1e-15 together).
func TestDiscreteLaplace(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	for _, eps := range []float64{0.2, 1} {
		dl, err := DiscreteLaplace(g, eps, 1)
		if err != nil {
			t.Fatal(err)
		}
		rr, _ := Generic(g, eps, 0)
		for _, e := range []float64{0, eps / 2, eps} {
			if a, b := dl.Delta(e), rr.Delta(e); math.Abs(a-b) > 1e-15 {
				t.Errorf("eps %g: discrete Laplace Delta(%g) = %g, generic %g", eps, e, a, b)
			}
		}
		dl3, err := DiscreteLaplace(g, eps, 3)
		if err != nil {
			t.Fatal(err)
		}
		a := math.Exp(-eps / 3)
		var ps, qs []float64
		for y := -200; y <= 203; y++ {
			ps = append(ps, (1-a)/(1+a)*math.Pow(a, math.Abs(float64(y))))
			qs = append(qs, (1-a)/(1+a)*math.Pow(a, math.Abs(float64(y-3))))
		}
		exact := func(e float64) float64 { return bruteDelta([][]float64{ps, ps}, [][]float64{qs, qs}, e) }
		two, _ := dl3.Compose(dl3)
		checkBracket(t, two, exact, 2*g.Step()+1e-9, 1e-12, []float64{0, eps / 3, eps, 1.5 * eps})
	}
}

func TestCompositionOrderIrrelevant(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	a, _ := Generic(g, 0.3, 1e-7)
	b, _ := Laplace(g, 0.2)
	c, _ := DiscreteLaplace(g, 0.5, 3)
	d, _ := Generic(g, 0.05, 0)
	orders := [][]*PLD{{a, b, c, d}, {d, c, b, a}, {b, d, a, c}, {c, a, d, b}}
	var first *PLD
	for i, o := range orders {
		p, _ := Identity(g)
		for _, m := range o {
			var err error
			if p, err = p.Compose(m); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			first = p
			continue
		}
		for _, e := range []float64{0, 0.3, 0.6, 1, 1.05} {
			if x, y := first.Delta(e), p.Delta(e); math.Abs(x-y) > 1e-12 {
				t.Errorf("order %d: Delta(%g) = %.15g, first order %.15g", i, e, y, x)
			}
		}
		if x, y := first.Epsilon(1e-6), p.Epsilon(1e-6); math.Abs(x-y) > 1e-9 {
			t.Errorf("order %d: Epsilon(1e-6) = %.12g, first order %.12g", i, y, x)
		}
	}
}

// TestPessimisticAgainstBruteForce composes small explicit mechanisms (with
// outcomes one side cannot produce) and compares every answer with the
// exact divergence of the product distributions, summed over all outcome
// sequences.
func TestPessimisticAgainstBruteForce(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	pairs := []struct{ p, q []float64 }{
		{[]float64{0.5, 0.3, 0.2}, []float64{0.2, 0.3, 0.5}},
		{[]float64{0.7, 0.2, 0.1, 0}, []float64{0.6, 0.1, 0.1, 0.2}},
		{[]float64{0.01, 0.5, 0.49}, []float64{0, 0.45, 0.55}},
		{[]float64{0.25, 0.25, 0.25, 0.25}, []float64{0.1, 0.2, 0.3, 0.4}},
	}
	plds := make([]*PLD, len(pairs))
	for i, pr := range pairs {
		var err error
		if plds[i], err = FromDistributions(g, pr.p, pr.q); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range [][]int{{0}, {0, 1}, {2, 2, 2}, {0, 1, 2, 3}, {3, 3, 1, 1, 0}, {2, 0, 3, 1, 2, 0}} {
		t.Run(fmt.Sprint(seq), func(t *testing.T) {
			t.Parallel()
			var ps, qs [][]float64
			p, _ := Identity(g)
			for _, m := range seq {
				ps, qs = append(ps, pairs[m].p), append(qs, pairs[m].q)
				p, _ = p.Compose(plds[m])
			}
			exact := func(e float64) float64 { return bruteDelta(ps, qs, e) }
			shift := float64(len(seq)) * (g.Step() + 1e-10)
			checkBracket(t, p, exact, shift, 1e-13, []float64{0, 0.1, 0.4, 0.9, 1.7, 3})
		})
	}
}

// TestBasicNeverBelowPLD: for random mixes of generic releases, the PLD's
// epsilon at the summed delta is at most the summed epsilon (plus the
// grid's rounding, which the ledger removes by taking the smaller of both).
func TestBasicNeverBelowPLD(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	rng := rand.New(rand.NewPCG(35, 1))
	for trial := range 20 {
		p, _ := Identity(g)
		sumEps, sumDelta := 0.0, 0.0
		k := 1 + rng.IntN(30)
		for range k {
			eps := []float64{0.01, 0.05, 0.1, 0.3, 1}[rng.IntN(5)]
			delta := []float64{0, 1e-9, 1e-7, 1e-6}[rng.IntN(4)]
			m, _ := Generic(g, eps, delta)
			p, _ = p.Compose(m)
			sumEps += eps
			sumDelta += delta
		}
		// The convolutions' rounding bounds (< 1e-12 here) sit in the
		// infinity mass, so the PLD is asked at the summed delta plus that.
		target := sumDelta + 1e-12
		if got := p.Epsilon(target); got > sumEps+float64(k)*g.Step()+1e-12 {
			t.Errorf("trial %d: PLD epsilon %g at delta %g exceeds basic %g", trial, got, target, sumEps)
		}
	}
}

// TestMassNeverDropped: after many compositions (FFT and direct), the finite
// mass plus the infinity mass is still at least 1: truncation and rounding
// moved mass, never removed it.
func TestMassNeverDropped(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	lap, _ := Laplace(g, 0.1)
	gen, _ := Generic(g, 0.07, 1e-9)
	p, _ := lap.SelfCompose(40)
	p, _ = p.Compose(gen)
	q, _ := gen.SelfCompose(300)
	p, _ = p.Compose(q)
	total := p.inf
	for _, m := range p.p {
		total += m
	}
	if total < 1-1e-12 {
		t.Errorf("total mass %.17g, want >= 1 - 1e-12", total)
	}
	if p.inf < 1-math.Pow(1-1e-9, 301) {
		t.Errorf("infinity mass %g below the releases' own deltas", p.inf)
	}
}

// TestYearOfLaplaceCounters: 365 daily Laplace releases at epsilon 0.1
// compose to far less than basic's 36.5, and to at most what the generic
// (0.1, 0) pair's closed form allows plus the grid (every 0.1-DP mechanism
// is dominated by that pair).
func TestYearOfLaplaceCounters(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	lap, _ := Laplace(g, 0.1)
	p, err := lap.SelfCompose(365)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Epsilon(1e-5)
	bound := bisectEpsilon(func(e float64) float64 { return kovDelta(365, 0.1, 0, e) }, 1e-5, 36.5)
	t.Logf("365 Laplace(0.1): PLD epsilon at 1e-5 = %.4f (generic-pair optimum %.4f, basic 36.5), %d grid points", got, bound, p.Len())
	if got > bound+365*g.Step() || got >= 36.5 {
		t.Errorf("epsilon %g above the generic bound %g + grid or basic 36.5", got, bound)
	}
}

func TestFromProfile(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	// The generic (0.5, 1e-6) pair from its profile: 0.5 is on the grid and
	// the dots every 64 points include +-0.5, so the PLDs agree.
	gen, _ := Generic(g, 0.5, 1e-6)
	fromGen, err := FromProfile(g, gen.Delta, 0.5, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []float64{0, 0.2, 0.5, 1} {
		if a, b := fromGen.Delta(e), gen.Delta(e); math.Abs(a-b) > 1e-12 {
			t.Errorf("generic from its profile: Delta(%g) = %g, want %g", e, a, b)
		}
	}
	// Laplace from its closed-form profile: above the exact curve, composed
	// once more above the exact two-fold curve, and close to both.
	eps := 0.7
	d1 := func(e float64) float64 { return laplaceDelta1(eps, e) }
	one, err := FromProfile(g, d1, eps, 16)
	if err != nil {
		t.Fatal(err)
	}
	es := []float64{0, 0.2, 0.5, 0.69, 1}
	checkBracket(t, one, d1, 16*g.Step(), 1e-12, es)
	two, _ := one.Compose(one)
	checkBracket(t, two, laplaceComposeOnce(eps, d1, 4000), 32*g.Step(), 1e-7, es)
}

func TestSelfComposeEqualsRepeated(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	m, _ := Laplace(g, 0.3)
	fast, err := m.SelfCompose(11)
	if err != nil {
		t.Fatal(err)
	}
	slow, _ := Identity(g)
	for range 11 {
		slow, _ = slow.Compose(m)
	}
	// They differ by the convolutions' rounding bounds each adds to the
	// infinity mass (a few 1e-12), not otherwise.
	for _, e := range []float64{0, 0.5, 1, 2, 3} {
		if a, b := fast.Delta(e), slow.Delta(e); math.Abs(a-b) > slack {
			t.Errorf("Delta(%g): squaring %.15g, one by one %.15g", e, a, b)
		}
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	g := DefaultGrid()
	other, _ := NewGrid(10)
	a, _ := Generic(g, 1, 0)
	b, _ := Generic(other, 1, 0)
	for _, c := range []struct {
		name   string
		err    error
		fields []string
	}{
		{"generic negative", func() error { _, err := Generic(g, -1, 2); return err }(), []string{"epsilon", "delta"}},
		{"generic NaN", func() error { _, err := Generic(g, math.NaN(), math.NaN()); return err }(), []string{"epsilon", "delta"}},
		{"generic huge", func() error { _, err := Generic(g, 51, 0); return err }(), []string{"epsilon"}},
		{"laplace", func() error { _, err := Laplace(g, math.Inf(1)); return err }(), []string{"epsilon"}},
		{"discrete", func() error { _, err := DiscreteLaplace(g, 1, 0); return err }(), []string{"sensitivity"}},
		{"grid", func() error { _, err := NewGrid(30); return err }(), []string{"grid_exponent"}},
		{"zero grid", func() error { _, err := Generic(Grid{}, 1, 0); return err }(), []string{"grid"}},
		{"distributions", func() error { _, err := FromDistributions(g, []float64{0.5, 0.6}, []float64{1}); return err }(), []string{"q", "p"}},
		{"profile stride", func() error { _, err := FromProfile(g, a.Delta, 1, 0); return err }(), []string{"stride"}},
		{"self compose", func() error { _, err := a.SelfCompose(-1); return err }(), []string{"count"}},
	} {
		fs, ok := checks.Fields(c.err)
		if !ok {
			t.Errorf("%s: error %v holds no field errors", c.name, c.err)
			continue
		}
		got := map[string]bool{}
		for _, f := range fs {
			got[f.Field] = true
		}
		for _, f := range c.fields {
			if !got[f] {
				t.Errorf("%s: error %v does not name %q", c.name, c.err, f)
			}
		}
	}
	if _, err := a.Compose(b); err == nil || errors.As(err, new(*checks.FieldError)) {
		t.Errorf("composing across grids: err = %v, want a plain error", err)
	}
	bad := func(e float64) float64 { return 2 }
	if _, err := FromProfile(g, bad, 1, 1); err == nil {
		t.Error("FromProfile accepted a profile of value 2")
	}
}
