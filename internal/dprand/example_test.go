package dprand_test

import (
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
)

// Production draws from a generator seeded from crypto/rand (New) and
// Laplace noise from the vetted library (SecureLaplace); neither repeats,
// so only their shape is printed.
func ExampleNew() {
	rng := dprand.New()
	u := rng.Float64()
	x, err := dprand.SecureLaplace{}.Laplace(2)
	fmt.Println(0 <= u && u < 1, err)
	fmt.Println(!math.IsNaN(x) && !math.IsInf(x, 0))
	_, err = dprand.SecureLaplace{}.Laplace(0)
	fmt.Println(err)
	// Output:
	// true <nil>
	// true
	// dprand: laplace scale must be positive and finite, got 0
}

// Tests and reproducible simulations use Seeded (and dprandtest's Laplacer
// over it): the same seed gives the same draws. Never for real data.
func ExampleSeeded() {
	a, b := dprand.Seeded(7), dprand.Seeded(7)
	fmt.Println(a.Uint64() == b.Uint64())
	noise := dprandtest.NewLaplace(dprand.Seeded(1))
	again := dprandtest.NewLaplace(dprand.Seeded(1))
	x, _ := noise.Laplace(1)
	y, _ := again.Laplace(1)
	fmt.Println(x == y)
	// Output:
	// true
	// true
}
