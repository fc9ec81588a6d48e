package service

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestEstimateReadsStatisticsAboveTheLargestValue: per-frequency statistics
// are read at MLE frequencies, which lie about L above the values. With
// priority sampling (q < 1 everywhere, so tables have no stationary tail)
// and a value just below a power of two whose MLE frequency lies above it, a
// table sized to the values alone would not reach it; the estimate must still
// answer with a positive standard error, and group estimates must add up.
func TestEstimateReadsStatisticsAboveTheLargestValue(t *testing.T) {
	t.Parallel()
	p, _ := sanitize.NewPrivacy(0.5, 1e-6) // L = 24.8
	sm, _ := sanitize.NewSampling(sanitize.SchemePriority, 1e-6, 1, nil)
	spec, err := NewSampleSpec("", p, sm, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var seed uint64
	s, err := New(Config{Store: store.NewMemory(), NewRand: func() *rand.Rand { seed++; return dprand.Seeded(seed) }})
	if err != nil {
		t.Fatal(err)
	}
	for try := 0; try < 400; try++ {
		keys := []string{"x/a", "y/b"}
		i := 0
		smp, err := s.Samples.Create(ctx, spec, 10, func() (string, int64, error) {
			if i == len(keys) {
				return "", 0, io.EOF
			}
			i++
			return keys[i-1], 1035, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Wanted: both reported, values <= 1022 (a table sized to them has
		// 1024 rows) and an MLE frequency above 1024.
		ok := len(smp.Elements) == 2
		high := false
		for k, el := range smp.Elements {
			ok = ok && el.Value <= 1022
			high = high || smp.Keys[k].Frequency > 1024
		}
		if !ok || !high {
			continue
		}
		for _, e := range []estimate.Estimator{estimate.MLE, estimate.BiasedDown} {
			all, err := s.Estimates.Sample(ctx, smp.ID, identityG, e, Selection{}, 0.95, GroupBy{Delimiter: "/"})
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			if !(all.StandardError > 0) || len(all.Groups) != 2 {
				t.Fatalf("%s: %+v", e, all)
			}
			sum, v := 0.0, 0.0
			for _, g := range all.Groups {
				sum += g.Estimate
				v += g.Variance
			}
			if d := sum - all.Estimate; d*d > 1e-18*all.Estimate*all.Estimate || (v-all.Variance)*(v-all.Variance) > 1e-18*v*v {
				t.Errorf("%s: groups add to %g (var %g), whole %g (var %g)", e, sum, v, all.Estimate, all.Variance)
			}
		}
		t.Logf("found after %d releases", try+1)
		return
	}
	t.Fatal("no release gave values below 1023 with an MLE frequency above 1024: the test has no power")
}
