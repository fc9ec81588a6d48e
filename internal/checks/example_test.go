package checks_test

import (
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/checks"
)

// A domain constructor collects every invalid parameter in one Errors, so
// that one answer names all of them; the HTTP layer puts the JSON object
// holding them before each name with Prefix.
func ExampleErrors() {
	validate := func(eps, delta float64) error {
		var es checks.Errors
		es.AddErr("epsilon", checks.NormalPositive("epsilon", eps))
		_, err := checks.UnitDelta("delta", delta)
		es.AddErr("delta", err)
		return es.Err()
	}
	fmt.Println(validate(0.5, 1e-6))
	err := checks.Prefix("privacy", validate(-1, 2))
	fields, _ := checks.Fields(err)
	for _, f := range fields {
		fmt.Printf("%s: %s\n", f.Field, f.Reason)
	}
	// Output:
	// <nil>
	// privacy.epsilon: must be a finite number greater than 0
	// privacy.delta: must be at least 0 and at most 1
}

// Fields finds field errors however deeply they are wrapped; other errors
// hold none (the HTTP layer answers those without naming a field).
func ExampleFields() {
	wrapped := fmt.Errorf("creating dataset: %w", checks.Errorf("epsilon_budget", "must be at most %g", 1e6))
	fs, ok := checks.Fields(wrapped)
	fmt.Println(ok, fs[0].Field, "-", fs[0].Reason)
	_, ok = checks.Fields(errors.New("the store is unavailable"))
	fmt.Println(ok)
	// Output:
	// true epsilon_budget - must be at most 1e+06
	// false
}
