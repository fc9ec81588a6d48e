package service

import (
	"context"
	"io"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// defaultRequestTimeout is PWSD_REQUEST_TIMEOUT's default (api.DefaultLimits).
const defaultRequestTimeout = 60 * time.Second

// smallestAdmittedEpsilon returns the smallest epsilon (delta 1e-6) whose
// stretch fits the default per-stretch work limit (checkSampleWork).
func smallestAdmittedEpsilon(t *testing.T) float64 {
	t.Helper()
	lo, hi := 1e-3, 1.0
	fits := func(eps float64) bool {
		w, _ := releaseWork(sanitize.Privacy{Epsilon: eps, Delta: 1e-6}, true)
		return w <= DefaultMaxTableWork
	}
	if fits(lo) || !fits(hi) {
		t.Fatalf("the bracket [%g, %g] does not hold the limit", lo, hi)
	}
	for hi/lo > 1.001 {
		mid := math.Sqrt(lo * hi)
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// spreadSource yields n keys whose frequencies lie in distinct, pairwise
// non-adjacent chunks of the given size, spread geometrically from 10^5 to
// 10^9 (rows far up cost the most: wider windows of break points).
func spreadSource(n int, size int64) ElementSource {
	k := 0
	return func() (string, int64, error) {
		if k == n {
			return "", 0, io.EOF
		}
		k++
		f := int64(1e5 * math.Pow(1e4, float64(k)/float64(n+1)))
		return "k" + strconv.Itoa(k), f/size*size + int64(k)*3*size, nil
	}
}

// TestWorstAdmittedReleaseFinishes keeps the release work model honest. The
// release budget is scaled to a 10 s timeout (DefaultMaxReleaseWork is sized
// for half of the default 60 s one); at the smallest epsilon the per-stretch
// bound admits, the largest release that budget admits (isolated keys, one
// stretch each, ppswor tau 1e-8 so that every row is restarted) must finish
// within those 10 s, and one more key is refused with a 422 naming it.
func TestWorstAdmittedReleaseFinishes(t *testing.T) {
	// Serial: it measures a release against a 10 s timeout; parallel tests would share its CPU.
	if raceOn {
		t.Skip("timing: runs without -race (scripts/test.sh)")
	}
	const timeout = 10 * time.Second
	budget := int64(DefaultMaxReleaseWork) * int64(timeout/time.Second) / int64(defaultRequestTimeout/time.Second)
	eps := smallestAdmittedEpsilon(t)
	p := sanitize.Privacy{Epsilon: eps, Delta: 1e-6}
	spec, err := NewSampleSpec("", p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-8, Power: 1},
		ReleaseFrequencies, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	window := math.Ceil(sanitize.L(p)) + 1
	perStretch := window * (float64(sanitize.RestartCost(p)) + 2*window + float64(estimate.ChunkSize(p)))
	keys := int(float64(budget) / perStretch)
	if keys < 2 {
		t.Fatalf("budget %d admits %d stretches of %.3g cells", budget, keys, perStretch)
	}
	s := newTestService(t, Config{MaxReleaseWork: budget})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if _, err := s.CreateSample(ctx, spec, 100, spreadSource(keys, estimate.ChunkSize(p))); err != nil {
		t.Fatalf("eps %g, %d keys: %v", eps, keys, err)
	}
	took := time.Since(start)
	t.Logf("eps %.4g (L %.0f): %d stretches of %.3g cells in %v (%.0f ns per cell)", eps, window-1, keys, perStretch, took,
		float64(took.Nanoseconds())/(perStretch*float64(keys)))
	if took > timeout {
		t.Errorf("the largest admitted release took %v, above its %v timeout: recalibrate DefaultMaxReleaseWork", took, timeout)
	}
	_, err = s.CreateSample(context.Background(), spec, 100, spreadSource(keys+1, estimate.ChunkSize(p)))
	fs, ok := checks.Fields(err)
	if !ok || len(fs) != 1 || fs[0].Field != "elements["+strconv.Itoa(keys)+"].frequency" {
		t.Errorf("one key more: %v, want a 422 naming elements[%d].frequency", err, keys)
	}
}
