package tablecache

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestSupportedFromBruteForce: SupportedFrom is the first frequency whose
// pi_i reaches q_i / 2, found here by walking the rows one by one, for
// sampling schemes that reach it early and late; the second call is served
// from memory.
func TestSupportedFromBruteForce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCache(t, Config{})
	for _, tc := range []struct {
		p   sanitize.Privacy
		smp sanitize.Sampling
		m   sanitize.Method
	}{
		{sanitize.Privacy{Epsilon: 1, Delta: 1e-3}, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete},
		{sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-3, Power: 1}, sanitize.MethodMaxSeparation},
		{sanitize.Privacy{Epsilon: 0.2, Delta: 1e-6}, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, sanitize.MethodDiscrete},
	} {
		tb, err := c.Sanitizer(tc.p, tc.smp, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.SupportedFrom(ctx, tb)
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		for i := int64(1); want == 0 && i < 1<<22; i++ {
			r, err := tb.Row(i)
			if err != nil {
				t.Fatal(err)
			}
			if q := tc.smp.Q(i); q > 0 && r.Pi >= 0.5*q {
				want = i
			}
		}
		if got != want || got == 0 {
			t.Fatalf("%+v: SupportedFrom %d, brute force %d", tc, got, want)
		}
		if again, err := c.SupportedFrom(ctx, tb); err != nil || again != got {
			t.Fatalf("second call: %d, %v", again, err)
		}
	}
}

// TestRunWorkClosedForm: a run costs a restart's warm-up and two windows,
// and each chunk its rows, all times the window L + 1.
func TestRunWorkClosedForm(t *testing.T) {
	t.Parallel()
	for _, p := range []sanitize.Privacy{{Epsilon: 1, Delta: 1e-6}, {Epsilon: 0.1, Delta: 1e-6}, {Epsilon: 0.01, Delta: 1e-9}} {
		size := estimate.ChunkSize(p)
		start, chunk := RunWork(p, size)
		w := math.Ceil(sanitize.L(p)) + 1
		if start != w*(float64(sanitize.RestartCost(p))+2*w) || chunk != w*float64(size) {
			t.Errorf("%+v: RunWork = %g, %g", p, start, chunk)
		}
	}
}

// TestPrebuildCountsAndReuses: Prebuild builds the chunks up to its
// frequency, counts what it built, builds nothing the second time, and
// what it built serves a later read without any computation.
func TestPrebuildCountsAndReuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	tb, err := c.Sanitizer(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-4, Power: 1}, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	gs := []estimate.G{identityG, {Kind: estimate.GCount}}
	size := estimate.ChunkSize(p)
	const top = 5_000
	got, err := c.Prebuild(ctx, tb, gs, top)
	if err != nil {
		t.Fatal(err)
	}
	want := estimate.ChunkOf(top, size) + 1
	if got.ChunkSize != size || got.Chunks != want || got.Built != want {
		t.Fatalf("prebuild %+v, want %d chunks of %d, all built", got, want, size)
	}
	again, err := c.Prebuild(ctx, tb, gs, top)
	if err != nil || again.Built != 0 || again.Chunks != want {
		t.Fatalf("second prebuild %+v, %v: want nothing built", again, err)
	}
	before := c.Computed()
	ks := []int64{0, want / 2, want - 1}
	if _, err := c.ChunkSets(ctx, tb, gs, ks, Read{}); err != nil {
		t.Fatal(err)
	}
	if c.Computed() != before {
		t.Fatal("a read after the prebuild computed chunks")
	}
}

// TestReadBoundWarms: a read whose missing chunks cost more than its
// MaxWork builds nothing itself: it gets a *WarmingError naming the setting
// and the work, the chunks are built in the background, and the same read
// is then served from them. Within the bound the read builds what it needs.
func TestReadBoundWarms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCache(t, Config{})
	p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
	tb, err := c.Sanitizer(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	gs := []estimate.G{identityG}
	ks := []int64{30, 31, 90}
	start, chunk := RunWork(p, estimate.ChunkSize(p))
	need := 2*start + 3*chunk // two runs: {30, 31} and {90}
	_, err = c.ChunkSets(ctx, tb, gs, ks, Read{MaxWork: int64(need) - 1, Setting: "TEST_BOUND"})
	var warming *WarmingError
	if !errors.As(err, &warming) || !strings.Contains(warming.Msg, "TEST_BOUND") {
		t.Fatalf("err = %v, want a *WarmingError naming TEST_BOUND", err)
	}
	c.Wait() // the background build
	built := c.Computed()
	if built == 0 {
		t.Fatal("nothing was built in the background")
	}
	sets, err := c.ChunkSets(ctx, tb, gs, ks, Read{MaxWork: int64(need) - 1, Setting: "TEST_BOUND"})
	if err != nil || len(sets[0].Chunks) != len(ks) || c.Computed() != built {
		t.Fatalf("the retry: %v, %d chunks, %d more builds", err, len(sets[0].Chunks), c.Computed()-built)
	}
	other := []int64{200}
	if _, err := c.ChunkSets(ctx, tb, gs, other, Read{MaxWork: int64(start + chunk), Setting: "TEST_BOUND"}); err != nil {
		t.Fatalf("a read within its bound: %v", err)
	}
}
