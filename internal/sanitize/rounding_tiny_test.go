package sanitize

import (
	"math"
	"math/big"
	"testing"
)

// exactCmp compares a*b with c exactly (math/big: the product of two
// float64 is exact in 106 bits), the oracle of TestTinyRoundingExact.
func exactCmp(a, b, c float64) int {
	p := new(big.Float).SetPrec(256).Mul(big.NewFloat(a).SetPrec(256), big.NewFloat(b).SetPrec(256))
	return p.Cmp(big.NewFloat(c))
}

// TestTinyRoundingExact reaches the fix-up loops of ceilDiv1 and floorMul1
// (ceilDivTiny, floorMulTiny), which only results near and below the
// subnormal range take: there a product's rounding error (half a subnormal
// ulp, 2^-1075) dwarfs the four-ulp margin of einvUp and eDown, so the
// first guess can land on the wrong side. For every v it checks the exact
// postconditions the audit relies on: E·ceilDiv1(v) >= v and
// floorMul1(v) <= E·v, both decided exactly by math/big, with the answer within
// a few ulps of the first guess; and it checks that the loops did move some
// guesses (a test that never reached them could not fail on them: issue 38's
// mutation run found them unreached).
func TestTinyRoundingExact(t *testing.T) {
	t.Parallel()
	for _, eps := range []float64{0.01, 0.1, 0.5, 1, 5} {
		c := newConsts(Privacy{Epsilon: eps, Delta: 1e-6})
		fixedUp, fixedDown := 0, 0
		check := func(v float64) {
			r := c.ceilDiv1(v)
			if exactCmp(c.e, r, v) < 0 {
				t.Fatalf("eps %g: ceilDiv1(%g) = %g, but E*r < v", eps, v, r)
			}
			if guess := v * c.einvUp; r != guess {
				fixedUp++
				if r < guess || r > nextUp(nextUp(nextUp(guess))) {
					t.Fatalf("eps %g: ceilDiv1(%g) = %g, far from its first guess %g", eps, v, r, guess)
				}
			}
			s := c.floorMul1(v)
			if exactCmp(c.e, v, s) < 0 || s < 0 {
				t.Fatalf("eps %g: floorMul1(%g) = %g, but r > E*v", eps, v, s)
			}
			if guess := v * c.eDown; s != guess {
				fixedDown++
				if s > guess || s < nextDown(nextDown(nextDown(guess))) {
					t.Fatalf("eps %g: floorMul1(%g) = %g, far from its first guess %g", eps, v, s, guess)
				}
			}
		}
		// Every small multiple of the smallest subnormal, then values spread
		// over the subnormal and low normal range (a fixed LCG: deterministic).
		for k := 1; k <= 4096; k++ {
			check(float64(k) * 0x1p-1074)
		}
		x := uint64(12345)
		for range 20000 {
			x = x*6364136223846793005 + 1442695040888963407
			exp := -1074 + int(x>>54)%80 // 2^-1074 .. 2^-995
			check(math.Ldexp(1+float64(x>>11&(1<<40-1))/(1<<40), exp))
		}
		if fixedUp == 0 || fixedDown == 0 {
			t.Errorf("eps %g: the fix-up loops moved %d (ceil) and %d (floor) guesses: the test does not reach them", eps, fixedUp, fixedDown)
		}
		t.Logf("eps %g: %d ceil and %d floor guesses fixed", eps, fixedUp, fixedDown)
	}
}
