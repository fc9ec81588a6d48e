//go:build race

package service

// raceOn: the race detector slows the maths about tenfold; timing tests
// run without it (scripts/test.sh's non-race phase).
const raceOn = true
