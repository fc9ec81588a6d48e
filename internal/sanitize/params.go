package sanitize

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pwsd/pwsd/internal/checks"
)

// Privacy is an (epsilon, delta) differential-privacy guarantee. Construct it
// with NewPrivacy; the zero value is invalid.
type Privacy struct {
	Epsilon float64
	Delta   float64
}

// NewPrivacy validates and returns a Privacy: epsilon > 0 and finite,
// 0 < delta <= 1 (delta = 1 means no privacy).
func NewPrivacy(epsilon, delta float64) (Privacy, error) {
	p := Privacy{Epsilon: epsilon, Delta: delta}
	return p, p.Validate()
}

// Validate reports whether p is a usable guarantee; the error names every
// invalid field (checks.Errors).
func (p Privacy) Validate() error {
	var es checks.Errors
	es.AddErr("epsilon", checks.Positive("epsilon", p.Epsilon))
	es.AddErr("delta", checks.Probability("delta", p.Delta))
	return es.Err()
}

// Scheme names how the client drew its non-private sample.
type Scheme string

// The sampling schemes of docs/algorithms.md.
const (
	SchemePPSWOR   Scheme = "ppswor"   // q_i = 1 - exp(-tau i^p)
	SchemePriority Scheme = "priority" // q_i = min(1, tau i^p)
	SchemeNone     Scheme = "none"     // q_i = 1
	SchemeCustom   Scheme = "custom"   // q_1..q_n listed, q_i = q_n beyond
)

// Sampling is a validated sampling scheme: it yields the non-decreasing
// inclusion probabilities q_i. Construct it with NewSampling.
type Sampling struct {
	Scheme        Scheme
	Threshold     float64   // tau, ppswor and priority only
	Power         float64   // p, ppswor and priority only (default 1)
	Probabilities []float64 // custom only: q_1..q_n
}

// NewSampling validates and returns a Sampling. A power of 0 means the
// default 1. Custom probabilities must be non-decreasing and lie in (0, 1].
func NewSampling(scheme Scheme, threshold, power float64, probabilities []float64) (Sampling, error) {
	if power == 0 && (scheme == SchemePPSWOR || scheme == SchemePriority) {
		power = 1
	}
	s := Sampling{Scheme: scheme, Threshold: threshold, Power: power, Probabilities: probabilities}
	return s, s.Validate()
}

// Validate reports whether s is a usable scheme.
func (s Sampling) Validate() error {
	switch s.Scheme {
	case SchemePPSWOR, SchemePriority:
		// Subnormal thresholds lose precision in every product the
		// sanitizer forms, so they are refused.
		if err := checks.NormalPositive("threshold", s.Threshold); err != nil {
			return err
		}
		return checks.Positive("power", s.Power)
	case SchemeNone:
	case SchemeCustom:
		if len(s.Probabilities) == 0 {
			return &checks.FieldError{Field: "probabilities", Reason: "must list at least one probability"}
		}
		prev := 0.0
		for i, q := range s.Probabilities {
			field := fmt.Sprintf("probabilities[%d]", i)
			if err := checks.NormalProbability(field, q); err != nil {
				return err
			}
			if q < prev {
				return &checks.FieldError{Field: field, Reason: "must not be smaller than the previous probability"}
			}
			prev = q
		}
	default:
		return &checks.FieldError{Field: "scheme", Reason: "must be one of ppswor, priority, none, custom"}
	}
	return nil
}

// Q returns q_i, the probability that a key of frequency i was sampled.
// Q(0) = 0.
func (s Sampling) Q(i int64) float64 {
	if i <= 0 {
		return 0
	}
	switch s.Scheme {
	case SchemePPSWOR:
		return -math.Expm1(-s.Threshold * math.Pow(float64(i), s.Power))
	case SchemePriority:
		return math.Min(1, s.Threshold*math.Pow(float64(i), s.Power))
	case SchemeCustom:
		if i > int64(len(s.Probabilities)) {
			return s.Probabilities[len(s.Probabilities)-1]
		}
		return s.Probabilities[i-1]
	default:
		return 1
	}
}

// Method selects the frequency sanitizer.
type Method string

// The two frequency sanitizers.
const (
	MethodDiscrete      Method = "discrete"       // Algorithm 4
	MethodMaxSeparation Method = "max_separation" // Algorithm 5 (default)
)

// Defaults of a release description whose method or scheme is not given:
// Algorithm 5, and a sample that is the whole data set.
const (
	DefaultMethod = MethodMaxSeparation
	DefaultScheme = SchemeNone
)

// Validate reports whether m names a known method.
func (m Method) Validate() error {
	if m != MethodDiscrete && m != MethodMaxSeparation {
		return &checks.FieldError{Field: "method", Reason: "must be discrete or max_separation"}
	}
	return nil
}

// canonFloat renders f so that equal parameters always give one key:
// shortest round-trip formatting of the float64 value.
func canonFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Key returns the canonical cache key of a table's parameters.
func Key(kind string, p Privacy, s Sampling, m Method) string {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteString("|eps=" + canonFloat(p.Epsilon) + "|delta=" + canonFloat(p.Delta))
	b.WriteString("|scheme=" + string(s.Scheme))
	switch s.Scheme {
	case SchemePPSWOR, SchemePriority:
		b.WriteString("|tau=" + canonFloat(s.Threshold) + "|p=" + canonFloat(s.Power))
	case SchemeCustom:
		b.WriteString("|q=")
		for i, q := range s.Probabilities {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(canonFloat(q))
		}
	}
	if m != "" {
		b.WriteString("|method=" + string(m))
	}
	return b.String()
}

// ParseKey returns the parameters of key, a canonical key Key(kind, p, s,
// m) with m not empty, or an error when key is not exactly such a key
// (anything else in it, parameters that fail validation, or a form Key
// does not write: the parsed parameters must give key back). The service
// reads the parameter sets of stored tables' keys with it.
func ParseKey(kind, key string) (Privacy, Sampling, Method, error) {
	bad := func(what string) (Privacy, Sampling, Method, error) {
		return Privacy{}, Sampling{}, "", fmt.Errorf("sanitize: not a %s key: %s", kind, what)
	}
	fields := strings.Split(key, "|")
	if len(fields) < 4 || fields[0] != kind {
		return bad("kind")
	}
	fields = fields[1:]
	value := func(name string) (string, bool) {
		if len(fields) == 0 || !strings.HasPrefix(fields[0], name+"=") {
			return "", false
		}
		v := fields[0][len(name)+1:]
		fields = fields[1:]
		return v, true
	}
	num := func(name string) (float64, bool) {
		v, ok := value(name)
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	eps, ok1 := num("eps")
	delta, ok2 := num("delta")
	scheme, ok3 := value("scheme")
	if !ok1 || !ok2 || !ok3 {
		return bad("privacy or scheme")
	}
	var tau, power float64
	var qs []float64
	switch Scheme(scheme) {
	case SchemePPSWOR, SchemePriority:
		var okT, okP bool
		tau, okT = num("tau")
		power, okP = num("p")
		if !okT || !okP {
			return bad("threshold or power")
		}
	case SchemeCustom:
		list, ok := value("q")
		if !ok {
			return bad("probabilities")
		}
		for _, f := range strings.Split(list, ",") {
			q, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return bad("probabilities")
			}
			qs = append(qs, q)
		}
	}
	m, ok := value("method")
	if !ok || len(fields) != 0 {
		return bad("method")
	}
	p, err := NewPrivacy(eps, delta)
	if err != nil {
		return bad(err.Error())
	}
	s, err := NewSampling(Scheme(scheme), tau, power, qs)
	if err != nil {
		return bad(err.Error())
	}
	if err := Method(m).Validate(); err != nil {
		return bad(err.Error())
	}
	if Key(kind, p, s, Method(m)) != key {
		return bad("not canonical")
	}
	return p, s, Method(m), nil
}
