package workload

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// Default parameters of the issue-22 key log.
const (
	DefaultKeys     = 300_000
	DefaultTop      = 10_000_000
	DefaultExponent = 1.0
)

// Zipf is a heavy-tailed key log: the key of rank r in 1..Keys has
// frequency floor(Top / r^Exponent).
type Zipf struct {
	// Keys is the number of distinct keys in the log.
	Keys int
	// Top is the frequency of the most frequent key (rank 1).
	Top int64
	// Exponent is the Zipf exponent s of f_r = floor(Top / r^s).
	Exponent float64
}

// DefaultZipf is the log of issue 22: 300,000 keys, f_r = floor(10^7 / r).
func DefaultZipf() Zipf {
	return Zipf{Keys: DefaultKeys, Top: DefaultTop, Exponent: DefaultExponent}
}

// Validate reports a log that cannot be generated: no keys, a top
// frequency below 1, a negative or non-finite exponent, or a tail whose
// frequency would round down to 0 (a key of frequency 0 is not in a log).
func (z Zipf) Validate() error {
	switch {
	case z.Keys < 1:
		return fmt.Errorf("workload: keys %d: need at least 1", z.Keys)
	case z.Top < 1:
		return fmt.Errorf("workload: top frequency %d: need at least 1", z.Top)
	case z.Exponent < 0 || math.IsNaN(z.Exponent) || math.IsInf(z.Exponent, 0):
		return fmt.Errorf("workload: exponent %v: need a finite number >= 0", z.Exponent)
	}
	if f := z.Frequency(z.Keys); f < 1 {
		return fmt.Errorf("workload: the key of rank %d would have frequency %d (top %d / %d^%v < 1): lower the keys or raise the top frequency", z.Keys, f, z.Top, z.Keys, z.Exponent)
	}
	return nil
}

// Frequency is the frequency of the key of rank r (1-based):
// floor(Top / r^Exponent), computed exactly in integers for Exponent 1.
func (z Zipf) Frequency(rank int) int64 {
	if z.Exponent == 1 {
		return z.Top / int64(rank)
	}
	return int64(math.Floor(float64(z.Top) / math.Pow(float64(rank), z.Exponent)))
}

// Key is the key of rank r: "q-<rank>-<hash>", the hash being 8 hex digits
// of FNV-1a over the rank, so keys are unique, deterministic and look like
// opaque query identifiers of mixed length.
func Key(rank int) string {
	h := fnv.New32a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(rank))
	h.Write(b[:])
	return fmt.Sprintf("q-%d-%08x", rank, h.Sum32())
}

// Element is one key of a sample with its frequency in the log.
type Element struct {
	Key       string
	Frequency int64
}

// InclusionProbability is the probability 1 - exp(-tau f) that ppswor at
// threshold tau keeps a key of frequency f.
func InclusionProbability(tau float64, f int64) float64 {
	return -math.Expm1(-tau * float64(f))
}

// ExpectedSampleSize is the mean and variance of the size of a ppswor
// sample at threshold tau: sum_r p_r and sum_r p_r (1 - p_r), p_r the
// inclusion probability of rank r (keys are kept independently).
func (z Zipf) ExpectedSampleSize(tau float64) (mean, variance float64) {
	for r := 1; r <= z.Keys; r++ {
		p := InclusionProbability(tau, z.Frequency(r))
		mean += p
		variance += p * (1 - p)
	}
	return mean, variance
}

// SamplePPSWOR is the client's ppswor sample of the log at threshold tau:
// each key is kept independently with probability 1 - exp(-tau f) (its
// ppswor seed Exp(1)/f falls below tau), drawing from a PCG generator
// seeded by seed. The kept keys come in a seeded random order (a client's
// export is neither sorted by frequency nor by key). The same (log, tau,
// seed) always gives the same sample.
func (z Zipf) SamplePPSWOR(tau float64, seed uint64) ([]Element, error) {
	if err := z.Validate(); err != nil {
		return nil, err
	}
	if !(tau > 0) || math.IsInf(tau, 0) {
		return nil, fmt.Errorf("workload: threshold %v: need a finite number > 0", tau)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5a1f))
	var out []Element
	for r := 1; r <= z.Keys; r++ {
		f := z.Frequency(r)
		if rng.ExpFloat64() < tau*float64(f) {
			out = append(out, Element{Key: Key(r), Frequency: f})
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}

// Header is everything of a POST /v1/samples request but its elements, for
// a ppswor sample.
type Header struct {
	// Epsilon and Delta are the release's privacy parameters.
	Epsilon, Delta float64
	// Threshold is the client's ppswor threshold tau.
	Threshold float64
	// Method is "discrete" (Algorithm 4) or "max_separation" (Algorithm 5).
	Method string
	// Release is "frequencies" or "keys"; empty means frequencies.
	Release string
}

// wireHeader is Header as the API reads it.
type wireHeader struct {
	Privacy struct {
		Epsilon float64 `json:"epsilon"`
		Delta   float64 `json:"delta"`
	} `json:"privacy"`
	Sampling struct {
		Scheme    string  `json:"scheme"`
		Threshold float64 `json:"threshold"`
	} `json:"sampling"`
	Release string `json:"release"`
	Method  string `json:"method"`
}

func (h Header) wire() wireHeader {
	var w wireHeader
	w.Privacy.Epsilon, w.Privacy.Delta = h.Epsilon, h.Delta
	w.Sampling.Scheme, w.Sampling.Threshold = "ppswor", h.Threshold
	w.Release, w.Method = h.Release, h.Method
	if w.Release == "" {
		w.Release = "frequencies"
	}
	return w
}

// headerObject is the header as a JSON object without its closing brace.
func (h Header) headerObject() ([]byte, error) {
	b, err := json.Marshal(h.wire())
	if err != nil {
		return nil, fmt.Errorf("workload: encoding the header: %w", err)
	}
	return b[:len(b)-1], nil
}

// appendElement appends {"key":...,"frequency":...}.
func appendElement(b []byte, e Element) ([]byte, error) {
	k, err := json.Marshal(e.Key)
	if err != nil {
		return nil, fmt.Errorf("workload: encoding key: %w", err)
	}
	b = append(b, `{"key":`...)
	b = append(b, k...)
	b = append(b, `,"frequency":`...)
	b = strconv.AppendInt(b, e.Frequency, 10)
	return append(b, '}'), nil
}

// WriteJSON writes the JSON body of POST /v1/samples: the header's fields
// and "elements": [{"key", "frequency"}, ...].
func (h Header) WriteJSON(w io.Writer, elems []Element) error {
	b, err := h.headerObject()
	if err != nil {
		return err
	}
	b = append(b, `,"elements":[`...)
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendElement(b, e); err != nil {
			return err
		}
	}
	b = append(b, "]}\n"...)
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("workload: writing the JSON body: %w", err)
	}
	return nil
}

// WriteNDJSON writes the NDJSON body of POST /v1/samples
// (Content-Type application/x-ndjson): the header object on line 1, then
// one element object per line.
func (h Header) WriteNDJSON(w io.Writer, elems []Element) error {
	b, err := h.headerObject()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	line := append(b, "}\n"...)
	for _, e := range elems {
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("workload: writing the NDJSON body: %w", err)
		}
		if line, err = appendElement(line[:0], e); err != nil {
			return err
		}
		line = append(line, '\n')
	}
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("workload: writing the NDJSON body: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("workload: writing the NDJSON body: %w", err)
	}
	return nil
}
