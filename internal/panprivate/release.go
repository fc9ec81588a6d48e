package panprivate

import (
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Release is one noisy estimate with its error (docs/errorbars-streams.md).
type Release struct {
	// Estimate is the unbiased raw estimate (noise included, not clamped).
	Estimate     float64 `json:"estimate"`
	EpsilonSpent float64 `json:"epsilon_spent"`
	// StandardError is the standard deviation of Estimate around the
	// estimand over the estimator's coins (sample, state bits, release
	// noise Lap(b), which adds 2b^2 to the variance), computed from the
	// public parameters and the clamped estimate only (plugged in where the
	// variance depends on the unknown true value), so it costs no privacy.
	StandardError float64 `json:"standard_error"`
	// Bound is true when StandardError is an upper bound (the exact
	// variance depends on more than the estimand) rather than the exact
	// value at the plug-in.
	Bound bool `json:"bound"`
	// Min and Max are the range of the estimand: [0, 1] for the fractions,
	// [0, t] for the cropped mean.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// Laplace is true when the release is one draw of Laplace noise added
	// to an estimate whose sensitivity divided by the noise's scale is
	// EpsilonSpent: a Laplace mechanism, which a privacy ledger may compose
	// by its exact privacy loss distribution. False (e.g. the incidence
	// estimator's minimum over several noisy counts): compose it as a
	// generic EpsilonSpent-DP release.
	Laplace bool `json:"-"`
}

// Clamped returns the estimate projected onto [Min, Max]: post-processing,
// no privacy cost, never farther from the estimand than Estimate.
func (r Release) Clamped() float64 { return clamp(r.Estimate, r.Min, r.Max) }

func clamp(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

// errorModel is what a release needs to state its error: the range of the
// estimand and the variance of the noiseless estimate as a function of the
// estimand (release noise excluded), exact or (bound) an upper bound.
type errorModel struct {
	lo, hi   float64
	variance func(estimand float64) float64
	bound    bool
	// noiseScale, when set, gives the release noise's scale as the error
	// statement may know it (ppds: from its predicted level, the actual one
	// being part of the state); nil means the scale drawn.
	noiseScale func(estimand float64) float64
}

// fill fills r's error fields from e, r.Estimate and the release
// noise scale: the variance is e.variance at the clamped estimate plus 2
// scale^2.
func (e errorModel) fill(r *Release, scale float64) {
	r.Min, r.Max, r.Bound = e.lo, e.hi, e.bound
	x := r.Clamped()
	if e.noiseScale != nil {
		scale = e.noiseScale(x)
	}
	v := math.Max(e.variance(x), 0) + 2*scale*scale
	r.StandardError = math.Sqrt(v)
}

// samplingVariance is the variance of the fraction of a uniform random
// m-subset of an n-universe that has a property of universe fraction d
// (hypergeometric): d(1-d)(n-m)/(m(n-1)).
func samplingVariance(d float64, m, n uint64) float64 {
	if n <= 1 || m >= n {
		return 0
	}
	return d * (1 - d) * float64(n-m) / (float64(m) * float64(n-1))
}

// densityVariance is the exact variance of the debiased fraction of ones
// among a uniform random m-subset of an n-universe when a fraction d of the
// universe has appeared, each subset member's bit being Bernoulli(P1) if it
// appeared and Bernoulli(P0) if not (independent):
//
//	pbar(1-pbar)/(m gap^2) - d(1-d)(m-1)/(m(n-1)),   pbar = P0 + gap d,
//
// the bits' variance plus the sampling variance of the subset's density
// (docs/errorbars-streams.md, §density).
func (b *base) densityVariance(d float64, m, n uint64) float64 {
	p0, gap := b.law.p(false), b.law.gap()
	pbar := p0 + gap*d
	mf := float64(m)
	v := pbar * (1 - pbar) / (mf * gap * gap)
	if n > 1 {
		v -= d * (1 - d) * (mf - 1) / (mf * float64(n-1))
	}
	return v
}

// ErrReleaseLimit reports that max_releases releases were already made.
var ErrReleaseLimit = errors.New("panprivate: release limit reached")

// ErrUninformative reports that announced intrusions have shrunk the gap
// between the state distributions so far that no estimate can be formed.
var ErrUninformative = errors.New("panprivate: state no longer informative after announced intrusions")

// beginRelease checks the release limit and the noise source.
func (b *base) beginRelease(noise dprand.Laplacer) error {
	if noise == nil {
		return errors.New("panprivate: release: nil noise source")
	}
	if b.cfg.MaxReleases > 0 && b.stats.Releases >= b.cfg.MaxReleases {
		return ErrReleaseLimit
	}
	if b.spec.bitLaw && !(b.law.gap() > 1e-12) {
		return ErrUninformative
	}
	return nil
}

// laplace draws Lap(scale) through noise, wrapping errors.
// releaseScale returns the Laplace scale of a release whose papers' scale is
// paperScale and whose exact cost at that scale is cost, and the epsilon the
// release spends: the papers' noise at its exact cost, or (calibrated) the
// noise scaled by cost/epsilon so that the release costs exactly epsilon.
func (b *base) releaseScale(paperScale, cost float64) (scale, spent float64) {
	if b.cfg.ReleaseNoise == NoiseCalibrated && cost > b.cfg.Epsilon {
		return paperScale * cost / b.cfg.Epsilon, b.cfg.Epsilon
	}
	return paperScale, cost
}

// privacy states the guarantee of an estimator whose state costs state and
// whose release, with the papers' noise, costs cost.
func (b *base) privacy(state, cost float64) Privacy {
	_, spent := b.releaseScale(0, cost)
	return Privacy{State: state, PerRelease: spent}
}

// noisyRelease draws one release: estimate plus Laplace noise of the papers'
// scale paperScale (or calibrated, see releaseScale), whose exact cost with
// the papers' noise is cost.
func (b *base) noisyRelease(noise dprand.Laplacer, estimate func() float64, paperScale, cost float64, em errorModel) (Release, error) {
	if err := b.beginRelease(noise); err != nil {
		return Release{}, err
	}
	scale, spent := b.releaseScale(paperScale, cost)
	x, err := laplace(noise, scale)
	if err != nil {
		return Release{}, err
	}
	b.stats.Releases++
	r := Release{Estimate: estimate() + x, EpsilonSpent: spent, Laplace: true}
	em.fill(&r, scale)
	return r, nil
}

func laplace(noise dprand.Laplacer, scale float64) (float64, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return 0, fmt.Errorf("panprivate: release: bad noise scale %g", scale)
	}
	x, err := noise.Laplace(scale)
	if err != nil {
		return 0, fmt.Errorf("panprivate: release: %w", err)
	}
	return x, nil
}
