package panprivate

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestPermutationIsBijection checks that the sampling permutation maps
// [0, n) onto itself one to one and that inverse undoes it, for small and
// odd-sized universes (exhaustively).
func TestPermutationIsBijection(t *testing.T) {
	t.Parallel()
	rng := dprand.Seeded(3)
	for _, n := range []uint64{1, 2, 3, 5, 64, 1000, 4097, 65536} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			key := newKey(rng)
			p := newPermutation(n, &key)
			seen := make([]bool, n)
			for u := uint64(0); u < n; u++ {
				v := p.forward(u)
				if v >= n || seen[v] {
					t.Fatalf("n=%d: forward(%d)=%d out of range or repeated", n, u, v)
				}
				seen[v] = true
				if w := p.inverse(v); w != u {
					t.Fatalf("n=%d: inverse(forward(%d)) = %d", n, u, w)
				}
			}
		})
	}
	// Large universes: spot checks.
	key := newKey(rng)
	p := newPermutation(maxUniverseSize, &key)
	for i := 0; i < 1000; i++ {
		u := rng.Uint64N(maxUniverseSize)
		if v := p.forward(u); v >= maxUniverseSize || p.inverse(v) != u {
			t.Fatalf("2^53: round trip of %d failed", u)
		}
	}
}

// TestSampleIsUniform checks that M = {u : perm(u) < m} is a uniform
// m-subset: over 4000 keys every user of a 64-user universe is sampled with
// frequency m/n, and neighbouring pairs jointly with m(m-1)/(n(n-1)), within
// 5 standard errors.
func TestSampleIsUniform(t *testing.T) {
	t.Parallel()
	const (
		n    = 64
		m    = 16
		keys = 4000
	)
	rng := dprand.Seeded(4)
	hits := make([]int, n)
	pairs := make([]int, n-1)
	for k := 0; k < keys; k++ {
		key := newKey(rng)
		p := newPermutation(n, &key)
		in := make([]bool, n)
		for u := uint64(0); u < n; u++ {
			in[u] = p.forward(u) < m
			if in[u] {
				hits[u]++
			}
		}
		for u := 0; u < n-1; u++ {
			if in[u] && in[u+1] {
				pairs[u]++
			}
		}
	}
	p1 := float64(m) / n
	p2 := p1 * float64(m-1) / (n - 1)
	for u, h := range hits {
		if se := math.Sqrt(p1 * (1 - p1) / keys); math.Abs(float64(h)/keys-p1) > 5*se {
			t.Errorf("user %d sampled with frequency %v, want %v", u, float64(h)/keys, p1)
		}
	}
	for u, h := range pairs {
		if se := math.Sqrt(p2 * (1 - p2) / keys); math.Abs(float64(h)/keys-p2) > 5*se {
			t.Errorf("pair (%d,%d) sampled with frequency %v, want %v", u, u+1, float64(h)/keys, p2)
		}
	}
}

// TestStringUserMapping checks that string ids map deterministically into
// the universe under one key, differently under another, and spread
// uniformly (chi-square over 16 buckets below a 6-SE-like threshold).
func TestStringUserMapping(t *testing.T) {
	t.Parallel()
	rng := dprand.Seeded(5)
	k1, k2 := newKey(rng), newKey(rng)
	const n = 1 << 20
	a, b, c := newUserMapper(n, &k1), newUserMapper(n, &k1), newUserMapper(n, &k2)
	buckets := make([]float64, 16)
	const names = 16000
	same := 0
	for i := 0; i < names; i++ {
		name := "user-" + strconv.Itoa(i)
		x := a.id(name)
		if x >= n || b.id(name) != x {
			t.Fatalf("mapping not deterministic or out of range")
		}
		if c.id(name) == x {
			same++
		}
		buckets[x*16/n]++
	}
	if same > 2 {
		t.Errorf("%d names mapped identically under two keys", same)
	}
	var chi2 float64
	for _, o := range buckets {
		e := float64(names) / 16
		chi2 += (o - e) * (o - e) / e
	}
	if chi2 > 15+6*math.Sqrt(30) { // df 15: mean 15, sd sqrt(30)
		t.Errorf("string ids not uniform: chi2 = %v", chi2)
	}
}
