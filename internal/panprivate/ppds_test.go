package panprivate

import (
	"fmt"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// TestPPDSEvictionKeepsUsersBits checks the level mechanics of Alg. 3: a
// stream that fills the distinct sample raises the level, the sample stays
// below m, and the users that remain keep their own membership laws (those
// who appeared P1, the others P0, within 5 SE), i.e. eviction re-indexes the
// surviving users correctly.
func TestPPDSEvictionKeepsUsersBits(t *testing.T) {
	t.Parallel()
	const (
		n = 1 << 15
		m = 14000 // above n P0 = 12370: level 0 after initialization
	)
	rng := dprand.Seeded(91)
	e := mustNew(t, Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.5, UniverseSize: n, SampleSize: m}, rng).(*ppds)
	if e.level != 0 {
		t.Fatalf("initial level %d, want 0", e.level)
	}
	if err := e.Apply(insertRange(0, 24000, false)); err != nil {
		t.Fatal(err)
	}
	if e.level == 0 || e.members >= m || e.members != e.bits.count() {
		t.Fatalf("level %d, members %d (bits %d), bound %d", e.level, e.members, e.bits.count(), m)
	}
	p0, p1 := paperPair(AlgorithmOptBern, 0.5)
	appeared, na := onesFraction(e, 0, 24000)
	absent, nb := onesFraction(e, 24000, n)
	checkFraction(t, "appeared, after eviction", appeared, na, p1)
	checkFraction(t, "absent, after eviction", absent, nb, p0)
}

// TestPPDSInitializationLevel checks the initialization of Alg. 3 without
// the universe scan: the level is the smallest L whose qualifying users'
// initial members number fewer than m, so about m/P0 users qualify.
func TestPPDSInitializationLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n uint64
		m int
	}{{1 << 20, 1000}, {1000003, 5000}, {100, 99}, {7, 1}} {
		t.Run(fmt.Sprintf("n=%d,m=%d", tc.n, tc.m), func(t *testing.T) {
			e := mustNew(t, Config{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.5, UniverseSize: tc.n, SampleSize: tc.m}, dprand.Seeded(92)).(*ppds)
			if e.members >= uint64(tc.m) && e.level < ppdsMaxLevel(tc.n) {
				t.Errorf("n=%d m=%d: %d members at level %d", tc.n, tc.m, e.members, e.level)
			}
			if e.level > 0 && e.qualifying()*2 < uint64(tc.m) {
				t.Errorf("n=%d m=%d: level %d leaves %d qualifying users, fewer than m/2", tc.n, tc.m, e.level, e.qualifying())
			}
		})
	}
}
