//go:build race

package estimate

// raceOn: the race detector slows the sanitizer's draws and the table builds
// about tenfold, so TestIntervalsByRegime runs one cell under -race;
// scripts/test.sh's oracle phase runs it whole without it.
const raceOn = true
