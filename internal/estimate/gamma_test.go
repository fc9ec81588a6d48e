package estimate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// poissonCDF is P(X <= x) for X ~ Poisson(m), summed term by term.
func poissonCDF(x int, m float64) float64 {
	s := 0.0
	for k := 0; k <= x; k++ {
		lg, _ := math.Lgamma(float64(k + 1))
		s += math.Exp(-m + float64(k)*math.Log(m) - lg)
	}
	return s
}

// bisect returns the m in [0, 200] where f(m) crosses from true to false.
func bisect(f func(m float64) bool) float64 {
	lo, hi := 0.0, 200.0
	for range 200 {
		if mid := (lo + hi) / 2; f(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// TestGammaIntervalIsGarwood: with every weight 1 (v = y, unseen weight 1)
// the Fay-Feuer interval is the exact Garwood interval of a Poisson count:
// the means at which P(X >= y) and P(X <= y) are 2.5%. The oracle finds them
// by bisection on the Poisson CDF summed term by term (no gamma function),
// and matches the published tables (y = 0: [0, 3.6889]; y = 1: [0.0253,
// 5.5716]; y = 10: [4.7954, 18.3904]).
func TestGammaIntervalIsGarwood(t *testing.T) {
	t.Parallel()
	for _, y := range []int{0, 1, 2, 5, 10, 20, 50} {
		t.Run(fmt.Sprint(y), func(t *testing.T) {
			hi := bisect(func(m float64) bool { return poissonCDF(y, m) > 0.025 })
			lo := 0.0
			if y > 0 {
				lo = bisect(func(m float64) bool { return 1-poissonCDF(y-1, m) < 0.025 })
			}
			iv := GammaInterval(float64(y), float64(y), 1, 0.95)
			if math.Abs(iv.Lower-lo) > 1e-8*(1+lo) || math.Abs(iv.Upper-hi) > 1e-8*hi {
				t.Errorf("y = %d: [%.9f, %.9f], want Garwood's [%.9f, %.9f]", y, iv.Lower, iv.Upper, lo, hi)
			}
		})
	}
}

// TestGammaQuantile checks the quantile against closed forms: shape 1 is
// the exponential, -scale ln(1-p); chi-square with 2 dof likewise; and the
// normal limit at a huge shape; and that it inverts the regularized gamma.
func TestGammaQuantile(t *testing.T) {
	t.Parallel()
	for _, p := range []float64{0.001, 0.025, 0.5, 0.975, 0.999} {
		if got, want := GammaQuantile(1, 3, p), -3*math.Log1p(-p); !relClose(got, want, 1e-12) {
			t.Errorf("exponential p=%g: %g, want %g", p, got, want)
		}
	}
	// chi2_1(0.95) = 3.841458820694124 (1.959964^2).
	if got := 2 * GammaQuantile(0.5, 1, 0.95); !relClose(got, 3.841458820694124, 1e-10) {
		t.Errorf("chi2_1(0.95) = %g", got)
	}
	for _, shape := range []float64{1e6, 1e13} {
		z := 1.959963984540054
		want := shape + z*math.Sqrt(shape)
		if got := GammaQuantile(shape, 1, 0.975); !relClose(got, want, 2e-6) {
			t.Errorf("shape %g: %g, want near the normal %g", shape, got, want)
		}
	}
}

// TestGammaIntervalEdges: y = 0 gives lower 0; v = 0 with y > 0 gives lower
// y; an infinite unseen weight an infinite upper end; many keys the normal
// interval, shifted up by about the unseen weight.
func TestGammaIntervalEdges(t *testing.T) {
	t.Parallel()
	if iv := GammaInterval(0, 0, 1000, 0.95); iv.Lower != 0 || !relClose(iv.Upper, 1000*math.Log(40), 1e-12) {
		t.Errorf("y = 0: %+v, want [0, 1000 ln 40]", iv)
	}
	if iv := GammaInterval(5, 0, 0, 0.95); iv.Lower != 5 || iv.Upper != 5 {
		t.Errorf("y = 5, v = 0, w = 0: %+v, want [5, 5]", iv)
	}
	if iv := GammaInterval(5, 1, math.Inf(1), 0.95); !math.IsInf(iv.Upper, 1) {
		t.Errorf("infinite unseen weight: %+v", iv)
	}
	y, v := 1e8, 1e10 // shape 1e6
	iv := GammaInterval(y, v, 100, 0.95)
	hw := 1.959963984540054 * 1e5
	if math.Abs(iv.Lower-(y-hw)) > 0.01*hw || math.Abs(iv.Upper-(y+100+hw)) > 0.01*hw {
		t.Errorf("many keys: %+v, want about [%g, %g]", iv, y-hw, y+100+hw)
	}
}

// TestUnseenWeight checks the unseen weight against closed forms: none
// sampling 0; priority q = tau i: sup i (1-tau i)/(tau i) over i > 2L+1 is
// 1/tau - (2L+2), and twice the sampling part at from in the window; count
// under ppswor, 2 (1-q)/q at from; custom, unbounded beyond the list unless
// a top is given.
func TestUnseenWeight(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(1, 1e-6)
	L := sanitize.L(p)
	window := int64(math.Floor(2*L)) + 1
	id, ct := mustG("identity"), mustG("count")
	pri := mustSampling(sanitize.SchemePriority, 1e-3, nil)
	pps := mustSampling(sanitize.SchemePPSWOR, 1e-4, nil)
	cus := mustSampling(sanitize.SchemeCustom, 0, []float64{0.1, 0.5})
	for _, c := range []struct {
		name string
		g    G
		s    sanitize.Sampling
		from int64
		top  float64
		want float64
	}{
		{"none", id, mustSampling(sanitize.SchemeNone, 0, nil), 10, math.Inf(1), 0},
		{"priority beyond the window", id, pri, window + 1, math.Inf(1), 1/1e-3 - float64(window+1)},
		{"priority in the window", id, pri, 5, math.Inf(1), 2 * (1/1e-3 - 5)},
		{"count ppswor", ct, pps, 20, math.Inf(1), 2 * math.Exp(-20e-4) / -math.Expm1(-20e-4)},
		{"custom with a top", id, cus, window + 1, 1000, 1000 * 0.5 / 0.5},
		{"custom unbounded", id, cus, window + 1, math.Inf(1), math.Inf(1)},
		{"custom count", ct, cus, window + 1, math.Inf(1), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := UnseenWeight(c.g, p, c.s, c.from, c.top)
			if !(got == c.want || relClose(got, c.want, 1e-9)) {
				t.Errorf("UnseenWeight = %g, want %g", got, c.want)
			}
		})
	}
}

// TestPoissonSample: the simulations' sampler keeps each key with
// probability q_{w_k} exactly. Over 20,000 draws of 60 keys (q from 0.95 down
// to 0.001) every key's inclusion rate is within 4.5 binomial standard
// deviations of q (false-alarm rate about 4e-4 over the 60 keys); a sampler
// that forgot the thinning step would keep the light keys at the heavier
// keys' rate, dozens of deviations off.
func TestPoissonSample(t *testing.T) {
	t.Parallel()
	w := make([]int64, 60)
	for k := range w {
		w[k] = max(1, int64(3000/(k+1)/(k+1)))
	}
	s := mustSampling(sanitize.SchemePPSWOR, 1e-3, nil)
	const draws = 20_000
	counts := make([]int, len(w))
	rng := dprand.Seeded(77)
	for range draws {
		for _, k := range poissonSample(w, s, rng) {
			counts[k]++
		}
	}
	for k, c := range counts {
		q := s.Q(w[k])
		if sd := math.Sqrt(draws * q * (1 - q)); math.Abs(float64(c)-draws*q) > 4.5*sd+1e-9 {
			t.Errorf("key %d (w %d): kept %d of %d, want %.1f (q %.4f, sd %.1f)", k, w[k], c, draws, draws*q, q, sd)
		}
	}
}

// TestFewKeysNeverReliable: an answer over no selected key is 0 with the
// interval [0, ln(40) w] (no key seen: the Poisson upper limit 3.69 of one
// unseen weight w) and is not reliable; nor is one over a single key,
// whatever its frequency; two keys of similar weight can be.
func TestFewKeysNeverReliable(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(1, 1e-6)
	s := mustSampling(sanitize.SchemePPSWOR, 1e-3, nil)
	h := newHonestTables(t, p, s, sanitize.MethodMaxSeparation, 4000)
	zero, err := SumWithError(h.identity, nil, 0.95, p, s)
	if err != nil {
		t.Fatal(err)
	}
	if zero.Reliability.Reliable || zero.Reliability.Note == "" || zero.Interval.Lower != 0 ||
		!relClose(zero.Interval.Upper, math.Log(40)*zero.UnseenWeight, 1e-9) || zero.UnseenWeight < 900 {
		t.Errorf("no key: %+v, want unreliable with a note and [0, ln40 w], w about 1/tau", zero)
	}
	rng := dprand.Seeded(5)
	var keys []ReportedKey
	for len(keys) < 2 {
		outs, err := h.st.DrawAll([]int64{500}, rng, nil)
		if err != nil {
			t.Fatal(err)
		}
		if outs[0].Reported {
			f, err := MLEFrequency(h.identity, h.count, outs[0].Value)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, ReportedKey{Value: outs[0].Value, Frequency: f})
		}
	}
	one, err := SumWithError(h.identity, keys[:1], 0.95, p, s)
	if err != nil {
		t.Fatal(err)
	}
	if one.Reliability.Reliable || one.Reliability.EffectiveKeys != 1 || one.Reliability.Note == "" {
		t.Errorf("one key: %+v, want unreliable, one effective key, a note", one.Reliability)
	}
	two, err := SumWithError(h.identity, keys, 0.95, p, s)
	if err != nil {
		t.Fatal(err)
	}
	if two.Reliability.EffectiveKeys < 1.9 || two.Reliability.EffectiveKeys > 2 {
		t.Errorf("two keys of frequency 500: %g effective keys, want about 2", two.Reliability.EffectiveKeys)
	}
}
