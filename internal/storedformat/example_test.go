package storedformat_test

import (
	"fmt"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/storedformat"
)

// A sample's header is stored in the current format and read back as it was.
func ExampleEncodeSampleHeader() {
	h := storedformat.SampleHeader{Privacy: sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-4, Power: 1},
		Release:  "frequencies", Method: sanitize.MethodDiscrete}
	b, _ := storedformat.EncodeSampleHeader(h)
	fmt.Println(string(b))
	back, err := storedformat.DecodeSampleHeader(b)
	fmt.Println(back.Privacy.Epsilon, back.Method, err)
	// Output:
	// {"format":2,"privacy":{"epsilon":0.5,"delta":0.000001},"sampling":{"scheme":"ppswor","threshold":0.0001,"power":1},"release":"frequencies","method":"discrete"}
	// 0.5 discrete <nil>
}
