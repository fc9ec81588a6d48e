package main

import (
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pwsd/pwsd/internal/panprivate"
)

// This file makes the document a contract a generated client can rely on:
// who may call what (security), the headers and media types pwsd sends,
// request schemas as strict as the server's validation, and the types swag
// cannot see (StreamView.config).

// publicPaths never need a token, whatever PWSD_API_TOKENS_FILE says.
var publicPaths = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true, "/swagger.json": true}

// createdAt are the operations whose 201 carries Location: the new
// resource's path.
var createdAt = map[string]bool{"/v1/samples": true, "/v1/datasets": true, "/v1/streams": true, "/v1/counters": true}

// operationQueryEnums narrows queryEnums for one operation ("METHOD path
// parameter"): the stored-sample routes accept only the estimators a sample
// can be released with.
var operationQueryEnums = map[string][]any{
	"POST /v1/samples estimator":     {"mle", "biased_down"},
	"GET /v1/samples/{id} estimator": {"mle", "biased_down"},
}

// bound is a numeric or length constraint the server enforces.
type bound struct {
	min, max              *float64
	exclusiveMin, exclMax bool
	maxLength             *uint64
	minLength             uint64
}

func gt(v float64) bound { return bound{min: &v, exclusiveMin: true} }
func ge(v float64) bound { return bound{min: &v} }
func in(lo, hi float64, exclLo, exclHi bool) bound {
	return bound{min: &lo, max: &hi, exclusiveMin: exclLo, exclMax: exclHi}
}

// requestBounds are the bounds the server checks on request properties
// ("Schema.property"; "Schema.property[]" for array items): the values the
// domain constructors accept (sanitize.NewPrivacy, NewSampling,
// service.CreateDataset, ChargeDataset, panprivate.Config). Bounds that
// depend on configuration (PWSD_MAX_*) or on other fields are in prose.
var requestBounds = map[string]bound{
	"PrivacyParams.epsilon":          gt(0),
	"PrivacyParams.delta":            in(0, 1, true, false),
	"SamplingParams.threshold":       gt(0),
	"SamplingParams.power":           gt(0),
	"SamplingParams.probabilities[]": in(0, 1, true, false),
	"SampleElement.frequency":        ge(1),
	"SampleElement.key":              {minLength: 1},
	"DatasetRequest.epsilon_budget":  in(0, 1e6, true, false),
	"DatasetRequest.delta_budget":    in(0, 1, false, false),
	"ChargeRequest.epsilon":          gt(0),
	"ChargeRequest.delta":            in(0, 1, false, true),
	"CounterRequest.epsilon":         gt(0),
	"StepsRequest.bits[]":            in(0, 1, false, false),
	"StreamRequest.epsilon":          gt(0),
	"AccuracyParams.alpha":           in(0, 1, true, true),
	"AccuracyParams.beta":            in(0, 1, true, true),
}

// queryBounds are the bounds of query parameters that mean the same on
// every route.
var queryBounds = map[string]bound{
	"epsilon": gt(0),
	"delta":   in(0, 1, true, false),
}

// requestRequired are properties the server requires that its validator
// tags do not say (checked in code).
var requestRequired = map[string][]string{
	"SampleElement": {"key", "frequency"},
}

func (b bound) apply(s *openapi3.Schema) {
	if b.min != nil {
		s.Min = b.min
		if b.exclusiveMin {
			s.ExclusiveMin = openapi3.ExclusiveBound{Bool: ptr(true)}
		}
	}
	if b.max != nil {
		s.Max = b.max
		if b.exclMax {
			s.ExclusiveMax = openapi3.ExclusiveBound{Bool: ptr(true)}
		}
	}
	if b.maxLength != nil {
		s.MaxLength = b.maxLength
	}
	if b.minLength > 0 {
		s.MinLength = b.minLength
	}
}

// secure sets each operation's security: /v1 operations take a bearer
// token or none (pwsd runs open unless PWSD_API_TOKENS_FILE is set), the
// operational routes none ever.
func secure(path string, op *openapi3.Operation) {
	if publicPaths[path] || !strings.HasPrefix(path, "/v1/") {
		op.Security = &openapi3.SecurityRequirements{}
		return
	}
	op.Security = &openapi3.SecurityRequirements{{"bearer": []string{}}, {}}
}

// narrowQuery applies operationQueryEnums and queryBounds.
func narrowQuery(path, method string, op *openapi3.Operation) {
	for _, p := range op.Parameters {
		prm := p.Value
		if prm == nil || prm.In != "query" || prm.Schema == nil || prm.Schema.Value == nil {
			continue
		}
		if e, ok := operationQueryEnums[method+" "+path+" "+prm.Name]; ok {
			prm.Schema.Value.Enum = e
		}
		if b, ok := queryBounds[prm.Name]; ok && prm.Schema.Value.Type.Is("number") {
			b.apply(prm.Schema.Value)
		}
	}
}

// responseHeaders declares the headers pwsd sets beyond X-Request-Id:
// Location on a 201 that creates a resource, the idempotency headers on
// every answer a repeat may replay (below 500), Retry-After on a 503.
func responseHeaders(path, method string, op *openapi3.Operation) {
	idempotent := false
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "header" && p.Value.Name == "Idempotency-Key" {
			idempotent = true
		}
	}
	for code, r := range op.Responses.Map() {
		if r.Value == nil {
			continue
		}
		h := r.Value.Headers
		ref := func(name string) { h[name] = &openapi3.HeaderRef{Ref: "#/components/headers/" + name} }
		if code == "201" && method == http.MethodPost && createdAt[path] {
			ref("Location")
		}
		if idempotent && code[0] != '5' {
			ref("Idempotent-Replayed")
			ref("Idempotent-Original-Request-Id")
		}
		if code == "503" {
			ref("Retry-After")
		}
	}
}

// strictRequests makes every schema only requests use as strict as the
// server: unknown properties refused (the decoder refuses them with a 400),
// the requirements and bounds of requestRequired and requestBounds.
func strictRequests(doc *openapi3.T) {
	for name := range requestSchemas(doc) {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil || !s.Value.Type.Is("object") {
			continue
		}
		short := name[strings.LastIndexByte(name, '.')+1:]
		s.Value.AdditionalProperties = openapi3.AdditionalProperties{Has: ptr(false)}
		for _, r := range requestRequired[short] {
			if !contains(s.Value.Required, r) {
				s.Value.Required = append(s.Value.Required, r)
			}
		}
		for _, pn := range sortedKeys(s.Value.Properties) {
			p := s.Value.Properties[pn].Value
			if p == nil {
				continue
			}
			if b, ok := requestBounds[short+"."+pn]; ok {
				b.apply(p)
			}
			if b, ok := requestBounds[short+"."+pn+"[]"]; ok && p.Items != nil && p.Items.Value != nil {
				b.apply(p.Items.Value)
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// nonEmptyRequestID says that a problem's request_id is never empty (the
// contract test then checks it on every problem the HTTP tests see, replays
// included).
func nonEmptyRequestID(doc *openapi3.T) {
	if p := doc.Components.Schemas["api.Problem"]; p != nil && p.Value != nil {
		if id := p.Value.Properties["request_id"]; id != nil && id.Value != nil {
			id.Value.MinLength = 1
		}
	}
}

// timeFormats marks the RFC 3339 timestamps.
func timeFormats(doc *openapi3.T) {
	for _, s := range doc.Components.Schemas {
		if s.Value == nil {
			continue
		}
		for _, pn := range []string{"created_at", "expires_at"} {
			if p := s.Value.Properties[pn]; p != nil && p.Value != nil && p.Value.Type.Is("string") {
				p.Value.Format = "date-time"
			}
		}
	}
}

// typedConfig types StreamView.config, which swag sees as any: the
// resolved panprivate.Config of an estimator stream or the
// panprivate.ContinualDensityConfig of a continual one, as a oneOf that
// strict generators (ogen) can decode: both schemas are closed
// (additionalProperties false: they list every field of the Go struct, so
// an answer never has another), so exactly one matches any config (only
// an estimator config has "estimator", which it requires; only a
// continual one has "counter" and "horizon"), and a generator tells them
// apart by the fields only one of them has.
func typedConfig(doc *openapi3.T, types map[string][]goField) {
	sv := doc.Components.Schemas["api.StreamView"]
	if sv == nil || sv.Value == nil || sv.Value.Properties["config"] == nil {
		return
	}
	var refs openapi3.SchemaRefs
	for _, v := range []any{panprivate.Config{}, panprivate.ContinualDensityConfig{}} {
		t := reflect.TypeOf(v)
		name := "panprivate." + t.Name()
		s := schemaOf(t, types)
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: ptr(false)}
		doc.Components.Schemas[name] = &openapi3.SchemaRef{Value: s}
		refs = append(refs, &openapi3.SchemaRef{Ref: "#/components/schemas/" + name})
	}
	c := sv.Value.Properties["config"].Value
	c.AnyOf = nil
	c.OneOf = refs
}

// configEnums close the string properties of the stream configurations.
var configEnums = map[string][]any{
	"Config.estimator":               kindEnum(),
	"Config.algorithm":               algorithmEnum(),
	"Config.release_noise":           {"paper", "calibrated"},
	"ContinualDensityConfig.counter": {"simple", "randomized_response", "cascading", "tree"},
}

// kindEnum lists the estimator kinds of panprivate's registry.
func kindEnum() []any {
	var e []any
	for _, k := range panprivate.Kinds() {
		e = append(e, string(k.Kind))
	}
	return e
}

// algorithmEnum lists the algorithms of every kind, in order of first use.
func algorithmEnum() []any {
	var e []any
	for _, k := range panprivate.Kinds() {
		for _, a := range k.Algorithms {
			if !slices.Contains(e, any(string(a))) {
				e = append(e, string(a))
			}
		}
	}
	return e
}

// schemaOf is the schema of a Go type's JSON encoding (structs by their
// json tags; descriptions from the fields' doc comments).
func schemaOf(t reflect.Type, types map[string][]goField) *openapi3.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	typ := func(name string) *openapi3.Schema { return &openapi3.Schema{Type: &openapi3.Types{name}} }
	switch t.Kind() {
	case reflect.String:
		return typ("string")
	case reflect.Bool:
		return typ("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return typ("integer")
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := typ("integer")
		s.Min = ptr(0.0)
		return s
	case reflect.Float32, reflect.Float64:
		return typ("number")
	case reflect.Slice, reflect.Array:
		s := typ("array")
		s.Items = &openapi3.SchemaRef{Value: schemaOf(t.Elem(), types)}
		return s
	case reflect.Struct:
		s := typ("object")
		s.Properties = openapi3.Schemas{}
		key := t.PkgPath()[strings.LastIndexByte(t.PkgPath(), '/')+1:] + "." + t.Name()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := schemaOf(f.Type, types)
			p.Description = strings.Join(strings.Fields(fieldDoc(types, key, name)), " ")
			if p.Description == "" {
				p.Description = describe(t.Name(), name)
			}
			if e, ok := configEnums[t.Name()+"."+name]; ok {
				p.Enum = e
			}
			s.Properties[name] = &openapi3.SchemaRef{Value: p}
			if !strings.Contains(","+opts+",", ",omitempty,") {
				s.Required = append(s.Required, name)
			}
		}
		return s
	}
	return &openapi3.Schema{}
}
