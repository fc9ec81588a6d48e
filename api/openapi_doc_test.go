package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/openapi"
)

// TestOpenAPIDocumentsEverything: the generated OpenAPI 3 document and the
// router agree: every route and method is an operation and every operation
// a route (HEAD aside, which every GET answers; TestRoutesAreDocumented
// checks each /v1 route's query parameters), every property has a
// description, every closed set of query values is an enum, and every error
// answer is application/problem+json.
func TestOpenAPIDocumentsEverything(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.JSON3)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi/openapi.json is not valid OpenAPI 3: %v", err)
	}
	router := testRouter(t, DefaultLimits())
	undocumented := []string{"/metrics", "/docs", "/docs/*", "/planner"}
	served := map[string]bool{}
	err = chi.Walk(router.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		if slices.Contains(undocumented, route) {
			return nil
		}
		item := doc.Paths.Value(route)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("%s %s is served but not in the document", method, route)
			return nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The other way: every documented operation is served. HEAD is not
	// documented (every GET answers it, as the description says).
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !served[method+" "+path] {
				t.Errorf("%s %s is in the document but not served", method, path)
			}
			// A client method name (swag @ID), unique.
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: operationId %q missing or repeated (add an @ID line)", method, path, op.OperationID)
			}
			ids[op.OperationID] = true
			// /v1 takes a token or none (open by default); the rest none ever.
			var want openapi3.SecurityRequirements
			if strings.HasPrefix(path, "/v1/") {
				want = openapi3.SecurityRequirements{{"bearer": []string{}}, {}}
			}
			if op.Security == nil || len(*op.Security) != len(want) || len(want) == 2 && ((*op.Security)[0]["bearer"] == nil || len((*op.Security)[1]) != 0) {
				t.Errorf("%s %s: security %v, want %v", method, path, op.Security, want)
			}
			if r := op.Responses.Value("201"); r != nil && slices.Contains([]string{"/v1/samples", "/v1/datasets", "/v1/streams", "/v1/counters"}, path) && r.Value.Headers["Location"] == nil {
				t.Errorf("%s %s: 201 without Location", method, path)
			}
			if r := op.Responses.Value("503"); r != nil && r.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s %s: 503 without Retry-After", method, path)
			}
		}
	}
	closed := []string{"scheme", "method", "estimator", "baseline", "distribution", "release"}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				s := p.Value.Schema.Value
				if s.Items != nil {
					s = s.Items.Value
				}
				if slices.Contains(closed, p.Value.Name) && len(s.Enum) == 0 {
					t.Errorf("%s %s: query parameter %s has no enum", method, path, p.Value.Name)
				}
			}
			for code, r := range op.Responses.Map() {
				if code == "405" {
					t.Errorf("%s %s: declares 405, which belongs to the path, not an operation", method, path)
				}
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				if _, ok := r.Value.Content["application/problem+json"]; !ok || len(r.Value.Content) != 1 {
					t.Errorf("%s %s: %s is not declared application/problem+json only", method, path, code)
				}
			}
		}
	}
	var describe func(where string, s *openapi3.Schema)
	describe = func(where string, s *openapi3.Schema) {
		for name, p := range s.Properties {
			if p.Value == nil {
				continue
			}
			if p.Value.Description == "" {
				t.Errorf("property %s.%s has no description", where, name)
			}
			if p.Ref == "" {
				describe(where+"."+name, p.Value)
			}
		}
		if s.Items != nil && s.Items.Ref == "" && s.Items.Value != nil {
			describe(where+"[]", s.Items.Value)
		}
	}
	for name, s := range doc.Components.Schemas {
		describe(name, s.Value)
	}
}

// TestRoutesAreDocumented: every declared route is an operation of the
// OpenAPI document (openapi/openapi.json) with the same method and path,
// and the query parameters the document lists for it are exactly the ones
// its declaration accepts, the repeatable ones as arrays. A route added
// without its swag annotation, or a parameter accepted but not documented
// (or documented but refused), fails here.
func TestRoutesAreDocumented(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON3)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range v1Routes() {
		item := doc.Paths.Value("/v1" + rt.pattern)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s is not in the OpenAPI document (add its swag annotation and run make openapi)", rt.name())
			continue
		}
		documented := map[string]bool{} // name -> an array (repeatable)
		for _, p := range item.GetOperation(rt.method).Parameters {
			if p.Value.In == "query" {
				documented[p.Value.Name] = p.Value.Schema.Value.Type.Is("array")
			}
		}
		for name, repeatable := range documented {
			switch {
			case slices.Contains(rt.query.single, name) && repeatable:
				t.Errorf("%s: %s is documented as an array but takes one value", rt.name(), name)
			case slices.Contains(rt.query.repeated, name) && !repeatable:
				t.Errorf("%s: %s is repeatable but not documented as an array", rt.name(), name)
			case !slices.Contains(rt.query.single, name) && !slices.Contains(rt.query.repeated, name):
				t.Errorf("%s documents query parameter %s, which the route refuses", rt.name(), name)
			}
		}
		for _, name := range slices.Concat(rt.query.single, rt.query.repeated) {
			if _, ok := documented[name]; !ok {
				t.Errorf("%s accepts query parameter %s, which the document does not list", rt.name(), name)
			}
		}
	}
}
