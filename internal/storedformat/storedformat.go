package storedformat

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/jsonenc"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// The versions of the JSON the service stores. Every stored object carries
// its version in a "format" member. Format 1 is the previous release's
// shape, which had no "format" member: sample headers with Go field names
// ({"privacy":{"Epsilon":0.5}}), stream configurations in the API's names,
// counter configurations holding the public counter view at creation. It is
// still read, for one release, and RewriteStoredFormats rewrites it.
const (
	SampleHeaderFormat  = 2
	StreamConfigFormat  = 2
	CounterConfigFormat = 2
)

// storedSampleHeader is the stored description of a sample release.
type storedSampleHeader struct {
	Format   int            `json:"format"`
	Dataset  string         `json:"dataset,omitempty"`
	Privacy  storedPrivacy  `json:"privacy"`
	Sampling storedSampling `json:"sampling"`
	Release  string         `json:"release"`
	Method   string         `json:"method"`
}

type storedPrivacy struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

type storedSampling struct {
	Scheme        string    `json:"scheme"`
	Threshold     float64   `json:"threshold"`
	Power         float64   `json:"power"`
	Probabilities []float64 `json:"probabilities,omitempty"`
}

// legacySampleHeader is format 1: sanitize's structs had no JSON tags.
type legacySampleHeader struct {
	Dataset string `json:"dataset,omitempty"`
	Privacy struct {
		Epsilon float64
		Delta   float64
	} `json:"privacy"`
	Sampling struct {
		Scheme        string
		Threshold     float64
		Power         float64
		Probabilities []float64
	} `json:"sampling"`
	Release string `json:"release"`
	Method  string `json:"method"`
}

// SampleHeader is the stored description of a sample release: everything
// about it but its elements, all public.
type SampleHeader struct {
	Dataset  string
	Privacy  sanitize.Privacy
	Sampling sanitize.Sampling
	Release  string // "frequencies" or "keys"
	Method   sanitize.Method
}

// EncodeSampleHeader encodes h in SampleHeaderFormat.
func EncodeSampleHeader(spec SampleHeader) ([]byte, error) {
	return json.Marshal(storedSampleHeader{
		Format: SampleHeaderFormat, Dataset: spec.Dataset,
		Privacy: storedPrivacy{Epsilon: spec.Privacy.Epsilon, Delta: spec.Privacy.Delta},
		Sampling: storedSampling{Scheme: string(spec.Sampling.Scheme), Threshold: spec.Sampling.Threshold,
			Power: spec.Sampling.Power, Probabilities: spec.Sampling.Probabilities},
		Release: spec.Release, Method: string(spec.Method)})
}

// DecodeSampleHeader decodes a stored header strictly (format 2, or the
// legacy format 1) into the release it describes.
func DecodeSampleHeader(data []byte) (SampleHeader, error) {
	var spec SampleHeader
	format, err := Format(data)
	if err != nil {
		return spec, fmt.Errorf("decoding sample header: %w", err)
	}
	var h storedSampleHeader
	switch format {
	case SampleHeaderFormat:
		if err := jsonenc.DecodeStrict(data, &h); err != nil {
			return spec, fmt.Errorf("decoding sample header: %w", err)
		}
	case 0:
		var l legacySampleHeader
		if err := jsonenc.DecodeStrict(data, &l); err != nil {
			return spec, fmt.Errorf("decoding legacy sample header: %w", err)
		}
		// The legacy structs differ from the current ones in their JSON
		// names only.
		h = storedSampleHeader{Dataset: l.Dataset, Privacy: storedPrivacy(l.Privacy), Sampling: storedSampling(l.Sampling),
			Release: l.Release, Method: l.Method}
	default:
		return spec, fmt.Errorf("decoding sample header: unknown format %d", format)
	}
	spec = SampleHeader{Dataset: h.Dataset, Privacy: sanitize.Privacy{Epsilon: h.Privacy.Epsilon, Delta: h.Privacy.Delta},
		Sampling: sanitize.Sampling{Scheme: sanitize.Scheme(h.Sampling.Scheme), Threshold: h.Sampling.Threshold,
			Power: h.Sampling.Power, Probabilities: h.Sampling.Probabilities},
		Release: h.Release, Method: sanitize.Method(h.Method)}
	if len(spec.Sampling.Probabilities) == 0 {
		spec.Sampling.Probabilities = nil
	}
	return spec, nil
}

// storedStreamConfig is the stored configuration of a stream: its own
// struct, not the API's request or answer.
type storedStreamConfig struct {
	Format    int                    `json:"format"`
	Dataset   string                 `json:"dataset,omitempty"`
	Continual bool                   `json:"continual"`
	Estimator *storedEstimatorConfig `json:"estimator,omitempty"`
	Density   *storedDensityConfig   `json:"continual_density,omitempty"`
}

type storedEstimatorConfig struct {
	Estimator      string          `json:"estimator"`
	Algorithm      string          `json:"algorithm,omitempty"`
	Epsilon        float64         `json:"epsilon"`
	UniverseSize   uint64          `json:"universe_size"`
	SampleSize     int             `json:"sample_size,omitempty"`
	Accuracy       *storedAccuracy `json:"accuracy,omitempty"`
	T              int             `json:"t,omitempty"`
	K              int             `json:"k,omitempty"`
	MaxOccurrences int             `json:"max_occurrences,omitempty"`
	Rho            float64         `json:"rho,omitempty"`
	Moduli         int             `json:"moduli,omitempty"`
	ReleaseNoise   string          `json:"release_noise,omitempty"`
	MaxReleases    int             `json:"max_releases,omitempty"`
}

type storedAccuracy struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
}

type storedDensityConfig struct {
	Epsilon      float64 `json:"epsilon"`
	UniverseSize uint64  `json:"universe_size"`
	SampleSize   int     `json:"sample_size"`
	Horizon      int64   `json:"horizon,omitempty"`
	Counter      string  `json:"counter,omitempty"`
}

// StreamConfig is a stream's decoded configuration.
type StreamConfig struct {
	Dataset   string
	Continual bool
	Estimator *panprivate.Config
	Density   *panprivate.ContinualDensityConfig
}

// EncodeStreamConfig encodes c in StreamConfigFormat.
func EncodeStreamConfig(c StreamConfig) ([]byte, error) {
	s := storedStreamConfig{Format: StreamConfigFormat, Dataset: c.Dataset, Continual: c.Continual}
	if e := c.Estimator; e != nil {
		s.Estimator = &storedEstimatorConfig{Estimator: string(e.Estimator), Algorithm: string(e.Algorithm), Epsilon: e.Epsilon,
			UniverseSize: e.UniverseSize, SampleSize: e.SampleSize, T: e.T, K: e.K, MaxOccurrences: e.MaxOccurrences,
			Rho: e.Rho, Moduli: e.Moduli, ReleaseNoise: string(e.ReleaseNoise), MaxReleases: e.MaxReleases}
		if a := e.Accuracy; a != nil {
			s.Estimator.Accuracy = &storedAccuracy{Alpha: a.Alpha, Beta: a.Beta}
		}
	}
	if d := c.Density; d != nil {
		s.Density = &storedDensityConfig{Epsilon: d.Epsilon, UniverseSize: d.UniverseSize, SampleSize: d.SampleSize,
			Horizon: d.Horizon, Counter: string(d.Counter)}
	}
	return json.Marshal(s)
}

// DecodeStreamConfig decodes a stored stream configuration strictly. The
// legacy format 1 had the same members without "format".
func DecodeStreamConfig(data []byte) (StreamConfig, error) {
	var s storedStreamConfig
	if err := jsonenc.DecodeStrict(data, &s); err != nil {
		return StreamConfig{}, fmt.Errorf("decoding stream config: %w", err)
	}
	if s.Format != StreamConfigFormat && s.Format != 0 {
		return StreamConfig{}, fmt.Errorf("decoding stream config: unknown format %d", s.Format)
	}
	if (s.Estimator == nil) == (s.Density == nil) || s.Continual != (s.Density != nil) {
		return StreamConfig{}, errors.New("decoding stream config: inconsistent estimator and continual density")
	}
	c := StreamConfig{Dataset: s.Dataset, Continual: s.Continual}
	if e := s.Estimator; e != nil {
		c.Estimator = &panprivate.Config{Estimator: panprivate.Kind(e.Estimator), Algorithm: panprivate.Algorithm(e.Algorithm),
			Epsilon: e.Epsilon, UniverseSize: e.UniverseSize, SampleSize: e.SampleSize, T: e.T, K: e.K,
			MaxOccurrences: e.MaxOccurrences, Rho: e.Rho, Moduli: e.Moduli,
			ReleaseNoise: panprivate.ReleaseNoise(e.ReleaseNoise), MaxReleases: e.MaxReleases}
		if a := e.Accuracy; a != nil {
			c.Estimator.Accuracy = &panprivate.Accuracy{Alpha: a.Alpha, Beta: a.Beta}
		}
	}
	if d := s.Density; d != nil {
		c.Density = &panprivate.ContinualDensityConfig{Epsilon: d.Epsilon, UniverseSize: d.UniverseSize,
			SampleSize: d.SampleSize, Horizon: d.Horizon, Counter: panprivate.CounterAlgorithm(d.Counter)}
	}
	return c, nil
}

// storedCounterConfig is what a counter's record keeps beside its binary
// state: the configuration and the post-processing with its latest output
// (functions of published outputs only: no privacy cost, not part of the
// pan-private state).
type storedCounterConfig struct {
	Format      int     `json:"format"`
	Algorithm   string  `json:"algorithm"`
	Epsilon     float64 `json:"epsilon"`
	Horizon     int64   `json:"horizon"`
	Postprocess string  `json:"postprocess,omitempty"`
	Monotone    float64 `json:"monotone,omitempty"`
}

// legacyCounterConfig is format 1: the public counter view at creation
// (steps and count, stale after the first step) plus the post-processing.
type legacyCounterConfig struct {
	Algorithm   string  `json:"algorithm"`
	Epsilon     float64 `json:"epsilon"`
	Horizon     int64   `json:"horizon"`
	Steps       int64   `json:"steps"`
	Count       float64 `json:"count"`
	Postprocess string  `json:"postprocess,omitempty"`
	Monotone    float64 `json:"monotone,omitempty"`
}

// CounterConfig is a counter's decoded record configuration.
type CounterConfig struct {
	Algorithm   panprivate.CounterAlgorithm
	Epsilon     float64
	Horizon     int64
	Postprocess panprivate.CounterPostprocess
	Monotone    float64
}

// EncodeCounterConfig encodes c in CounterConfigFormat.
func EncodeCounterConfig(c CounterConfig) ([]byte, error) {
	return json.Marshal(storedCounterConfig{Format: CounterConfigFormat, Algorithm: string(c.Algorithm), Epsilon: c.Epsilon,
		Horizon: c.Horizon, Postprocess: string(c.Postprocess), Monotone: c.Monotone})
}

// DecodeCounterConfig decodes a counter's stored configuration strictly
// (format 2, or the legacy format 1).
func DecodeCounterConfig(data []byte) (CounterConfig, error) {
	format, err := Format(data)
	if err != nil {
		return CounterConfig{}, fmt.Errorf("decoding counter config: %w", err)
	}
	var c CounterConfig
	switch format {
	case CounterConfigFormat:
		var s storedCounterConfig
		if err := jsonenc.DecodeStrict(data, &s); err != nil {
			return c, fmt.Errorf("decoding counter config: %w", err)
		}
		c = CounterConfig{Algorithm: panprivate.CounterAlgorithm(s.Algorithm), Epsilon: s.Epsilon, Horizon: s.Horizon,
			Postprocess: panprivate.CounterPostprocess(s.Postprocess), Monotone: s.Monotone}
	case 0:
		var s legacyCounterConfig
		if err := jsonenc.DecodeStrict(data, &s); err != nil {
			return c, fmt.Errorf("decoding legacy counter config: %w", err)
		}
		c = CounterConfig{Algorithm: panprivate.CounterAlgorithm(s.Algorithm), Epsilon: s.Epsilon, Horizon: s.Horizon,
			Postprocess: panprivate.CounterPostprocess(s.Postprocess), Monotone: s.Monotone}
	default:
		return c, fmt.Errorf("decoding counter config: unknown format %d", format)
	}
	return c, c.Postprocess.Validate()
}

// Format returns the "format" member of a stored JSON object (0 when
// absent: the legacy format 1).
func Format(data []byte) (int, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return 0, err
	}
	raw, ok := probe["format"]
	if !ok {
		return 0, nil
	}
	var f int
	if err := json.Unmarshal(raw, &f); err != nil || f <= 0 {
		return 0, fmt.Errorf("bad format member %s", raw)
	}
	return f, nil
}
