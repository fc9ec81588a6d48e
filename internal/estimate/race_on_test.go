//go:build race

package estimate

// raceEnabled reports a -race build: the statistical simulations, which
// exercise no concurrency, are skipped (or, TestIntervalsByRegime, run one
// cell) there; make test runs them whole without -race in its oracle phase
// (docs/testing.md).
const raceEnabled = true
