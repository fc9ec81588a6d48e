package api

import (
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// PrivacyParams is the (epsilon, delta) guarantee of a release. The
// validator checks only that both are given; their values are checked by
// sanitize.NewPrivacy, the one place that defines a valid guarantee (the
// swag bounds below only document it).
type PrivacyParams struct {
	Epsilon *float64 `json:"epsilon" validate:"required" example:"0.5"`
	Delta   *float64 `json:"delta" validate:"required" maximum:"1" example:"0.000001"`
}

// SamplingParams describes how the client drew its non-private sample.
type SamplingParams struct {
	Scheme        string    `json:"scheme" validate:"required,oneof=ppswor priority none custom" enums:"ppswor,priority,none,custom"`
	Threshold     *float64  `json:"threshold,omitempty" example:"0.01"`
	Power         *float64  `json:"power,omitempty" example:"1"`
	Probabilities []float64 `json:"probabilities,omitempty"`
}

// privacy converts validated DTO fields to the domain type.
func (p PrivacyParams) privacy(prefix string) (sanitize.Privacy, error) {
	pr, err := sanitize.NewPrivacy(*p.Epsilon, *p.Delta)
	if err != nil {
		return pr, paramProblem(prefix, err)
	}
	return pr, nil
}

// sampling is the one reader of a sampling description, for JSON and
// NDJSON bodies, CSV uploads and the query of the table and plot routes: it
// checks which fields go together (threshold with ppswor and priority,
// probabilities with custom, at most maxQ of them, PWSD_MAX_CUSTOM_Q) and
// leaves every value to sanitize.NewSampling. Its errors are field errors
// (package checks) named by the parameter: callers reading a body put
// "sampling." before them (paramProblem).
func (s SamplingParams) sampling(maxQ int) (sanitize.Sampling, error) {
	scheme := sanitize.Scheme(s.Scheme)
	var tau, power float64
	if s.Threshold != nil {
		tau = *s.Threshold
	}
	if s.Power != nil {
		power = *s.Power
	}
	switch scheme {
	case sanitize.SchemePPSWOR, sanitize.SchemePriority:
		if s.Threshold == nil {
			return sanitize.Sampling{}, checks.Errorf("threshold", "is required for ppswor and priority")
		}
		if s.Probabilities != nil {
			return sanitize.Sampling{}, checks.Errorf("probabilities", "is allowed only with scheme custom")
		}
	case sanitize.SchemeCustom:
		if len(s.Probabilities) == 0 {
			return sanitize.Sampling{}, checks.Errorf("probabilities", "is required for scheme custom")
		}
		if len(s.Probabilities) > maxQ {
			return sanitize.Sampling{}, checks.Errorf("probabilities", "lists more probabilities than allowed (PWSD_MAX_CUSTOM_Q)")
		}
		if s.Threshold != nil || s.Power != nil {
			return sanitize.Sampling{}, checks.Errorf("threshold", "is not allowed with scheme custom")
		}
	case sanitize.SchemeNone:
		if s.Threshold != nil || s.Probabilities != nil {
			return sanitize.Sampling{}, checks.Errorf("threshold", "is not allowed with scheme none")
		}
	}
	return sanitize.NewSampling(scheme, tau, power, s.Probabilities)
}

// paramProblem renders a domain parameter error as a 422 naming its fields
// under prefix, the JSON path of the object holding them ("privacy.").
func paramProblem(prefix string, err error) error {
	if fs, ok := checks.Fields(err); ok {
		return fieldsProblem(prefix, fs)
	}
	return invalid(prefix, "is not valid")
}
