package panprivate

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// registryConfigs returns every registered kind's example once per
// algorithm, named kind/algorithm.
func registryConfigs() map[string]Config {
	out := map[string]Config{}
	for _, s := range kindSpecs() {
		for _, a := range s.algorithms {
			c := s.example
			c.Algorithm = a
			out[string(s.kind)+"/"+string(a)] = c
		}
	}
	return out
}

// TestRegistryRoundTrip walks every registered kind and algorithm through
// construct -> apply -> encode -> decode and checks that the decoded
// estimator is the same: configuration, counts, privacy, the state view an
// intrusion returns, a release under the same noise, and its re-encoding
// byte for byte. A new kind is covered by its registry entry alone.
func TestRegistryRoundTrip(t *testing.T) {
	for name, cfg := range registryConfigs() {
		t.Run(name, func(t *testing.T) {
			e := mustNew(t, cfg, dprand.Seeded(5))
			if e.Config().Estimator != cfg.Estimator || e.Config().Algorithm != cfg.Algorithm {
				t.Fatalf("New built %s/%s", e.Config().Estimator, e.Config().Algorithm)
			}
			evs := append(insertRange(0, 400, false), insertRange(0, 200, false)...)
			if err := e.Apply(evs); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Release(seededNoise(6)); err != nil {
				t.Fatal(err)
			}
			data, err := e.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(data, dprand.Seeded(7))
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(e) {
				t.Errorf("decoded a %T, encoded a %T", got, e)
			}
			if !reflect.DeepEqual(got.Config(), e.Config()) || got.Stats() != e.Stats() || got.Privacy() != e.Privacy() {
				t.Errorf("decoded %+v %+v %+v, want %+v %+v %+v", got.Config(), got.Stats(), got.Privacy(), e.Config(), e.Stats(), e.Privacy())
			}
			again, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("re-encoding differs (%v)", err)
			}
			r1, err1 := e.Release(seededNoise(8))
			r2, err2 := got.Release(seededNoise(8))
			if err1 != nil || err2 != nil || !reflect.DeepEqual(r1, r2) {
				t.Errorf("releases under the same noise differ: %+v (%v) and %+v (%v)", r1, err1, r2, err2)
			}
			if s1, s2 := e.Intrude(), got.Intrude(); !reflect.DeepEqual(s1, s2) {
				t.Errorf("intrusions see different states:\n%+v\n%+v", s1, s2)
			}
		})
	}
}

// TestUnknownKindRefused checks that a kind the registry does not hold is an
// error everywhere, never a default: Validate and New refuse it on field
// estimator (naming every registered kind), and Unmarshal refuses a state
// whose kind byte no kind has.
func TestUnknownKindRefused(t *testing.T) {
	for _, k := range []Kind{"sum", "", "Density", "incidence "} {
		cfg := kindSpecs()[0].example
		cfg.Estimator = k
		_, verr := cfg.Validate()
		_, nerr := New(cfg, dprand.Seeded(1))
		for _, err := range []error{verr, nerr} {
			var fe *checks.FieldError
			if !errors.As(err, &fe) || fe.Field != "estimator" {
				t.Errorf("kind %q: got %v, want a FieldError on estimator", k, err)
				continue
			}
			for _, s := range kindSpecs() {
				if !strings.Contains(fe.Reason, string(s.kind)) {
					t.Errorf("kind %q: %q does not name %s", k, fe.Reason, s.kind)
				}
			}
		}
	}
	e := mustNew(t, kindSpecs()[0].example, dprand.Seeded(1))
	data, _ := e.MarshalBinary()
	kindByte := len(stateMagic) + 1 // after the magic and the version
	if data[kindByte] != kindSpecs()[0].code {
		t.Fatalf("kind byte at %d is %d, want %d", kindByte, data[kindByte], kindSpecs()[0].code)
	}
	for _, code := range []byte{byte(len(kindSpecs())), 0xff} {
		bad := slices.Clone(data)
		bad[kindByte] = code
		if _, err := Unmarshal(bad, dprand.Seeded(1)); !errors.Is(err, ErrCorruptState) {
			t.Errorf("kind code %d: got %v, want ErrCorruptState", code, err)
		}
	}
	if _, err := newBase(Config{Estimator: "sum"}, [KeySize]byte{}, dprand.Seeded(1)); err == nil {
		t.Error("newBase accepted an unknown kind")
	}
}

// TestRegistryWireCodes pins the kinds' wire codes: stored states carry
// them, so a code may be added but never changed or reused.
func TestRegistryWireCodes(t *testing.T) {
	want := map[Kind]byte{KindDensity: 0, KindCroppedMean: 1, KindHeavyHitters: 2, KindIncidence: 3}
	for _, s := range kindSpecs() {
		if c, ok := want[s.kind]; ok && c != s.code {
			t.Errorf("%s has wire code %d, stored states say %d", s.kind, s.code, c)
		}
		delete(want, s.kind)
	}
	if len(want) > 0 {
		t.Errorf("kinds with stored states missing from the registry: %v", want)
	}
}

// TestRegistrySelfCheck checks that the registry passes checkRegistry and
// that checkRegistry catches each defect planted in a copy of it.
func TestRegistrySelfCheck(t *testing.T) {
	if err := checkRegistry(kindSpecs()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant func(s []kindSpec)
		want  string
	}{
		{"no kinds", nil, "no kinds"},
		{"missing decoder", func(s []kindSpec) { s[1].decode = nil }, "no decoder"},
		{"missing constructor", func(s []kindSpec) { s[2].build = nil }, "no constructor"},
		{"missing name", func(s []kindSpec) { s[0].kind = "" }, "no name"},
		{"name twice", func(s []kindSpec) { s[3].kind = s[0].kind; s[3].example.Estimator = s[0].kind }, "name used twice"},
		{"wire code twice", func(s []kindSpec) { s[3].code = s[1].code }, "wire code 1 used twice"},
		{"no algorithms", func(s []kindSpec) { s[1].algorithms = nil }, "no algorithms"},
		{"default not accepted", func(s []kindSpec) { s[3].defaultAlgorithm = AlgorithmPPDS }, "default algorithm"},
		{"algorithm without a wire code", func(s []kindSpec) {
			s[1].algorithms = append(slices.Clone(s[1].algorithms), "fast")
		}, "has no wire code"},
		{"no epsilon", func(s []kindSpec) { s[2].maxEpsilon = 0 }, "max epsilon"},
		{"param not a Config field", func(s []kindSpec) {
			s[0].params = append(slices.Clone(s[0].params), Param{Name: "tau", Doc: "x"})
		}, `param "tau" is not`},
		{"param undocumented", func(s []kindSpec) { s[1].params = []Param{{Name: "t", Required: true}} }, `param "t" documented`},
		{"param twice", func(s []kindSpec) { s[1].params = append(slices.Clone(s[1].params), s[1].params[0]) }, "documented twice"},
		{"example of another kind", func(s []kindSpec) { s[0].example.Estimator = s[1].kind }, "example is of kind"},
		{"example refused", func(s []kindSpec) { s[1].example.T = 0 }, "example refused"},
		{"param read but not declared", func(s []kindSpec) { s[1].params = nil }, "example refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var specs []kindSpec
			if tc.plant != nil {
				specs = kindSpecs()
				tc.plant(specs)
			}
			err := checkRegistry(specs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.plant != nil && checkRegistry(kindSpecs()) != nil {
				t.Error("planting a defect changed the registry itself")
			}
		})
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("mustRegistry accepted a registry with a defect")
			}
		}()
		specs := kindSpecs()
		specs[0].decode = nil
		mustRegistry(specs)
	}()
}

// TestRegistryParams checks each kind's declared params against what
// Validate does: a per-kind field a kind does not declare is refused on that
// field, and a declared required one is refused when missing.
func TestRegistryParams(t *testing.T) {
	setters := map[string]func(*Config, int){
		"t":               func(c *Config, v int) { c.T = v },
		"k":               func(c *Config, v int) { c.K = v },
		"max_occurrences": func(c *Config, v int) { c.MaxOccurrences = v },
		"rho":             func(c *Config, v int) { c.Rho = float64(v) },
		"moduli":          func(c *Config, v int) { c.Moduli = v },
	}
	for _, f := range optionalFields() {
		if setters[f.name] == nil {
			t.Fatalf("no setter for %s", f.name)
		}
	}
	for _, s := range kindSpecs() {
		for _, f := range optionalFields() {
			c := s.example
			declared := slices.IndexFunc(s.params, func(p Param) bool { return p.Name == f.name })
			switch {
			case declared < 0:
				setters[f.name](&c, 1)
			case s.params[declared].Required:
				setters[f.name](&c, 0)
			default:
				continue
			}
			_, err := c.Validate()
			var fe *checks.FieldError
			if !errors.As(err, &fe) || fe.Field != f.name {
				t.Errorf("%s with %s changed: got %v, want a FieldError on %s", s.kind, f.name, err, f.name)
			}
		}
	}
}

// TestKindConstantsMatchRegistry checks that the Kind constants of kind.go
// (swag reads them for the API's StreamEstimatorKind enum) are exactly the
// registry's kinds, in wire-code order.
func TestKindConstantsMatchRegistry(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "kind.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			v := sp.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				continue
			}
			for _, val := range v.Values {
				s, _ := strconv.Unquote(val.(*ast.BasicLit).Value)
				consts = append(consts, s)
			}
		}
	}
	if got, want := strings.Join(consts, ", "), kindNames(", "); got != want {
		t.Errorf("kind.go declares the Kind constants %s; the registry (kindSpecs) holds %s", got, want)
	}
}

// TestKindsIsACopy checks that Kinds hands out copies: changing its answer
// changes no configuration's validation.
func TestKindsIsACopy(t *testing.T) {
	ks := Kinds()
	if len(ks) != len(kindSpecs()) {
		t.Fatalf("Kinds lists %d kinds, the registry %d", len(ks), len(kindSpecs()))
	}
	for i, s := range kindSpecs() {
		k := ks[i]
		if k.Kind != s.kind || k.DefaultAlgorithm != s.defaultAlgorithm || !slices.Equal(k.Algorithms, s.algorithms) ||
			k.MaxEpsilon != s.maxEpsilon || !slices.Equal(k.Params, s.params) || k.SizedByAccuracy != s.sizedByAccuracy {
			t.Errorf("Kinds()[%d] = %+v, spec %s", i, k, s.kind)
		}
	}
	ks[0].Algorithms[0] = "fast"
	if len(ks[1].Params) > 0 {
		ks[1].Params[0].Name = "tau"
	}
	if Kinds()[0].Algorithms[0] == "fast" || (len(ks[1].Params) > 0 && Kinds()[1].Params[0].Name == "tau") {
		t.Error("Kinds shares its slices with the registry")
	}
}
