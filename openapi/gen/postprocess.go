package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

const (
	problemRef = "#/components/schemas/api.Problem"
	mtJSON     = "application/json"
	mtProblem  = "application/problem+json"
	mtNDJSON   = "application/x-ndjson"
	mtCSV      = "text/csv"
)

// statusText describes, once, what each error status means in pwsd.
var statusText = map[int]string{
	400: "Malformed request: an unknown or repeated query parameter, malformed JSON, a value of the wrong JSON type or an unknown field. errors names them.",
	401: "A bearer token is required (PWSD_API_TOKENS_FILE is set) and was missing or not valid; the answer carries WWW-Authenticate: Bearer.",
	403: "The token's role may not do this: a reader token may only read.",
	404: "What the request names does not exist; detail says what (sample \"id\" does not exist, key \"k\" is not in this sample, dataset \"x\" does not exist).",
	409: "Conflict: the release would exceed the dataset's privacy budget, the name exists already, or a per-stream limit is reached. Nothing was changed.",
	413: "The body, an NDJSON line or a batch exceeds a configured limit (PWSD_MAX_*). Nothing was changed.",
	415: "The Content-Type is not one this operation accepts.",
	422: "The request is well formed but a value is not valid; errors names each field or parameter by its path as the client wrote it. Nothing was changed.",
	500: "An internal error (a bug or a failing store); never caused by input. The request_id matches the server's log line.",
	503: "Unavailable, nothing was stored: the request did not finish within PWSD_REQUEST_TIMEOUT, admission control refused it (more requests or estimated memory in flight than PWSD_MAX_INFLIGHT / PWSD_MAX_INFLIGHT_BYTES allow), or the store cannot be reached (readyz: is not ready). Retry after Retry-After seconds when it is given.",
}

// queryEnums closes the sets of query parameter values.
var queryEnums = map[string][]any{
	"scheme":       {"ppswor", "priority", "none", "custom"},
	"method":       {"max_separation", "discrete"},
	"estimator":    {"mle", "biased_down", "unbiased"},
	"baseline":     {"sbh"},
	"distribution": {"zipf", "uniform"},
	"release":      {"keys", "frequencies"},
	"group_by":     {"prefix"},
}

// queryPatterns constrains parameters that are strings of a fixed form.
var queryPatterns = map[string]string{
	"g":             `^(identity|count|power:[-+0-9.eE]+|cap:[-+0-9.eE]+)$`,
	"frequency":     `^[0-9]+(-[0-9]+)?$`,
	"probabilities": `^[-+0-9.eE]+(,[-+0-9.eE]+)*$`,
}

func postProcess(doc *openapi3.T, types map[string][]goField) error {
	// Same origin: the document is served by the pwsd it describes.
	doc.Servers = openapi3.Servers{{URL: "/", Description: "the pwsd serving this document (a client sets its base URL, e.g. http://localhost:8080)"}}
	doc.Components.Headers = standardHeaders()
	if doc.Components.Responses == nil {
		doc.Components.Responses = openapi3.ResponseBodies{}
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if err := fixOperation(path, method, op); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			secure(path, op)
			narrowQuery(path, method, op)
			responseHeaders(path, method, op)
		}
	}
	for _, name := range sortedKeys(doc.Components.Schemas) {
		fixSchema(name, doc.Components.Schemas[name].Value)
	}
	markRequired(doc, types)
	describeEvents(doc)
	strictRequests(doc)
	nonEmptyRequestID(doc)
	timeFormats(doc)
	typedConfig(doc, types)
	// The bearer token is an HTTP authentication scheme in OpenAPI 3.
	if ss, ok := doc.Components.SecuritySchemes["bearer"]; ok && ss.Value != nil {
		ss.Value = &openapi3.SecurityScheme{Type: "http", Scheme: "bearer", Description: ss.Value.Description}
	}
	return nil
}

// describeEvents replaces swag's bare objects for stream events by their
// shape: {"user": id or name, "op": "insert" | "delete"}.
func describeEvents(doc *openapi3.T) {
	s := doc.Components.Schemas["api.EventsRequest"]
	if s == nil || s.Value == nil {
		return
	}
	ev := s.Value.Properties["events"]
	if ev == nil || ev.Value == nil {
		return
	}
	integer := &openapi3.Schema{Type: &openapi3.Types{"integer"}, Min: ptr(0.0), Description: "a user id, 0 to 2^64-1"}
	name := &openapi3.Schema{Type: &openapi3.Types{"string"}, Description: "a user name"}
	ev.Value.Items = &openapi3.SchemaRef{Value: &openapi3.Schema{
		Type:                 &openapi3.Types{"object"},
		Description:          "One event: an appearance of user, or with op delete its deletion.",
		Required:             []string{"user"},
		AdditionalProperties: openapi3.AdditionalProperties{Has: ptr(false)},
		Properties: openapi3.Schemas{
			"user": {Value: &openapi3.Schema{Description: "The user: a non-negative integer id or a string name.",
				OneOf: openapi3.SchemaRefs{{Value: integer}, {Value: name}}}},
			"op": {Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: []any{"insert", "delete"},
				Default: "insert", Description: "insert (default) or delete."}},
		},
	}}
}

// fixOperation sets media types, statuses and parameter constraints.
func fixOperation(path, method string, op *openapi3.Operation) error {
	v1 := strings.HasPrefix(path, "/v1/")
	for _, p := range op.Parameters {
		prm := p.Value
		if prm.In != "query" || prm.Schema == nil || prm.Schema.Value == nil {
			continue
		}
		s := prm.Schema.Value
		if s.Type.Is("array") && s.Items != nil {
			s = s.Items.Value
		}
		if e, ok := queryEnums[prm.Name]; ok && s.Type.Is("string") {
			s.Enum = e
		}
		if pt, ok := queryPatterns[prm.Name]; ok && s.Type.Is("string") {
			s.Pattern = pt
		}
	}
	// Request bodies: NDJSON and CSV are text described in prose.
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		for mt, m := range rb.Value.Content {
			switch mt {
			case mtNDJSON:
				m.Schema = textSchema("Newline-delimited JSON, one value per line, as the operation's description says.")
			case mtCSV:
				m.Schema = textSchema("CSV with a header line, as the operation's description says.")
			}
		}
	}
	// Responses.
	for _, code := range sortedKeys(op.Responses.Map()) {
		r := op.Responses.Value(code).Value
		if r == nil {
			continue
		}
		if n, err := strconv.Atoi(code); err == nil && n >= 400 {
			// Errors are problems whatever the operation produces.
			r.Content = openapi3.Content{mtProblem: &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: problemRef}}}
		}
		for mt, m := range r.Content {
			if m.Schema != nil && m.Schema.Ref == problemRef && mt != mtProblem {
				delete(r.Content, mt)
				r.Content[mtProblem] = m
			}
			switch mt {
			case mtNDJSON:
				r.Content[mt] = &openapi3.MediaType{Schema: textSchema("Newline-delimited JSON: a header line, then one element per line.")}
			case mtCSV:
				r.Content[mt] = &openapi3.MediaType{Schema: textSchema("CSV with a header line.")}
			}
		}
		if n, err := strconv.Atoi(code); err == nil && n >= 400 {
			if d, ok := statusText[n]; ok {
				r.Description = &d
			}
		}
	}
	statuses := []int{400, 500}
	if v1 {
		statuses = append(statuses, 401, 413, 503) // 413: a declared Content-Length above PWSD_MAX_BODY_BYTES
		if method != http.MethodGet {
			statuses = append(statuses, 403)
		}
		if strings.Contains(path, "{") {
			statuses = append(statuses, 404)
		}
		if op.RequestBody != nil {
			statuses = append(statuses, 415, 422)
		}
		for _, p := range op.Parameters {
			if p.Value != nil && p.Value.In == "query" {
				statuses = append(statuses, 422)
				break
			}
		}
	}
	if path == "/readyz" {
		statuses = append(statuses, 503)
	}
	for _, n := range statuses {
		code := strconv.Itoa(n)
		if op.Responses.Value(code) != nil {
			continue
		}
		op.Responses.Set(code, &openapi3.ResponseRef{Value: problemResponse(n)})
	}
	for code, r := range op.Responses.Map() {
		if r.Value == nil {
			continue
		}
		if r.Value.Headers == nil {
			r.Value.Headers = openapi3.Headers{}
		}
		r.Value.Headers["X-Request-Id"] = &openapi3.HeaderRef{Ref: "#/components/headers/X-Request-Id"}
		switch code {
		case "401":
			r.Value.Headers[wwwAuthenticate] = &openapi3.HeaderRef{Ref: "#/components/headers/" + wwwAuthenticate}
		}
	}
	return nil
}

// wwwAuthenticate is the WWW-Authenticate header as the document names it:
// in Go's canonical form (http.CanonicalHeaderKey), which strict generators
// (ogen) expect; header names are case-insensitive, so clients that send or
// read "WWW-Authenticate" are unaffected.
const wwwAuthenticate = "Www-Authenticate"

// standardHeaders are the response headers pwsd sets, referenced from
// every response that carries them.
func standardHeaders() openapi3.Headers {
	h := func(desc string) *openapi3.HeaderRef {
		return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
			Description: desc, Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}}}}}
	}
	return openapi3.Headers{
		"X-Request-Id":  h("The request's id: the client's own X-Request-Id when it is a safe token, else one pwsd made; the same id is in the log line and in a problem's request_id."),
		wwwAuthenticate: h(`Bearer realm="pwsd" (with error="invalid_token" for a token that is not valid).`),
		"Location":      h("The path of the resource just created, e.g. /v1/samples/{id}."),
		"Idempotent-Replayed": {Value: &openapi3.Header{Parameter: openapi3.Parameter{
			Description: "true on an answer replayed for a repeated Idempotency-Key: the request was not run again.",
			Schema:      &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: []any{"true"}}}}}},
		"Idempotent-Original-Request-Id": h("On a replayed answer: the X-Request-Id of the request that produced it (the first request with the key; for the 409 that replaces the answer of a request whose resource was deleted, the DELETE). A replayed problem's request_id is this id."),
		"Retry-After": {Value: &openapi3.Header{Parameter: openapi3.Parameter{
			Description: "Seconds to wait before retrying (admission control, store unreachable).",
			Schema:      &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}, Min: ptr(1.0)}}}}},
	}
}

func textSchema(desc string) *openapi3.SchemaRef {
	return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Description: desc}}
}

func problemResponse(status int) *openapi3.Response {
	d := statusText[status]
	return &openapi3.Response{Description: &d, Content: openapi3.Content{
		mtProblem: &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: problemRef}},
	}}
}

// fixSchema gives every property a description.
func fixSchema(name string, s *openapi3.Schema) {
	if s == nil {
		return
	}
	short := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		short = name[i+1:]
	}
	for _, pn := range sortedKeys(s.Properties) {
		p := s.Properties[pn]
		if p.Value == nil {
			// A $ref cannot carry a description in 3.0: wrap it in allOf.
			d := describe(short, pn)
			if d == "" {
				continue
			}
			s.Properties[pn] = &openapi3.SchemaRef{Value: &openapi3.Schema{Description: d, AllOf: openapi3.SchemaRefs{p}}}
			continue
		}
		if p.Ref != "" {
			d := describe(short, pn)
			if d == "" {
				continue
			}
			s.Properties[pn] = &openapi3.SchemaRef{Value: &openapi3.Schema{Description: d, AllOf: openapi3.SchemaRefs{{Ref: p.Ref}}}}
			continue
		}
		if p.Value.Description == "" {
			p.Value.Description = describe(short, pn)
		}
		if e, ok := propertyEnums[short+"."+pn]; ok && p.Value.Type.Is("string") {
			p.Value.Enum = e
		}
	}
}

// propertyEnums closes string properties of answers that swag leaves open.
var propertyEnums = map[string][]any{
	"SampleView.release":     {"keys", "frequencies"},
	"SampleView.method":      {"max_separation", "discrete"},
	"SampleMeta.method":      {"max_separation", "discrete"},
	"SampleMeta.release":     {"keys", "frequencies"},
	"SamplingView.scheme":    {"ppswor", "priority", "none", "custom"},
	"EstimateView.estimator": {"mle", "biased_down", "unbiased"},
	"CounterView.algorithm":  {"simple", "randomized_response", "cascading", "tree"},
	"StreamRequest.counter":  {"simple", "randomized_response", "cascading", "tree"},
}

// markRequired marks, in every schema that only answers use, the
// properties the Go type always encodes (no omitempty), so that the
// contract test also checks that they are present.
func markRequired(doc *openapi3.T, types map[string][]goField) {
	inRequest := requestSchemas(doc)
	for _, name := range sortedKeys(doc.Components.Schemas) {
		s := doc.Components.Schemas[name].Value
		if inRequest[name] || s == nil {
			continue
		}
		req := map[string]bool{}
		for _, r := range s.Required {
			req[r] = true
		}
		for _, f := range alwaysPresent(types, name) {
			if _, ok := s.Properties[f]; ok && !req[f] {
				s.Required = append(s.Required, f)
				req[f] = true
			}
		}
	}
}

// requestSchemas returns the names of the schemas reachable from a request
// body.
func requestSchemas(doc *openapi3.T) map[string]bool {
	inRequest := map[string]bool{}
	var walk func(ref string)
	walk = func(ref string) {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		if name == ref || inRequest[name] {
			return
		}
		inRequest[name] = true
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			return
		}
		forEachRef(s.Value, walk)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			for _, m := range op.RequestBody.Value.Content {
				if m.Schema != nil {
					if m.Schema.Ref != "" {
						walk(m.Schema.Ref)
					} else if m.Schema.Value != nil {
						forEachRef(m.Schema.Value, walk)
					}
				}
			}
		}
	}
	return inRequest
}

// forEachRef calls f with every schema $ref reachable from s.
func forEachRef(s *openapi3.Schema, f func(string)) {
	visit := func(r *openapi3.SchemaRef) {
		if r == nil {
			return
		}
		if r.Ref != "" {
			f(r.Ref)
			return
		}
		if r.Value != nil {
			forEachRef(r.Value, f)
		}
	}
	for _, p := range s.Properties {
		visit(p)
	}
	visit(s.Items)
	for _, a := range s.AllOf {
		visit(a)
	}
	if s.AdditionalProperties.Schema != nil {
		visit(s.AdditionalProperties.Schema)
	}
}
