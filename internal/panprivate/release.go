package panprivate

import (
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Release is one noisy estimate.
type Release struct {
	Estimate     float64 `json:"estimate"`
	EpsilonSpent float64 `json:"epsilon_spent"`
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
	if b.cfg.Estimator != KindIncidence && !(b.law.gap() > 1e-12) {
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
func (b *base) noisyRelease(noise dprand.Laplacer, estimate func() float64, paperScale, cost float64) (Release, error) {
	if err := b.beginRelease(noise); err != nil {
		return Release{}, err
	}
	scale, spent := b.releaseScale(paperScale, cost)
	x, err := laplace(noise, scale)
	if err != nil {
		return Release{}, err
	}
	b.stats.Releases++
	return Release{Estimate: estimate() + x, EpsilonSpent: spent}, nil
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
