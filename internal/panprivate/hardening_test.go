package panprivate

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// TestStateHoldsNoEventCount: events of users outside the sample leave the
// stored state byte for byte unchanged, for every estimator kind: the state
// carries no count of events (defect 4: it held the exact count, which with
// one event per user is the number the estimators protect).
func TestStateHoldsNoEventCount(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Estimator: KindDensity, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 50},
		{Estimator: KindDensity, Algorithm: AlgorithmPPDS, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 50},
		{Estimator: KindCroppedMean, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 50, T: 3},
		{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 50, K: 4, MaxOccurrences: 16},
		{Estimator: KindIncidence, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 50, T: 2, MaxOccurrences: 8},
	} {
		t.Run(string(c.Estimator)+string(c.Algorithm), func(t *testing.T) {
			e, err := New(c, dprand.Seeded(7))
			if err != nil {
				t.Fatal(err)
			}
			before, _ := e.MarshalBinary()
			clone, err := Unmarshal(before, dprand.Seeded(8))
			if err != nil {
				t.Fatal(err)
			}
			sampled := clone.Intrude().Users
			var events []Event
			for u := uint64(0); u < 1000 && len(events) < 40; u++ {
				if !slices.Contains(sampled, u) {
					events = append(events, Event{User: UserID(u)})
				}
			}
			if err := e.Apply(events); err != nil {
				t.Fatal(err)
			}
			after, _ := e.MarshalBinary()
			if !bytes.Equal(before, after) {
				t.Fatal("events of unsampled users changed the stored state: it counts events")
			}
			if b, _ := json.Marshal(e.Stats()); bytes.Contains(b, []byte("events")) {
				t.Fatalf("stats %s carry an event count", b)
			}
		})
	}
}

// TestStreamCaps: at the largest configuration each kind admits, the stored
// state stays within 8 MB and an intrusion answer within 24 MB (the sizes
// README states); one more cell is refused naming sample_size.
func TestStreamCaps(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the largest states")
	}
	for _, c := range []Config{
		{Estimator: KindDensity, Epsilon: 0.5, UniverseSize: 1 << 40, SampleSize: maxSampleSize},
		{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 1 << 40, SampleSize: maxStateCells / 8, K: 4, MaxOccurrences: 64},
		{Estimator: KindIncidence, Epsilon: 0.5, UniverseSize: 1 << 40, SampleSize: maxStateCells / 3, T: 2, MaxOccurrences: 64},
	} {
		t.Run(string(c.Estimator), func(t *testing.T) {
			e, err := New(c, dprand.Seeded(1))
			if err != nil {
				t.Fatal(err)
			}
			state, _ := e.MarshalBinary()
			intr, _ := json.Marshal(e.Intrude())
			t.Logf("%s m=%d: state %d bytes, intrusion %d bytes", c.Estimator, c.SampleSize, len(state), len(intr))
			if len(state) > 8<<20 || len(intr) > 24<<20 {
				t.Fatalf("state %d or intrusion %d bytes above 8 MB / 24 MB", len(state), len(intr))
			}
			c.SampleSize = maxSampleSize + 1
			var pe *checks.FieldError
			if _, err := c.Validate(); !errors.As(err, &pe) || pe.Field != "sample_size" {
				t.Fatalf("sample_size above the cap: %v", err)
			}
		})
	}
}

// TestIncidenceModuliWithinPrimes: more moduli than the default prime range
// holds is a checks.FieldError naming moduli, not a panic (defect 5).
func TestIncidenceModuliWithinPrimes(t *testing.T) {
	t.Parallel()
	for m := 12; m <= maxModuli; m++ {
		c := Config{Estimator: KindIncidence, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 10, T: 2, MaxOccurrences: 8, Moduli: m}
		var pe *checks.FieldError
		if _, err := New(c, dprand.Seeded(1)); !errors.As(err, &pe) || pe.Field != "moduli" {
			t.Fatalf("moduli %d: %v", m, err)
		}
	}
	c := Config{Estimator: KindIncidence, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 10, T: 2, MaxOccurrences: 8, Moduli: 11}
	if _, err := New(c, dprand.Seeded(1)); err != nil {
		t.Fatalf("moduli 11 (all primes up to 31): %v", err)
	}
}
