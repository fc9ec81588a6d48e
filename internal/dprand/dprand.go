package dprand

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"

	"github.com/google/differential-privacy/go/v3/noise"
)

// New returns a ChaCha8 generator seeded with 32 bytes from crypto/rand.
// A *rand.Rand is not safe for concurrent use: create one per request or
// per worker.
func New() *mrand.Rand {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		// crypto/rand.Read never fails on supported platforms (Go >= 1.24
		// crashes the program instead); keep the check for clarity.
		panic(fmt.Sprintf("dprand: reading crypto seed: %v", err))
	}
	return mrand.New(mrand.NewChaCha8(seed))
}

// Seeded returns a deterministic ChaCha8 generator for tests and reproducible
// simulations. It must never be used to protect real data.
func Seeded(seed uint64) *mrand.Rand {
	var s [32]byte
	for i := 0; i < 8; i++ {
		s[i] = byte(seed >> (8 * i))
	}
	return mrand.New(mrand.NewChaCha8(s))
}

// Laplacer draws Laplace noise. Implementations must be safe for concurrent use.
type Laplacer interface {
	// Laplace returns one draw from the Laplace distribution with mean 0 and
	// the given scale b > 0 (density exp(-|x|/b) / 2b).
	Laplace(scale float64) (float64, error)
}

// SecureLaplace is the production Laplacer. It delegates to the
// google/differential-privacy noise package, which samples a secure
// (granularity-snapped, geometric-based) Laplace distribution from crypto/rand
// and so avoids the floating-point attacks on naive inverse-CDF samplers.
type SecureLaplace struct{}

// Laplace returns x ~ Lap(scale) through noise.Laplace() with L0 sensitivity 1,
// L-infinity sensitivity equal to scale and epsilon 1, which yields exactly
// the scale scale = l0 * lInf / epsilon.
func (SecureLaplace) Laplace(scale float64) (float64, error) {
	if !(scale > 0) || scale > 1e300 {
		return 0, fmt.Errorf("dprand: laplace scale must be positive and finite, got %g", scale)
	}
	v, err := noise.Laplace().AddNoiseFloat64(0, 1, scale, 1, 0)
	if err != nil {
		return 0, fmt.Errorf("dprand: drawing laplace noise with scale %g: %w", scale, err)
	}
	return v, nil
}
