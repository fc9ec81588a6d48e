// Package checks holds pwsd's one field-error type and the small validators
// every domain constructor calls (in the manner of the checks package of
// Google's differential-privacy library).
//
// A FieldError names the domain parameter at fault by its domain name
// ("epsilon", "probabilities[2]", "events[3].user"); the HTTP layer maps that
// name to the field or query parameter as the client wrote it (Prefix adds
// the JSON object holding the parameter, e.g. "privacy.epsilon"). Reasons
// say what is wrong in words and never quote the value: values may be
// private data.
package checks

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FieldError is one invalid parameter.
type FieldError struct {
	// Field is the parameter's domain name, e.g. "epsilon" or
	// "probabilities[2]".
	Field string
	// Reason says what is wrong, e.g. "must be greater than 0".
	Reason string
}

// Error returns "field reason".
func (e *FieldError) Error() string { return e.Field + " " + e.Reason }

// Errorf returns a *FieldError for field with a formatted reason.
func Errorf(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Errors lists several invalid parameters of one request, so that one
// answer names all of them. Build it with Add and AddErr and return Err.
type Errors []FieldError

// Error joins the field errors.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Field + " " + e.Reason
	}
	return "invalid parameters: " + strings.Join(parts, "; ")
}

// Add records that field is invalid for reason.
func (es *Errors) Add(field, reason string) {
	*es = append(*es, FieldError{Field: field, Reason: reason})
}

// AddErr records err: its field errors when it holds any (see Fields), else
// err's text under field. A nil err adds nothing.
func (es *Errors) AddErr(field string, err error) {
	if err == nil {
		return
	}
	if fs, ok := Fields(err); ok {
		*es = append(*es, fs...)
		return
	}
	es.Add(field, err.Error())
}

// Err returns es as an error, or nil when it is empty.
func (es Errors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// Fields returns the field errors err holds (a *FieldError or an Errors,
// possibly wrapped) and whether it holds any.
func Fields(err error) ([]FieldError, bool) {
	var fe *FieldError
	var es Errors
	switch {
	case err == nil:
		return nil, false
	case errors.As(err, &fe):
		return []FieldError{*fe}, true
	case errors.As(err, &es) && len(es) > 0:
		return es, true
	}
	return nil, false
}

// Prefix returns err with prefix and a dot put before each field name (the
// JSON object holding the parameters: Prefix("privacy", err) turns
// "epsilon" into "privacy.epsilon"). Errors holding no field error, and an
// empty prefix, return err unchanged.
func Prefix(prefix string, err error) error {
	fs, ok := Fields(err)
	if !ok || prefix == "" {
		return err
	}
	out := make(Errors, len(fs))
	for i, f := range fs {
		out[i] = FieldError{Field: prefix + "." + f.Field, Reason: f.Reason}
	}
	if len(out) == 1 {
		return &out[0]
	}
	return out
}

// minNormal is the smallest normal float64. Subnormal thresholds and
// probabilities lose precision in every product the sanitizer forms, so
// NormalPositive and NormalProbability refuse them.
const minNormal = 0x1p-1022

// finite checks that v is a finite number.
func finite(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &FieldError{Field: field, Reason: "must be a finite number"}
	}
	return nil
}

// Positive checks that v is a finite number greater than 0.
func Positive(field string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return &FieldError{Field: field, Reason: "must be a finite number greater than 0"}
	}
	return nil
}

// NormalPositive checks that v is finite, greater than 0 and not subnormal.
func NormalPositive(field string, v float64) error { return normal(field, v, Positive) }

// normal checks v with check, then that v is not subnormal.
func normal(field string, v float64, check func(string, float64) error) error {
	if err := check(field, v); err != nil {
		return err
	}
	if v < minNormal {
		return &FieldError{Field: field, Reason: "must be at least 2.2250738585072014e-308, the smallest normal float64"}
	}
	return nil
}

// Probability checks that 0 < v <= 1.
func Probability(field string, v float64) error {
	if !(v > 0) || v > 1 {
		return &FieldError{Field: field, Reason: "must be greater than 0 and at most 1"}
	}
	return nil
}

// NormalProbability checks that 0 < v <= 1 and that v is not subnormal.
func NormalProbability(field string, v float64) error { return normal(field, v, Probability) }

// openUnit checks that 0 < v < 1.
func openUnit(field string, v float64) error {
	if !(v > 0) || !(v < 1) {
		return &FieldError{Field: field, Reason: "must be greater than 0 and less than 1"}
	}
	return nil
}

// inRange checks that lo <= v <= hi (so v is not NaN).
func inRange(field string, v, lo, hi float64) error {
	if !(v >= lo && v <= hi) {
		return &FieldError{Field: field, Reason: fmt.Sprintf("must be a number from %g to %g", lo, hi)}
	}
	return nil
}

// intRange checks that the integer n lies in [lo, hi].
func intRange(field string, n, lo, hi int64) error {
	if n < lo || n > hi {
		return &FieldError{Field: field, Reason: fmt.Sprintf("must be an integer from %d to %d", lo, hi)}
	}
	return nil
}

// Integral checks that v is a whole number of magnitude at most 2^53 (so
// that it converts to int64 exactly).
func Integral(field string, v float64) error {
	if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return &FieldError{Field: field, Reason: "must be an integer of magnitude at most 2^53"}
	}
	return nil
}

// oneOf checks that v is one of allowed; the reason lists them.
func oneOf[T ~string](field string, v T, allowed ...T) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return &FieldError{Field: field, Reason: "must be one of " + strings.Join(names, ", ")}
}

// MaxIdentifierBytes bounds every identifier pwsd accepts: sample, stream
// and counter ids, dataset names and the ids inside listing cursors.
const MaxIdentifierBytes = 128

// Identifier reports whether s may name a resource: 1 to
// MaxIdentifierBytes bytes of valid UTF-8 without control characters (C0,
// DEL and C1, NUL included). It is the one rule for identifiers: the API
// applies it to path segments and cursors before anything else runs, and
// the stores apply it again before a query, so that no such value reaches
// the database (which refuses NUL and invalid UTF-8) or a log line.
func Identifier(s string) bool {
	if s == "" || len(s) > MaxIdentifierBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// PlainText checks that a free-text field (a charge's description) is
// valid UTF-8 without control characters, NUL included: the stores keep
// such text in JSON columns, which cannot hold NUL.
func PlainText(field, s string) error {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return &FieldError{Field: field, Reason: "must be valid UTF-8 without control characters"}
	}
	return nil
}

// UnitDelta checks that the delta of a budget or charge lies in [0, 1] and
// returns it with a negative zero made +0: JSON's -0 is the number 0, and
// pwsd never stores or answers a signed zero (a ledger entry "delta": -0).
func UnitDelta(field string, v float64) (float64, error) {
	if !(v >= 0 && v <= 1) {
		return 0, &FieldError{Field: field, Reason: "must be at least 0 and at most 1"}
	}
	if v == 0 {
		return 0, nil // -0 == 0: both become +0
	}
	return v, nil
}
