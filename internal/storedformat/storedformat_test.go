package storedformat

import (
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestStoredFormatsStrict checks that the stored JSON decoders refuse
// unknown members, trailing data, unknown formats and inconsistent stream
// configurations, and accept both the current and the legacy shapes.
func TestStoredFormatsStrict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dec  func([]byte) error
		data string
		ok   bool
	}{
		{"header v2", decHeader, `{"format":2,"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"ppswor","threshold":1,"power":1},"release":"keys","method":"discrete"}`, true},
		{"header legacy", decHeader, `{"privacy":{"Epsilon":1,"Delta":0.1},"sampling":{"Scheme":"ppswor","Threshold":1,"Power":1,"Probabilities":null},"release":"keys","method":"discrete"}`, true},
		{"header unknown member", decHeader, `{"format":2,"privacy":{"epsilon":1,"delta":0.1,"x":1},"sampling":{"scheme":"ppswor","threshold":1,"power":1},"release":"keys","method":"discrete"}`, false},
		{"header trailing", decHeader, `{"format":2,"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"ppswor","threshold":1,"power":1},"release":"keys","method":"discrete"} {}`, false},
		{"header future", decHeader, `{"format":3}`, false},
		{"stream v2", decStream, `{"format":2,"continual":false,"estimator":{"estimator":"density","epsilon":0.5,"universe_size":10}}`, true},
		{"stream legacy", decStream, `{"continual":true,"continual_density":{"epsilon":0.3,"universe_size":10,"sample_size":5}}`, true},
		{"stream both", decStream, `{"format":2,"continual":true,"estimator":{"estimator":"density","epsilon":0.5,"universe_size":10},"continual_density":{"epsilon":0.3,"universe_size":10,"sample_size":5}}`, false},
		{"stream unknown", decStream, `{"format":2,"continual":false,"estimator":{"estimator":"density","epsilon":0.5,"universe_size":10,"events":3}}`, false},
		{"counter v2", decCounter, `{"format":2,"algorithm":"tree","epsilon":1,"horizon":8}`, true},
		{"counter legacy", decCounter, `{"algorithm":"tree","epsilon":1,"horizon":8,"steps":0,"count":0}`, true},
		{"counter v2 with steps", decCounter, `{"format":2,"algorithm":"tree","epsilon":1,"horizon":8,"steps":0}`, false},
		{"counter bad postprocess", decCounter, `{"format":2,"algorithm":"tree","epsilon":1,"horizon":8,"postprocess":"x"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.dec([]byte(tc.data)); (err == nil) != tc.ok {
				t.Errorf("decoding %s: %v, want ok=%v", tc.data, err, tc.ok)
			}
		})
	}
}

func decHeader(b []byte) error { _, err := DecodeSampleHeader(b); return err }

func decStream(b []byte) error { _, err := DecodeStreamConfig(b); return err }

func decCounter(b []byte) error { _, err := DecodeCounterConfig(b); return err }

// TestRoundTrip: every current encoding decodes to what was encoded, and
// carries its format member.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	h := SampleHeader{Dataset: "logs", Privacy: sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemeCustom, Threshold: 1, Power: 1, Probabilities: []float64{0.1, 0.5, 1}},
		Release:  "frequencies", Method: sanitize.MethodMaxSeparation}
	sc := StreamConfig{Dataset: "d", Estimator: &panprivate.Config{Estimator: "density", Epsilon: 0.5, UniverseSize: 10, SampleSize: 4,
		Accuracy: &panprivate.Accuracy{Alpha: 0.1, Beta: 0.05}}}
	cd := StreamConfig{Continual: true, Density: &panprivate.ContinualDensityConfig{Epsilon: 0.3, UniverseSize: 10, SampleSize: 5, Horizon: 64}}
	cc := CounterConfig{Algorithm: "tree", Epsilon: 1, Horizon: 8}
	for _, tc := range []struct {
		name   string
		format int
		enc    func() ([]byte, error)
		dec    func([]byte) (any, error)
		want   any
	}{
		{"sample header", SampleHeaderFormat, func() ([]byte, error) { return EncodeSampleHeader(h) },
			func(b []byte) (any, error) { return DecodeSampleHeader(b) }, h},
		{"estimator stream", StreamConfigFormat, func() ([]byte, error) { return EncodeStreamConfig(sc) },
			func(b []byte) (any, error) { return DecodeStreamConfig(b) }, sc},
		{"continual stream", StreamConfigFormat, func() ([]byte, error) { return EncodeStreamConfig(cd) },
			func(b []byte) (any, error) { return DecodeStreamConfig(b) }, cd},
		{"counter", CounterConfigFormat, func() ([]byte, error) { return EncodeCounterConfig(cc) },
			func(b []byte) (any, error) { return DecodeCounterConfig(b) }, cc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.enc()
			if err != nil {
				t.Fatal(err)
			}
			if f, err := Format(b); err != nil || f != tc.format {
				t.Fatalf("format of %s: %d, %v; want %d", b, f, err, tc.format)
			}
			got, err := tc.dec(b)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("decoded %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestLegacyReadsAsCurrent: each legacy (format 1) object decodes to what
// its current encoding decodes to, and re-encoding it gives the current
// format: what RewriteStoredFormats relies on.
func TestLegacyReadsAsCurrent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, legacy string
		dec          func([]byte) (any, error)
		enc          func(any) ([]byte, error)
		format       int
	}{
		{"sample header", `{"dataset":"logs","privacy":{"Epsilon":0.5,"Delta":1e-6},"sampling":{"Scheme":"custom","Threshold":1,"Power":1,"Probabilities":[0.25,1]},"release":"frequencies","method":"max_separation"}`,
			func(b []byte) (any, error) { return DecodeSampleHeader(b) },
			func(v any) ([]byte, error) { return EncodeSampleHeader(v.(SampleHeader)) }, SampleHeaderFormat},
		{"stream", `{"dataset":"d","continual":false,"estimator":{"estimator":"density","algorithm":"ppds","epsilon":0.3,"universe_size":50,"sample_size":9}}`,
			func(b []byte) (any, error) { return DecodeStreamConfig(b) },
			func(v any) ([]byte, error) { return EncodeStreamConfig(v.(StreamConfig)) }, StreamConfigFormat},
		{"counter", `{"algorithm":"cascading","epsilon":0.7,"horizon":16,"steps":3,"count":2.5,"postprocess":"monotone","monotone":1.5}`,
			func(b []byte) (any, error) { return DecodeCounterConfig(b) },
			func(v any) ([]byte, error) { return EncodeCounterConfig(v.(CounterConfig)) }, CounterConfigFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f, err := Format([]byte(tc.legacy)); err != nil || f != 0 {
				t.Fatalf("legacy format %d, %v; want 0 (no format member)", f, err)
			}
			old, err := tc.dec([]byte(tc.legacy))
			if err != nil {
				t.Fatal(err)
			}
			cur, err := tc.enc(old)
			if err != nil {
				t.Fatal(err)
			}
			if f, err := Format(cur); err != nil || f != tc.format {
				t.Fatalf("re-encoded format %d, %v; want %d", f, err, tc.format)
			}
			again, err := tc.dec(cur)
			if err != nil || !reflect.DeepEqual(again, old) {
				t.Fatalf("current encoding decodes to %+v, %v; the legacy one to %+v", again, err, old)
			}
		})
	}
}

// TestFormatMember: the format member must be a positive integer.
func TestFormatMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"format":2}`, 2, true},
		{`{}`, 0, true},
		{`{"format":0}`, 0, false},
		{`{"format":-1}`, 0, false},
		{`{"format":"2"}`, 0, false},
		{`{"format":2.5}`, 0, false},
		{`[]`, 0, false},
		{`not json`, 0, false},
	} {
		f, err := Format([]byte(tc.in))
		if (err == nil) != tc.ok || f != tc.want {
			t.Errorf("Format(%s) = %d, %v; want %d, ok %v", tc.in, f, err, tc.want, tc.ok)
		}
	}
}
