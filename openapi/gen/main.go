package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

func main() {
	in := flag.String("in", "openapi/swagger.json", "swag's Swagger 2.0 output")
	out := flag.String("out", "openapi/openapi.json", "the OpenAPI 3.0 document to write")
	src := flag.String("src", ".", "module root, for reading the Go types behind the schemas")
	flag.Parse()
	if err := run(*in, *out, *src); err != nil {
		log.Fatal(err)
	}
}

func run(in, out, src string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("reading swag output: %w", err)
	}
	var doc2 openapi2.T
	if err := json.Unmarshal(b, &doc2); err != nil {
		return fmt.Errorf("parsing swag output: %w", err)
	}
	doc, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return fmt.Errorf("converting to OpenAPI 3: %w", err)
	}
	types, err := parseGoTypes(src)
	if err != nil {
		return err
	}
	if err := postProcess(doc, types); err != nil {
		return err
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	if js, err = renameSchemas(js); err != nil {
		return err
	}
	loader := openapi3.NewLoader()
	loaded, err := loader.LoadFromData(js)
	if err != nil {
		return fmt.Errorf("reloading the generated document: %w", err)
	}
	if err := loaded.Validate(loader.Context); err != nil {
		return fmt.Errorf("the generated document is not valid OpenAPI 3: %w", err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, js, "", "  "); err != nil {
		return fmt.Errorf("indenting: %w", err)
	}
	pretty.WriteByte('\n')
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, pretty.Bytes(), 0o644)
}

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

// hasPrefixAny reports whether s starts with any of the prefixes.
func hasPrefixAny(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// schemaNames renames the schemas whose Go name alone would not say what
// they are; every other schema loses its Go package ("api.SampleView" is
// SampleView), so that generated clients have plain type names.
var schemaNames = map[string]string{
	"panprivate.Config":    "StreamEstimatorConfig",
	"panprivate.State":     "StreamState",
	"panprivate.Kind":      "StreamEstimatorKind",
	"panprivate.Algorithm": "StreamAlgorithm",
}

// renameSchemas renames the component schemas of the encoded document js
// and every $ref to them (two schemas may not end up with one name), and
// gives every number the format double.
func renameSchemas(js []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("renaming schemas: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	renamed := map[string]any{}
	refs := map[string]string{}
	for _, old := range sortedKeys(schemas) {
		name, ok := schemaNames[old]
		if !ok {
			name = old[strings.LastIndexByte(old, '.')+1:]
		}
		if _, dup := renamed[name]; dup {
			return nil, fmt.Errorf("renaming schemas: two schemas named %s (add one to schemaNames)", name)
		}
		renamed[name] = schemas[old]
		refs["#/components/schemas/"+old] = "#/components/schemas/" + name
	}
	if comps != nil {
		comps["schemas"] = renamed
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			// Every number is a float64: without a format, generators
			// take float32 and round epsilon and delta.
			if x["type"] == "number" && x["format"] == nil {
				x["format"] = "double"
			}
			for k, e := range x {
				if s, ok := e.(string); ok && k == "$ref" {
					if n, ok := refs[s]; ok {
						x[k] = n
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	return json.Marshal(doc)
}
