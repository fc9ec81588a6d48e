package estimate

import (
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// Reference is the non-private baseline of eq. 8: on the raw weighted sample
// a key of frequency w is estimated by g(w)/q_w (inverse probability), which
// is unbiased with variance g(i)^2 (1 - q_i)/q_i per key of frequency i.
type Reference struct {
	G        G
	Sampling sanitize.Sampling
}

// NewReference validates and returns the reference estimator.
func NewReference(g G, s sanitize.Sampling) (Reference, error) {
	if err := g.Validate(); err != nil {
		return Reference{}, err
	}
	if err := s.Validate(); err != nil {
		return Reference{}, fmt.Errorf("estimate: reference sampling: %w", err)
	}
	return Reference{G: g, Sampling: s}, nil
}

// estimate returns g(w)/q_w for a sampled key of frequency w >= 1.
func (r Reference) estimate(w int64) (float64, error) {
	if w < 1 {
		return 0, errors.New("estimate: frequency must be at least 1")
	}
	return r.G.at(w) / r.Sampling.Q(w), nil
}

// Variance returns the per-key reference variance g(i)^2 (1 - q_i)/q_i.
func (r Reference) Variance(i int64) float64 {
	q := r.Sampling.Q(i)
	g := r.G.at(i)
	return g * g * (1 - q) / q
}

// Stats returns the reference's per-frequency statistics (unbiased, so
// MSE = variance).
func (r Reference) Stats(i int64) (FrequencyStats, error) {
	if i < 1 {
		return FrequencyStats{}, errors.New("estimate: frequency must be at least 1")
	}
	v := r.Variance(i)
	g := r.G.at(i)
	return FrequencyStats{Frequency: i, G: g, Reported: r.Sampling.Q(i), Expected: g, Variance: v, MSE: v}, nil
}

// SumStats returns the eq. 12 quantities of the reference sum estimate.
func (r Reference) SumStats(dist []FrequencyCount) (SumStats, error) {
	return sumStats(dist, r.Stats)
}
