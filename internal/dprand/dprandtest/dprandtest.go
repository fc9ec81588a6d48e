package dprandtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// Laplace is a seeded Laplace sampler (inverse CDF on a ChaCha8 stream). It is
// reproducible, which the secure sampler is not, and so lets simulation tests
// use fixed seeds. It is safe for concurrent use.
type Laplace struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewLaplace returns a Laplace sampler drawing from rng.
func NewLaplace(rng *rand.Rand) *Laplace { return &Laplace{rng: rng} }

// Laplace returns one draw from Lap(scale).
func (l *Laplace) Laplace(scale float64) (float64, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return 0, fmt.Errorf("dprandtest: laplace scale must be positive and finite, got %g", scale)
	}
	l.mu.Lock()
	u := l.rng.Float64() - 0.5
	l.mu.Unlock()
	if u < 0 {
		return scale * math.Log1p(2*u), nil
	}
	return -scale * math.Log1p(-2*u), nil
}
