package api

import (
	"log/slog"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/openapi"
)

// TestOpenAPIDocumentsEverything: the generated OpenAPI 3 document covers
// the router: every route and method is an operation, every query parameter
// it documents is one the route accepts (routeQuery), every property has a
// description, every closed set of query values is an enum, and every error
// answer is application/problem+json.
func TestOpenAPIDocumentsEverything(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.JSON3)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi/openapi.json is not valid OpenAPI 3: %v", err)
	}
	svc, err := service.New(service.Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	router := NewRouter(Deps{Service: svc, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Limits: DefaultLimits()})
	undocumented := []string{"/metrics", "/docs", "/docs/*", "/planner"}
	err = chi.Walk(router.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if slices.Contains(undocumented, route) {
			return nil
		}
		item := doc.Paths.Value(route)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("%s %s is served but not in the document", method, route)
			return nil
		}
		if method == http.MethodGet && item.Head == nil {
			t.Errorf("HEAD %s is answered but not in the document", route)
		}
		spec := routeQuery[method+" "+route]
		for _, p := range item.GetOperation(method).Parameters {
			if p.Value.In == "query" && !slices.Contains(spec.single, p.Value.Name) && !slices.Contains(spec.repeated, p.Value.Name) {
				t.Errorf("%s %s documents query parameter %q, which routeQuery refuses", method, route, p.Value.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
				if code[0] != '4' && code[0] != '5' || method == http.MethodHead {
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
