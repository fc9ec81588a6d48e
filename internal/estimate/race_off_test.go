//go:build !race

package estimate

// raceOn: see race_on_test.go.
const raceOn = false
