//go:build !race

package sanitize

// raceOn: see race_on_test.go.
const raceOn = false
