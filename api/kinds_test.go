package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/openapi"
)

// registryNames returns the registry's kind names and the algorithms of all
// kinds (in order of first use).
func registryNames() (kinds, algs []string) {
	for _, k := range panprivate.Kinds() {
		kinds = append(kinds, string(k.Kind))
		for _, a := range k.Algorithms {
			if !slices.Contains(algs, string(a)) {
				algs = append(algs, string(a))
			}
		}
	}
	return kinds, algs
}

// kindsSummary is the createStream description's list of the kinds: each
// with its required fields and, when it has a choice, its algorithms.
func kindsSummary() string {
	var parts []string
	for _, k := range panprivate.Kinds() {
		var in []string
		for _, p := range k.Params {
			if p.Required {
				in = append(in, p.Name)
			}
		}
		inside := strings.Join(in, ", ")
		if len(k.Algorithms) > 1 {
			algs := make([]string, len(k.Algorithms))
			for i, a := range k.Algorithms {
				algs[i] = string(a)
			}
			if inside != "" {
				inside += "; "
			}
			inside += "algorithm " + strings.Join(algs, " | ")
		}
		if inside == "" {
			parts = append(parts, string(k.Kind))
			continue
		}
		parts = append(parts, string(k.Kind)+" ("+inside+")")
	}
	return "The estimators, with their required fields and algorithms: " + strings.Join(parts, ", ") + "."
}

// TestStreamRequestSpellsTheKindRegistry checks that the literal lists swag
// needs in api/streams.go (StreamRequest's enums tags, createStream's
// @Description) equal panprivate's kind registry, so that a kind registered
// in internal/panprivate but not spelled here fails with the text to write;
// and that the validator spells no list of its own (the registry's
// constructors check the names: one place).
func TestStreamRequestSpellsTheKindRegistry(t *testing.T) {
	kinds, algs := registryNames()
	rt := reflect.TypeFor[StreamRequest]()
	for _, tc := range []struct {
		field string
		want  []string
	}{{"Estimator", kinds}, {"Algorithm", algs}} {
		f, _ := rt.FieldByName(tc.field)
		validate, enums := f.Tag.Get("validate"), f.Tag.Get("enums")
		if strings.Contains(validate, "oneof=") {
			t.Errorf("api/streams.go: StreamRequest.%s's validate tag %q spells the names; panprivate's registry checks them", tc.field, validate)
		}
		if got := strings.Split(enums, ","); !slices.Equal(got, tc.want) {
			t.Errorf("api/streams.go: StreamRequest.%s's enums tag is %q; the registry (panprivate.Kinds) says %q",
				tc.field, enums, strings.Join(tc.want, ","))
		}
	}

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.JSON3)
	if err != nil {
		t.Fatal(err)
	}
	op := doc.Paths.Value("/v1/streams").Post
	if want := kindsSummary(); !strings.HasPrefix(op.Description, want) {
		t.Errorf("api/streams.go: createStream's @Description must begin with\n%s\n(from panprivate.Kinds); it begins\n%.*s\n(edit it, then run make openapi)", want, len(want), op.Description)
	}
}

// TestStreamDocsFollowTheKindRegistry checks the generated document
// (openapi/openapi.json) against the registry: the estimator and algorithm
// enums of the request and of the resolved configuration, and each per-kind
// parameter's description, which openapi/gen derives from the kinds' Param
// docs. A failure here after a registry change means: run make openapi.
func TestStreamDocsFollowTheKindRegistry(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.JSON3)
	if err != nil {
		t.Fatal(err)
	}
	kinds, algs := registryNames()
	enum := func(schema, prop string) []string {
		s := doc.Components.Schemas[schema].Value.Properties[prop].Value
		var out []string
		for _, v := range s.Enum {
			out = append(out, v.(string))
		}
		return out
	}
	for _, tc := range []struct {
		schema, prop string
		want         []string
	}{
		{"StreamRequest", "estimator", kinds},
		{"StreamRequest", "algorithm", algs},
		{"StreamEstimatorConfig", "estimator", kinds},
		{"StreamEstimatorConfig", "algorithm", algs},
	} {
		if got := enum(tc.schema, tc.prop); !slices.Equal(got, tc.want) {
			t.Errorf("openapi/openapi.json: %s.%s enum %v, the registry says %v (StreamRequest: its enums tag in api/streams.go; then run make openapi)", tc.schema, tc.prop, got, tc.want)
		}
	}
	req := doc.Components.Schemas["StreamRequest"].Value
	for _, k := range panprivate.Kinds() {
		if d := req.Properties["estimator"].Value.Description; !strings.Contains(d, string(k.Kind)) {
			t.Errorf("openapi/openapi.json: StreamRequest.estimator's description %q does not name %s (run make openapi)", d, k.Kind)
		}
		for _, p := range k.Params {
			prop := req.Properties[p.Name]
			if prop == nil {
				t.Errorf("api/streams.go: StreamRequest has no field %q, which %s reads", p.Name, k.Kind)
				continue
			}
			if d := prop.Value.Description; !strings.Contains(d, p.Doc) {
				t.Errorf("openapi/openapi.json: StreamRequest.%s's description %q lacks %s's doc %q (run make openapi)", p.Name, d, k.Kind, p.Doc)
			}
		}
	}
}
