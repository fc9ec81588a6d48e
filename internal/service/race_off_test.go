//go:build !race

package service

// raceOn: see race_on_test.go.
const raceOn = false
