package jsonenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendFloatMatchesEncodingJSON checks AppendFloat against
// encoding/json on integers (frequencies: 1e7 must be 10000000, not 1e+07),
// fractions and the ends of the plain-notation range.
func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, 17, 999999, 1e6, 1234567, 1e7, 3e9, 1 << 53, -4096, 0.5, 1.25e-3, 1e-6, 9.99e-7, 1e-9,
		123456.789, 1e20, 1e21, 1.5e300, -2.5e-12, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendFloat(nil, f)); got != string(want) {
			t.Errorf("AppendFloat(%g) = %s, encoding/json writes %s", f, got, want)
		}
	}
	if got := string(AppendFloat(nil, 1e7)); got != "10000000" {
		t.Errorf("a frequency of 10^7 is written %s", got)
	}
}

// TestAppendStringMatchesEncodingJSON checks AppendString against
// encoding/json, its reference: every single byte, every pair of an ASCII
// byte and a multi-byte or invalid sequence, and random strings over an
// alphabet of the cases that need escaping.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
	specials := []string{"\u2028", "\u2029", "é", "€", "😀", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\u2027", "\u202a"}
	for c := range 256 {
		check(string(rune(c)))
		check(string([]byte{byte(c)}))
		for _, sp := range specials {
			check(string([]byte{byte(c)}) + sp)
			check(sp + string([]byte{byte(c)}))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := append([]string{"a", "<", ">", "&", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "z"}, specials...)
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		check(b.String())
	}
}

// TestDecodeStrict: one JSON value decodes; an unknown member, trailing
// data or a second value is refused.
func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	type v struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"a":1}`, true},
		{` {"a":1}  `, true},
		{`{"a":1,"b":2}`, false},
		{`{"a":1} {}`, false},
		{`{"a":1}x`, false},
		{`{"a":"1"}`, false},
		{``, false},
	} {
		var got v
		if err := DecodeStrict([]byte(tc.in), &got); (err == nil) != tc.ok || (tc.ok && got.A != 1) {
			t.Errorf("DecodeStrict(%q) = %+v, %v; want ok %v", tc.in, got, err, tc.ok)
		}
	}
}
