package estimate

import (
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// NonPrivateBaseline is the paper's non-private baseline (eq. 8): on the
// raw weighted sample a key of frequency w is estimated by g(w)/q_w
// (inverse probability), which is unbiased with variance g(i)^2 (1 - q_i)/q_i
// per key of frequency i. It is what the private estimators are compared
// with, not an estimator table builder (the reference builder that the fast
// builders are tested against is generalBuilderRef).
type NonPrivateBaseline struct {
	G        G
	Sampling sanitize.Sampling
}

// NewNonPrivateBaseline validates and returns the non-private baseline.
func NewNonPrivateBaseline(g G, s sanitize.Sampling) (NonPrivateBaseline, error) {
	if err := g.Validate(); err != nil {
		return NonPrivateBaseline{}, err
	}
	if err := s.Validate(); err != nil {
		return NonPrivateBaseline{}, fmt.Errorf("estimate: non-private baseline sampling: %w", err)
	}
	return NonPrivateBaseline{G: g, Sampling: s}, nil
}

// estimate returns g(w)/q_w for a sampled key of frequency w >= 1.
func (r NonPrivateBaseline) estimate(w int64) (float64, error) {
	if w < 1 {
		return 0, errors.New("estimate: frequency must be at least 1")
	}
	return r.G.at(w) / r.Sampling.Q(w), nil
}

// Variance returns the per-key baseline variance g(i)^2 (1 - q_i)/q_i.
func (r NonPrivateBaseline) Variance(i int64) float64 {
	q := r.Sampling.Q(i)
	g := r.G.at(i)
	return g * g * (1 - q) / q
}

// Stats returns the baseline's per-frequency statistics (unbiased, so
// MSE = variance).
func (r NonPrivateBaseline) Stats(i int64) (FrequencyStats, error) {
	if i < 1 {
		return FrequencyStats{}, errors.New("estimate: frequency must be at least 1")
	}
	v := r.Variance(i)
	g := r.G.at(i)
	return FrequencyStats{Frequency: i, G: g, Reported: r.Sampling.Q(i), Expected: g, Variance: v, MSE: v}, nil
}

// SumStats returns the eq. 12 quantities of the baseline sum estimate.
func (r NonPrivateBaseline) SumStats(dist []FrequencyCount) (SumStats, error) {
	return sumStats(dist, r.Stats)
}
