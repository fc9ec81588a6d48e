package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// goField is one JSON-visible field of a Go struct.
type goField struct {
	name      string // JSON name
	omitempty bool
	embedded  string // "pkg.Type" of an embedded struct whose fields are inlined
	doc       string // the field's doc comment, if any
}

// parseGoTypes reads the struct types of the packages whose types appear in
// the document, keyed as swag names schemas ("api.SampleView").
func parseGoTypes(root string) (map[string][]goField, error) {
	types := map[string][]goField{}
	for _, dir := range []string{"api", "internal/service", "internal/panprivate", "internal/planner", "internal/sanitize"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", dir, err)
		}
		fset := token.NewFileSet()
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, parser.SkipObjectResolution|parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", name, err)
			}
			pkg := f.Name.Name
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				types[pkg+"."+ts.Name.Name] = structFields(pkg, st)
				return false
			})
		}
	}
	return types, nil
}

func structFields(pkg string, st *ast.StructType) []goField {
	var out []goField
	for _, fl := range st.Fields.List {
		tag := ""
		if fl.Tag != nil {
			tag = reflect.StructTag(strings.Trim(fl.Tag.Value, "`")).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		omit := strings.Contains(","+opts+",", ",omitempty,")
		if len(fl.Names) == 0 { // embedded
			if name == "" {
				out = append(out, goField{embedded: typeName(pkg, fl.Type)})
			}
			continue
		}
		for _, id := range fl.Names {
			if !id.IsExported() {
				continue
			}
			n := name
			if n == "" {
				n = id.Name
			}
			out = append(out, goField{name: n, omitempty: omit, doc: strings.TrimSpace(fl.Doc.Text())})
		}
	}
	return out
}

// typeName renders an embedded field's type as "pkg.Type".
func typeName(pkg string, e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return pkg + "." + t.Name
	case *ast.StarExpr:
		return typeName(pkg, t.X)
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok {
			return x.Name + "." + t.Sel.Name
		}
	}
	return ""
}

// fieldDoc returns the doc comment of typ's field with JSON name name.
func fieldDoc(types map[string][]goField, typ, name string) string {
	for _, f := range types[typ] {
		if f.name == name {
			return f.doc
		}
	}
	return ""
}

// alwaysPresent returns the JSON names of the fields of typ that are always
// in its encoding (not omitempty), following embedded structs.
func alwaysPresent(types map[string][]goField, typ string) []string {
	var out []string
	for _, f := range types[typ] {
		switch {
		case f.embedded != "":
			out = append(out, alwaysPresent(types, f.embedded)...)
		case !f.omitempty:
			out = append(out, f.name)
		}
	}
	return out
}
