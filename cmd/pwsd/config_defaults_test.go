package main

import (
	"testing"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// TestEnvironmentDefaultsAreTheSharedDefaults: with no PWSD_* variable set
// the configuration is exactly the API's and the service's own defaults, so
// the environment table (README, --help) cannot drift from them.
func TestEnvironmentDefaultsAreTheSharedDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != api.DefaultLimits() {
		t.Errorf("limits %+v\nwant api.DefaultLimits() %+v", c.Limits, api.DefaultLimits())
	}
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"PWSD_CACHE_BYTES", c.CacheBytes, service.DefaultCacheBytes},
		{"PWSD_MAX_TABLE_WORK", c.MaxTableWork, service.DefaultMaxTableWork},
		{"PWSD_TABLE_CACHE_BYTES", c.TableCacheBytes, store.DefaultTableCacheBytes},
		{"PWSD_MEMORY_LIMIT", c.MemoryLimit, defaultMemoryLimit},
		{"PWSD_HUGEPAGE_HEAP_BYTES", c.HugePageHeapBytes, hugepages.DefaultHeapBytes},
		{"PWSD_WARM_START_SETS", int64(c.WarmStartSets), service.DefaultWarmStartSets},
		{"PWSD_IDEMPOTENCY_TTL", int64(c.IdempotencyTTL), int64(service.DefaultIdempotencyTTL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("default %d, want %d", tc.got, tc.want)
			}
		})
	}
}
