package tablecache

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestKeptRowsConfig: negative bounds are refused at construction; a zero
// byte bound takes the default; the stored rows' key names the algorithm
// version, the encoding's format and both bounds, so that rows of another
// binary or another warm-up are never looked up.
func TestKeptRowsConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		steps        int64
		bytes        int
		ok           bool
		wantSteps    int64
		wantBytesKey string
	}{
		{"off", 0, 0, true, 0, "bytes=12582912"},
		{"on, default bytes", 1000, 0, true, 1000, "bytes=12582912"},
		{"on, own bytes", 1000, 4096, true, 1000, "bytes=4096"},
		{"negative steps", -1, 0, false, 0, ""},
		{"negative bytes", 1000, -1, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Store: store.NewMemory(), KeptRowsSteps: tc.steps, KeptRowsBytes: tc.bytes})
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			if c.kept.steps != tc.wantSteps {
				t.Fatalf("steps %d, want %d", c.kept.steps, tc.wantSteps)
			}
			p, smp := keptParamsOf(t)
			key := c.KeptRowsKey(p, smp, sanitize.MethodDiscrete)
			for _, part := range []string{AlgorithmVersion, "|kept|", fmt.Sprintf("format=%d", sanitize.KeptRowsFormat), tc.wantBytesKey} {
				if !strings.Contains(key, part) {
					t.Fatalf("key %q lacks %q", key, part)
				}
			}
		})
	}
}

// keptParamsOf are small public parameters whose warm-up reaches the
// stationary rows quickly (ppswor tau 0.01).
func keptParamsOf(t testing.TB) (sanitize.Privacy, sanitize.Sampling) {
	t.Helper()
	p, err := sanitize.NewPrivacy(0.5, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, smp
}

// TestKeptRowsWrittenBehind: with kept rows on, the first Sanitizer of a
// parameter set in a process queues a warm-up that stores the kept rows
// (Wait waits for it), and a second Cache over the same store restores
// them without a warm-up; after StopOptional no warm-up runs, and with kept
// rows off nothing is stored.
func TestKeptRowsWrittenBehind(t *testing.T) {
	t.Parallel()
	p, smp := keptParamsOf(t)
	m := sanitize.MethodDiscrete
	for _, tc := range []struct {
		name          string
		steps         int64
		stop          bool
		stored        bool
		thenRestored  int64
		stepsExpected bool
	}{
		{"on", 1 << 20, false, true, 1, true},
		{"stopped", 1 << 20, true, false, 0, false},
		{"off", 0, false, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := store.NewMemory()
			c, err := New(Config{Store: st, KeptRowsSteps: tc.steps})
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop {
				c.StopOptional()
			}
			if _, err := c.Sanitizer(p, smp, m); err != nil {
				t.Fatal(err)
			}
			c.Wait()
			if got := c.KeptRowsStats(); (got.Stepped > 0) != tc.stepsExpected || got.Restored != 0 {
				t.Fatalf("stats %+v, want a warm-up: %v, nothing restored", got, tc.stepsExpected)
			}
			_, ok, err := st.GetTable(context.Background(), c.KeptRowsKey(p, smp, m))
			if err != nil || ok != tc.stored {
				t.Fatalf("stored: %v (%v), want %v", ok, err, tc.stored)
			}
			again, err := New(Config{Store: st, KeptRowsSteps: tc.steps})
			if err != nil {
				t.Fatal(err)
			}
			again.StopOptional() // a restore needs no warm-up
			tb, err := again.Sanitizer(p, smp, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := again.KeptRowsStats(); got.Restored != tc.thenRestored || got.Stepped != 0 {
				t.Fatalf("the second cache: stats %+v, want %d restored and no warm-up", got, tc.thenRestored)
			}
			// A restored table reaches its stationary rows with no row
			// stepped (the stationary cycle is stored).
			if tc.thenRestored == 1 {
				if _, err := tb.Row(1_000_000_000); err != nil {
					t.Fatal(err)
				}
				if n := tb.RowsStepped(); n > 16 {
					t.Fatalf("the restored table stepped %d rows to reach row 1e9 (its cycle's check is at most 16)", n)
				}
			}
		})
	}
}
