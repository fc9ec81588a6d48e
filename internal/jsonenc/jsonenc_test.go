package jsonenc

import (
	"encoding/json"
	"math"
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
