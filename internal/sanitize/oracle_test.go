package sanitize

import "testing"

// oracleOnly skips the calling test in -short mode. It marks the package's
// oracle grids and statistical checks, the tests that cost CPU-minutes under
// the race detector and exercise no concurrency of their own: make test
// runs the package with -race -short (what runs concurrently, under the race
// detector) and then in full without -race (every oracle, once), so a grid
// never runs twice (scripts/test.sh, docs/testing.md).
func oracleOnly(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("oracle: make test runs it once, without -race (scripts/test.sh)")
	}
}
