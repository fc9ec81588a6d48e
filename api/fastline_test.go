package api

import (
	"encoding/json"
	"testing"
)

// FuzzParseElementFast: whenever the fast path accepts a line, strict
// encoding/json decoding accepts it too and yields the same element.
func FuzzParseElementFast(f *testing.F) {
	for _, s := range []string{
		`{"key":"a","frequency":17}`, `{ "frequency" : 3 , "key" : "b" }`, `{"key":"a\"b","frequency":1}`,
		`{"key":"a","frequency":1,"x":2}`, `{"key":"a","key":"b"}`, `{"key":"é","frequency":2}`, `{"key":"a","frequency":01}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		k, freq, ok := parseElementFast([]byte(line))
		if !ok {
			return
		}
		var e SampleElement
		if err := decodeLine([]byte(line), &e, 1, "elements[0]"); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses: %v", line, err)
		}
		if e.Key != k || string(e.Frequency) != string(freq) {
			t.Fatalf("fast path %q/%q, encoding/json %q/%q", k, freq, e.Key, e.Frequency)
		}
		_ = json.Valid
	})
}
