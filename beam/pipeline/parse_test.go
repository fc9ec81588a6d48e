package pipeline

import (
	"strings"
	"testing"
)

// flatLines are lines for the differential checks: flat objects scanFlat
// answers, and lines of every shape it hands to the reference.
var flatLines = []string{
	`{"key":"a"}`, `{"key":"a","w":3}`, `{"w":"7","key":"b"}`, ` { "key" : "c" , "w" : 12 } `,
	`{"key":"a","key":"b"}`, `{"key":null}`, `{"key":1}`, `{"key":true}`, `{"key":false,"w":1}`,
	`{}`, `{"w":1}`, `{"key":"a"}}`, `{"key":"a"}]`, `{"key":"a"} x`, `{"key":"a"}{}`, `[1]`, `null`, `"x"`, `1`,
	`{"key":"a\"b"}`, `{"key":"\u00e9"}`, `{"k\u0065y":"x"}`, `{"key":"é"}`, "{\"key\":\"\xff\"}", "{\"key\":\"a\x01\"}",
	`{"key":"a","w":1.5}`, `{"key":"a","w":-0}`, `{"key":"a","w":01}`, `{"key":"a","w":1e3}`, `{"key":"a","w":1.}`, `{"key":"a","w":-}`,
	`{"key":"a","w":""}`, `{"key":"a","w":"1"}`, `{"key":"a","w":null}`, `{"key":"a","w":tru}`, `{"key":"a","w":truex}`,
	`{"key":"a","nested":{"key":"z"}}`, `{"key":"a","list":[1,2]}`, `{"key":"a",}`, `{,"key":"a"}`, `{"key" "a"}`, `{"key":"a"`,
	`{"key":"a","w":9223372036854775808}`, "{\"key\":\"a\"}\t", `{"user":42,"key":"k17","w":2}`,
}

// TestScanFlatMatchesReference: on every line, jsonFields (scanFlat when
// it answers) gives exactly the key, value text and reason of the
// encoding/json reference, with and without a value field.
func TestScanFlatMatchesReference(t *testing.T) {
	for _, vf := range []string{"", "w"} {
		f := &parseFn{KeyField: "key", ValueField: vf}
		for _, l := range flatLines {
			k1, v1, r1 := f.jsonFields(l)
			k2, v2, r2 := f.jsonFieldsSlow(l)
			if k1 != k2 || v1 != v2 || r1 != r2 {
				t.Errorf("value field %q, line %q: got (%q, %q, %q), reference (%q, %q, %q)", vf, l, k1, v1, r1, k2, v2, r2)
			}
		}
	}
	// The typical lines take the fast path (else the comparison above
	// would only compare the reference with itself).
	f := &parseFn{KeyField: "key", ValueField: "w"}
	for _, l := range flatLines[:9] {
		if _, _, _, ok := f.scanFlat(l); !ok {
			t.Errorf("scanFlat hands %q to the reference", l)
		}
	}
}

// FuzzJSONFields: the same on any line.
func FuzzJSONFields(f *testing.F) {
	for _, l := range flatLines {
		f.Add(l, "w")
	}
	f.Fuzz(func(t *testing.T, line, vf string) {
		p := &parseFn{KeyField: "key", ValueField: vf}
		k1, v1, r1 := p.jsonFields(line)
		k2, v2, r2 := p.jsonFieldsSlow(line)
		if k1 != k2 || v1 != v2 || r1 != r2 {
			t.Fatalf("value field %q, line %q: got (%q, %q, %q), reference (%q, %q, %q)", vf, line, k1, v1, r1, k2, v2, r2)
		}
	})
}

// BenchmarkJSONFields compares the scanner with the reference on a typical
// line.
func BenchmarkJSONFields(b *testing.B) {
	line := `{"user":123456,"key":"k48213","w":2,"ts":"2026-11-26T01:00:00Z"}`
	f := &parseFn{KeyField: "key", ValueField: "w"}
	for _, bc := range []struct {
		name string
		fn   func(string) (string, string, string)
	}{{"scan", f.jsonFields}, {"encoding_json", f.jsonFieldsSlow}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if k, _, _ := bc.fn(line); !strings.HasPrefix(k, "k") {
					b.Fatal(k)
				}
			}
		})
	}
}
