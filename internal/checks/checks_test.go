package checks

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// Each validator accepts exactly the values its doc comment names and, on
// failure, returns a *FieldError naming the field it was given.
func TestValidators(t *testing.T) {
	t.Parallel()
	inf, nan := math.Inf(1), math.NaN()
	sub := minNormal / 2
	cases := []struct {
		name string
		err  error
		ok   bool
	}{
		{"finite 0", finite("x", 0), true},
		{"finite -1e308", finite("x", -1e308), true},
		{"finite +inf", finite("x", inf), false},
		{"finite nan", finite("x", nan), false},
		{"positive 1e-300", Positive("x", 1e-300), true},
		{"positive 0", Positive("x", 0), false},
		{"positive -1", Positive("x", -1), false},
		{"positive inf", Positive("x", inf), false},
		{"positive nan", Positive("x", nan), false},
		{"normal positive min normal", NormalPositive("x", minNormal), true},
		{"normal positive subnormal", NormalPositive("x", sub), false},
		{"probability 1", Probability("x", 1), true},
		{"probability 0.5", Probability("x", 0.5), true},
		{"probability 0", Probability("x", 0), false},
		{"probability above 1", Probability("x", math.Nextafter(1, 2)), false},
		{"probability nan", Probability("x", nan), false},
		{"normal probability subnormal", NormalProbability("x", sub), false},
		{"normal probability 1", NormalProbability("x", 1), true},
		{"open unit 0.5", openUnit("x", 0.5), true},
		{"open unit 1", openUnit("x", 1), false},
		{"open unit 0", openUnit("x", 0), false},
		{"open unit nan", openUnit("x", nan), false},
		{"range lo", inRange("x", -1, -1, 1), true},
		{"range hi", inRange("x", 1, -1, 1), true},
		{"range above", inRange("x", 1.5, -1, 1), false},
		{"range nan", inRange("x", nan, -1, 1), false},
		{"int range in", intRange("x", 5, 1, 5), true},
		{"int range below", intRange("x", 0, 1, 5), false},
		{"int range above", intRange("x", 6, 1, 5), false},
		{"integral 3", Integral("x", 3), true},
		{"integral 2^53", Integral("x", 1<<53), true},
		{"integral 2.5", Integral("x", 2.5), false},
		{"integral 2^54", Integral("x", 1<<54), false},
		{"integral nan", Integral("x", nan), false},
		{"one of yes", oneOf("x", "b", "a", "b"), true},
		{"one of no", oneOf("x", "c", "a", "b"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok {
				if tc.err != nil {
					t.Fatalf("got %v, want nil", tc.err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(tc.err, &fe) || fe.Field != "x" || fe.Reason == "" {
				t.Fatalf("got %v, want a *FieldError on x with a reason", tc.err)
			}
		})
	}
}

// Fields finds field errors through wrapping, Errors collects several and
// Prefix renames every field under the given JSON object.
func TestFieldsAndPrefix(t *testing.T) {
	t.Parallel()
	var es Errors
	es.Add("epsilon", "must be a finite number greater than 0")
	es.AddErr("ignored", Errorf("n", "must be an integer from %d to %d", 1, 10))
	es.AddErr("alpha", errors.New("is not valid"))
	es.AddErr("unused", nil)
	cases := []struct {
		name   string
		err    error
		prefix string
		want   []string
	}{
		{"nil", nil, "privacy", nil},
		{"plain error", errors.New("boom"), "privacy", nil},
		{"one", Errorf("epsilon", "bad"), "", []string{"epsilon bad"}},
		{"one prefixed", Errorf("epsilon", "bad"), "privacy", []string{"privacy.epsilon bad"}},
		{"wrapped prefixed", fmt.Errorf("ctx: %w", Errorf("probabilities[1]", "bad")), "sampling", []string{"sampling.probabilities[1] bad"}},
		{"several", es.Err(), "", []string{"epsilon must be a finite number greater than 0", "n must be an integer from 1 to 10", "alpha is not valid"}},
		{"several prefixed", es.Err(), "events[3]", []string{"events[3].epsilon must be a finite number greater than 0", "events[3].n must be an integer from 1 to 10", "events[3].alpha is not valid"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs, ok := Fields(Prefix(tc.prefix, tc.err))
			if ok != (tc.want != nil) || len(fs) != len(tc.want) {
				t.Fatalf("Fields = %v, %v; want %v", fs, ok, tc.want)
			}
			for i, f := range fs {
				if got := f.Field + " " + f.Reason; got != tc.want[i] {
					t.Errorf("field %d = %q, want %q", i, got, tc.want[i])
				}
			}
		})
	}
	if (Errors{}).Err() != nil {
		t.Error("empty Errors.Err() is not nil")
	}
}
