package dprand

import (
	"fmt"
	"math"
	"testing"
)

// TestSecureLaplaceMoments checks that SecureLaplace draws Lap(b): mean 0 and
// mean absolute value b, within 6 standard errors.
func TestSecureLaplaceMoments(t *testing.T) {
	t.Parallel()
	const n = 40000
	for _, b := range []float64{0.01, 1, 250} {
		t.Run(fmt.Sprintf("scale=%g", b), func(t *testing.T) {
			var sum, sumAbs float64
			for i := 0; i < n; i++ {
				x, err := SecureLaplace{}.Laplace(b)
				if err != nil {
					t.Fatal(err)
				}
				sum += x
				sumAbs += math.Abs(x)
			}
			// Var(X) = 2b^2, Var(|X|) = b^2.
			if m := sum / n; math.Abs(m) > 6*math.Sqrt(2)*b/math.Sqrt(n) {
				t.Errorf("scale %g: mean %g too far from 0", b, m)
			}
			if m := sumAbs / n; math.Abs(m-b) > 6*b/math.Sqrt(n) {
				t.Errorf("scale %g: E|X| = %g, want %g", b, m, b)
			}
		})
	}
}

func TestSecureLaplaceRejectsBadScale(t *testing.T) {
	t.Parallel()
	for _, b := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		t.Run(fmt.Sprintf("scale=%g", b), func(t *testing.T) {
			if _, err := (SecureLaplace{}).Laplace(b); err == nil {
				t.Errorf("scale %g accepted", b)
			}
		})
	}
}

func TestSeededIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := Seeded(7), Seeded(7)
	for i := 0; i < 10; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed gave different streams")
		}
	}
	if New().Uint64() == New().Uint64() {
		t.Fatal("two crypto-seeded generators agreed")
	}
}
