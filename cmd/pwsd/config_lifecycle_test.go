package main

import (
	"strings"
	"testing"
	"time"
)

// TestRetentionConfig: PWSD_SAMPLE_TTL accepts 0 (keep forever) and
// positive durations; PWSD_IDEMPOTENCY_TTL and PWSD_PURGE_INTERVAL must be
// positive; defaults are 0, 24h and 1m.
func TestRetentionConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		env              map[string]string
		ok               bool
		sample, idem, pi time.Duration
	}{
		{"defaults", nil, true, 0, 24 * time.Hour, time.Minute},
		{"ttl", map[string]string{"PWSD_SAMPLE_TTL": "720h", "PWSD_IDEMPOTENCY_TTL": "1h", "PWSD_PURGE_INTERVAL": "5s"}, true, 720 * time.Hour, time.Hour, 5 * time.Second},
		{"zero ttl", map[string]string{"PWSD_SAMPLE_TTL": "0"}, true, 0, 24 * time.Hour, time.Minute},
		{"negative ttl", map[string]string{"PWSD_SAMPLE_TTL": "-1s"}, false, 0, 0, 0},
		{"bad ttl", map[string]string{"PWSD_SAMPLE_TTL": "forever"}, false, 0, 0, 0},
		{"zero idempotency ttl", map[string]string{"PWSD_IDEMPOTENCY_TTL": "0"}, false, 0, 0, 0},
		{"zero purge interval", map[string]string{"PWSD_PURGE_INTERVAL": "0s"}, false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(func(k string) string { return tc.env[k] })
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (c.SampleTTL != tc.sample || c.IdempotencyTTL != tc.idem || c.PurgeInterval != tc.pi) {
				t.Fatalf("got %v %v %v", c.SampleTTL, c.IdempotencyTTL, c.PurgeInterval)
			}
		})
	}
}

// TestWarmStartConfig: PWSD_WARM_START_SETS takes 0 (no warm start) up to
// the sanitizer tables a process keeps (64), 4 by default; anything else is
// refused naming the variable.
func TestWarmStartConfig(t *testing.T) {
	t.Parallel()
	checkEnvValues(t, "PWSD_WARM_START_SETS", func(c config) int64 { return int64(c.WarmStartSets) }, []envCase{
		{"", true, 4}, {"0", true, 0}, {"1", true, 1}, {"64", true, 64},
		{"65", false, 0}, {"-1", false, 0}, {"four", false, 0}, {"1.5", false, 0},
	})
}

// TestHugePageHeapConfig: PWSD_HUGEPAGE_HEAP_BYTES takes 0 (no advice) up
// to 64 GiB, 1 GiB by default; anything else is refused naming the variable.
func TestHugePageHeapConfig(t *testing.T) {
	t.Parallel()
	checkEnvValues(t, "PWSD_HUGEPAGE_HEAP_BYTES", func(c config) int64 { return c.HugePageHeapBytes }, []envCase{
		{"", true, 1 << 30}, {"0", true, 0}, {"4194304", true, 4 << 20}, {"68719476736", true, 64 << 30},
		{"68719476737", false, 0}, {"-1", false, 0}, {"1GiB", false, 0}, {"1.5", false, 0},
	})
}

// envCase is one value of a variable, whether loadConfig accepts it, and
// the setting it makes when it does.
type envCase struct {
	value string
	ok    bool
	want  int64
}

// checkEnvValues loads the configuration with name set to each case's value
// (every other variable unset): an accepted value must give got == want, a
// refused one an error that names the variable.
func checkEnvValues(t *testing.T, name string, got func(config) int64, cases []envCase) {
	t.Helper()
	for _, tc := range cases {
		c, err := loadConfig(func(k string) string {
			if k == name {
				return tc.value
			}
			return ""
		})
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), name)) {
			t.Fatalf("%s=%q: err = %v, want ok=%v", name, tc.value, err, tc.ok)
		}
		if tc.ok && got(c) != tc.want {
			t.Fatalf("%s=%q: %d, want %d", name, tc.value, got(c), tc.want)
		}
	}
}
