package api

import (
	"testing"
)

// FuzzParseElementFast: whenever the fast path accepts a line, strict
// encoding/json decoding accepts it too and yields the same element.
func FuzzParseElementFast(f *testing.F) {
	for _, s := range []string{
		`{"key":"a","frequency":17}`, `{ "frequency" : 3 , "key" : "b" }`, `{"key":"a\"b","frequency":1}`,
		`{"key":"a","frequency":1,"x":2}`, `{"key":"a","key":"b"}`, `{"key":"é","frequency":2}`, `{"key":"a","frequency":01}`,
		`{"key":"","frequency":1}`, `{"key":"a","frequency":0}`, `{"key":"a","frequency":12}x`, `{"key":"a","frequency":}`,
		`{"key":"a","frequency":12} `, `{"key":"a\u0041","frequency":3}`, `{"key":"a","frequency":1e3}`, `{"key":"a","frequency":99999999999999999999}`,
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
	})
}

// BenchmarkParseElementFast: one element line, both member orders.
func BenchmarkParseElementFast(b *testing.B) {
	lines := [][]byte{[]byte(`{"key":"key-123456","frequency":17}`), []byte(`{ "frequency" : 3 , "key" : "user-42" }`)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, ok := parseElementFast(lines[i&1]); !ok {
			b.Fatal("not parsed")
		}
	}
}
