//go:build race

package sanitize

// raceOn: the race detector slows the row computations about tenfold, so
// the largest oracle grids run a subset under -race; scripts/test.sh runs
// them whole without it.
const raceOn = true
