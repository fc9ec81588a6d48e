package panprivate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pwsd/pwsd/internal/binenc"
)

// Kind names a pan-private stream estimator. The values are the API's
// "estimator" field.
type Kind string

// The estimators of docs/algorithms.md §7-8, in wire-code order. A new kind
// adds its constant here, its kindSpec in its own file and that spec to
// kindSpecs below; api/streams.go spells the names for swag and the
// validator, and a test there says when it lags.
const (
	KindDensity      Kind = "density"       // fraction of the universe that appears (Fig. 1, Algs. 2-3)
	KindCroppedMean  Kind = "cropped_mean"  // mean of min(n_x, t) over the universe (Fig. 2)
	KindHeavyHitters Kind = "heavy_hitters" // fraction of users appearing at least k times (Fig. 3)
	KindIncidence    Kind = "incidence"     // fraction of users appearing exactly t times (Figs. 4-5)
)

// kindSpecs is the registry: every estimator kind, in wire-code order (the
// order of the API's enums). It
// is the only list of kinds; New, Unmarshal, Config.Validate, the state
// encoding and the API documentation (Kinds) all read it.
func kindSpecs() []kindSpec {
	return []kindSpec{densitySpec(), croppedMeanSpec(), heavyHittersSpec(), incidenceSpec()}
}

// kindSpec is everything the package knows about one estimator kind beyond
// its own file: what it is called (in the API and on the wire), which
// configurations it accepts and how to build or decode one. Each kind's
// file returns its spec from a function named after it (densitySpec, ...).
type kindSpec struct {
	// kind is the API name.
	kind Kind
	// code is the kind's byte in the state encoding. Stored states carry
	// it: never renumber or reuse one.
	code byte
	// algorithms are the accepted Config.Algorithm values and
	// defaultAlgorithm the one an empty Algorithm resolves to.
	algorithms       []Algorithm
	defaultAlgorithm Algorithm
	// maxEpsilon is the largest epsilon the kind's privacy theorem covers.
	maxEpsilon float64
	// params are the per-kind Config fields (optionalFields) the kind
	// reads, documented; every other per-kind field must be zero.
	params []Param
	// sizedByAccuracy says that Config.Accuracy may pick the sample size
	// m* (Section 3.2 of Digalakis et al.) instead of Config.SampleSize.
	sizedByAccuracy bool
	// bitLaw says the kind keeps Bernoulli state bits (base.law): releases
	// need its gap and state views show its P0 and P1.
	bitLaw bool
	// check validates the kind's params and fills in their defaults, after
	// the shared fields have been checked; nil when there is nothing to
	// check beyond the shared fields.
	check func(c *Config) error
	// checkState bounds the state of a configuration whose sample size is
	// resolved, given the cap on sample cells (nil: m alone is bounded).
	checkState func(c Config, maxCells int) error
	// build creates a fresh estimator on b (configuration validated).
	build func(b *base) (Estimator, error)
	// decode reads the kind's tables, after the shared header, onto b.
	decode func(b *base, r *binenc.Reader) (Estimator, error)
	// example is a small valid configuration (Algorithm empty: every
	// algorithm is tried) for the registry's tests and documentation.
	example Config
}

// Param documents one per-kind configuration field, named as clients write
// it.
type Param struct {
	// Name is the JSON name of the Config field ("t", "k", ...).
	Name string
	// Required says the kind refuses a configuration without it.
	Required bool
	// Doc says what the field means for this kind and its bounds.
	Doc string
}

// KindInfo documents one estimator kind for the API's documentation and
// validation: what a client may send with it.
type KindInfo struct {
	// Kind is the API name.
	Kind Kind
	// Algorithms are the accepted algorithms; DefaultAlgorithm is used when
	// none is given.
	Algorithms       []Algorithm
	DefaultAlgorithm Algorithm
	// MaxEpsilon is the largest accepted epsilon.
	MaxEpsilon float64
	// Params are the per-kind fields the kind reads.
	Params []Param
	// SizedByAccuracy says that accuracy may replace sample_size.
	SizedByAccuracy bool
}

// Kinds lists every estimator kind, in registry order (kindSpecs: the
// order of the API's enums).
func Kinds() []KindInfo {
	out := make([]KindInfo, len(registry.specs))
	for i, s := range registry.specs {
		out[i] = KindInfo{Kind: s.kind, Algorithms: slices.Clone(s.algorithms), DefaultAlgorithm: s.defaultAlgorithm,
			MaxEpsilon: s.maxEpsilon, Params: slices.Clone(s.params), SizedByAccuracy: s.sizedByAccuracy}
	}
	return out
}

// kindRegistry indexes the specs by name and by wire code.
type kindRegistry struct {
	specs  []kindSpec
	byKind map[Kind]*kindSpec
	byCode map[byte]*kindSpec
}

// registry is kindSpecs, checked and indexed once at start-up and never
// changed afterwards.
var registry = mustRegistry(kindSpecs())

// mustRegistry indexes specs; a registry that fails checkRegistry is a
// programming error and panics (every test of the package then fails).
func mustRegistry(specs []kindSpec) kindRegistry {
	if err := checkRegistry(specs); err != nil {
		panic(err)
	}
	r := kindRegistry{specs: specs, byKind: map[Kind]*kindSpec{}, byCode: map[byte]*kindSpec{}}
	for i := range specs {
		r.byKind[specs[i].kind] = &specs[i]
		r.byCode[specs[i].code] = &specs[i]
	}
	return r
}

// checkRegistry reports the first defect of specs: a missing name,
// constructor, decoder, algorithm or example; a name or wire code used
// twice; a parameter that is not a per-kind Config field or is documented
// twice; an example its own kind refuses.
func checkRegistry(specs []kindSpec) error {
	if len(specs) == 0 {
		return errors.New("panprivate: kind registry: no kinds")
	}
	names, codes := map[Kind]bool{}, map[byte]bool{}
	for i, s := range specs {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("panprivate: kind registry: entry %d (%q): %s", i, s.kind, fmt.Sprintf(format, args...))
		}
		switch {
		case s.kind == "":
			return fail("no name")
		case names[s.kind]:
			return fail("name used twice")
		case codes[s.code]:
			return fail("wire code %d used twice", s.code)
		case s.build == nil:
			return fail("no constructor (build)")
		case s.decode == nil:
			return fail("no decoder (decode)")
		case len(s.algorithms) == 0:
			return fail("no algorithms")
		case !slices.Contains(s.algorithms, s.defaultAlgorithm):
			return fail("default algorithm %q is not one of its algorithms", s.defaultAlgorithm)
		case !(s.maxEpsilon >= minEpsilon):
			return fail("max epsilon %g below %g", s.maxEpsilon, minEpsilon)
		case s.example.Estimator != s.kind:
			return fail("example is of kind %q", s.example.Estimator)
		}
		names[s.kind], codes[s.code] = true, true
		for _, a := range s.algorithms {
			if !slices.Contains(algCodes, a) {
				return fail("algorithm %q has no wire code", a)
			}
		}
		seen := map[string]bool{}
		for _, p := range s.params {
			if !slices.ContainsFunc(optionalFields(), func(f optionalField) bool { return f.name == p.Name }) {
				return fail("param %q is not a per-kind Config field", p.Name)
			}
			if seen[p.Name] || p.Doc == "" {
				return fail("param %q documented twice or not at all", p.Name)
			}
			seen[p.Name] = true
		}
		if _, err := s.example.validateWith(&specs[i], false); err != nil {
			return fail("example refused: %v", err)
		}
	}
	return nil
}

// specOf returns the spec of kind k, or false for an unknown kind.
func specOf(k Kind) (*kindSpec, bool) {
	s, ok := registry.byKind[k]
	return s, ok
}

// kindNames lists the kinds' names, in wire-code order, separated by sep.
func kindNames(sep string) string {
	names := make([]string, len(registry.specs))
	for i, s := range registry.specs {
		names[i] = string(s.kind)
	}
	return strings.Join(names, sep)
}

// orList joins names as "a, b or c".
func orList[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
