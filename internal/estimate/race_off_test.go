//go:build !race

package estimate

// raceEnabled reports a -race build: the statistical simulations, which
// exercise no concurrency, are skipped there and run without -race in make
// test's oracle phase (docs/testing.md).
const raceEnabled = false
