package api_test

import (
	"os"
	"testing"

	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

// pgtestMain advises the heap for huge pages as cmd/pwsd does when it starts
// (PWSD_HUGEPAGE_HEAP_BYTES' default), so that the in-process benchmarks
// (BenchmarkZipfWorkload and the others scripts/bench_compare.sh runs)
// measure the process pwsd runs; then it runs the tests over pgtest's
// PostgreSQL.
func pgtestMain(m *testing.M) {
	hugepages.AdviseHeap(hugepages.DefaultHeapBytes)
	os.Exit(pgtest.Main(m))
}
