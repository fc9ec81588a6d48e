package estimate

import (
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// GammaQuantile returns the p-quantile of the gamma distribution with the
// given shape and scale: scale * P^{-1}(shape, p), P the regularized lower
// incomplete gamma function, inverted by gonum's mathext.GammaIncRegInv (a
// Newton-Halley iteration on the exact P, accurate at every shape; the
// Wilson-Hilferty approximation is not, at the small shapes a few keys give).
// A chi-square quantile with k degrees of freedom is 2 GammaQuantile(k/2, 1, p).
// Shapes above 1e12 (a gamma indistinguishable from the normal) use the
// normal quantile mean + z sd. shape and scale must be positive and finite,
// 0 < p < 1.
func GammaQuantile(shape, scale, p float64) float64 {
	if shape > 1e12 {
		z := math.Sqrt2 * math.Erfinv(2*p-1)
		return scale * (shape + z*math.Sqrt(shape))
	}
	return scale * mathext.GammaIncRegInv(shape, p)
}

// GammaInterval is the interval of Fay and Feuer (1997, "Confidence
// intervals for directly standardized rates: a method based on the gamma
// distribution", Statistics in Medicine 16:791-801) for a weighted sum of
// Poisson counts Y = sum_k w_k X_k, at level (0 < level < 1), from the
// estimate y >= 0, its variance estimate v = sum_k w_k^2 x_k >= 0 and the
// weight w > 0 one more, unseen, event could carry:
//
//	lower = v/(2y) chi2_{alpha/2}(2y^2/v)                                 (0 when y = 0)
//	upper = (v+w^2)/(2(y+w)) chi2_{1-alpha/2}(2(y+w)^2/(v+w^2)),           alpha = 1 - level,
//
// that is, the alpha/2 quantile of the gamma with mean y and variance v, and
// the 1 - alpha/2 quantile of the gamma with mean y + w and variance v + w^2.
// With every weight 1 (v = y) it is the exact Garwood interval of a Poisson
// count; it is never shorter than it, and Fay and Feuer found it to keep its
// level where the normal interval does not (few events, unequal weights). As
// y^2/v grows the gamma tends to the normal and the interval to y -/+ z sqrt(v)
// (plus, above, the unseen event's share). v = 0 with y > 0 gives lower = y.
func GammaInterval(y, v, w, level float64) Interval {
	alpha := 1 - level
	iv := Interval{Level: level}
	switch {
	case y <= 0:
	case v <= 0:
		iv.Lower = y
	default:
		iv.Lower = GammaQuantile(y*y/v, v/y, alpha/2)
	}
	y, v = max(y, 0), max(v, 0)
	if !(w > 0) {
		w = 0
	}
	switch {
	case math.IsInf(w, 1):
		iv.Upper = math.Inf(1)
	case y+w == 0:
		iv.Upper = 0
	case v+w*w == 0:
		iv.Upper = y + w
	default:
		iv.Upper = GammaQuantile((y+w)*(y+w)/(v+w*w), (v+w*w)/(y+w), 1-alpha/2)
	}
	return iv
}

// unseenGrid is the ratio between consecutive frequencies at which
// UnseenWeight evaluates its supremum beyond the privacy window: the
// functions involved change by less than a few percent over it.
const unseenGrid = 1.01

// UnseenWeight is the weight w of GammaInterval's unseen event for a sum of
// g under sampling s and privacy p: the largest Poisson-equivalent weight
// that the client's sampling gives a key the release did not show, over the
// frequencies i >= from (supported_from) up to top.
//
// A key of frequency i enters the sum with probability pi_i = q_i r_i
// (sampled with q_i, then reported by the privacy mechanism with r_i =
// pi_i/q_i) and weight g(i)/pi_i: mean g(i), variance g(i)^2 (1-pi_i)/pi_i.
// The weighted Poisson term w X with the same mean and variance has w =
// variance/mean = g(i) (1-pi_i)/pi_i, which splits as
//
//	g(i) (1-q_i)/(q_i r_i)   (the sampling's part)  +  g(i) (1-r_i)/r_i   (the privacy mechanism's part).
//
// UnseenWeight bounds the sampling's part; the privacy part belongs to keys
// near or below supported_from, which the reliability rules (UnreliableShare,
// MissingMassSEs) judge, so that without sampling w = 0 and the interval is
// the gamma one of the plug-in mean and variance. The bound uses public
// parameters only: from `from` on r_i >= 1/2 (pi is non-decreasing and grows
// faster than q), and from 2L+1 on r_i = 1 (at most 2L+1 frequencies have
// pi_i < q_i, Lemma 4.3), so
//
//	w = max( max_{from <= i <= 2L+1} 2 g(i) (1-q_i)/q_i,  sup_{i > 2L+1} g(i) (1-q_i)/q_i ).
//
// Under ppswor with tau small it is about 1/tau for g = identity (2/tau if
// the privacy window reaches frequencies with tau i small) and 1/(tau i) for
// g = count at the lightest supported key i: the "1/tau". The
// supremum beyond the window is taken on integers up to 4096, then on a grid
// of ratio 1.01 up to top (ppswor, priority: where q_i reaches 1, beyond which
// nothing is unseen; custom: top as given, since q_i = q_n < 1 beyond the
// list leaves keys of every frequency unseen). It is +Inf when top is
// infinite and g is unbounded where keys can go unseen.
func UnseenWeight(g G, p sanitize.Privacy, s sanitize.Sampling, from int64, top float64) float64 {
	from = max(from, 1)
	window := from - 1
	if l := sanitize.L(p); l >= 0 && l < 1<<40 {
		window = int64(math.Floor(2*l)) + 1
	}
	w := 0.0
	for i := from; i <= window; i++ {
		if q := s.Q(i); q > 0 {
			w = max(w, 2*g.at(i)*(1-q)/q)
		}
	}
	switch s.Scheme {
	case sanitize.SchemeNone:
		return w
	case sanitize.SchemePPSWOR:
		top = math.Min(top, math.Pow(40/s.Threshold, 1/s.Power)) // 1 - e^-40 rounds to 1
	case sanitize.SchemePriority:
		top = math.Min(top, math.Pow(1/s.Threshold, 1/s.Power))
	}
	at := func(f float64) {
		i := int64(f)
		if q := s.Q(i); q > 0 && q < 1 {
			w = max(w, g.at(i)*(1-q)/q)
		}
	}
	start := max(window+1, from)
	for i := start; i <= 4096 && float64(i) <= top; i++ {
		at(float64(i))
	}
	f := float64(max(start, 4097))
	for ; f <= top && f < 1<<62; f = math.Ceil(f * unseenGrid) {
		at(f)
	}
	if math.IsInf(top, 1) {
		if q := s.Q(math.MaxInt64); q < 1 && g.Eval(math.MaxInt64) > 1 {
			return math.Inf(1)
		}
	}
	return w
}
