package panprivate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Binary encoding. Layout: magic 'P', version, algorithm code, epsilon
// (float64 little endian), horizon and steps (uvarint), latest output
// (float64), then the algorithm's fields.

const (
	counterMagic   = 'P'
	counterVersion = 1
)

// counterAlgorithms lists the algorithms in encoding order: the code of
// counterAlgorithms()[i] is i+1.
func counterAlgorithms() []CounterAlgorithm {
	return []CounterAlgorithm{CounterSimple, CounterRandomizedResponse, CounterCascading, CounterTree}
}

func counterAlgCode(alg CounterAlgorithm) byte {
	for i, a := range counterAlgorithms() {
		if a == alg {
			return byte(i + 1)
		}
	}
	return 0
}

func (c *counterBase) appendHeader(b []byte) []byte {
	b = append(b, counterMagic, counterVersion, counterAlgCode(c.alg))
	b = counterAppendFloat(b, c.eps)
	b = counterAppendUvarint(b, uint64(c.horizon))
	b = counterAppendUvarint(b, uint64(c.steps))
	return counterAppendFloat(b, c.last)
}

// UnmarshalCounter restores a counter encoded by MarshalBinary, attaching the
// noise sources lap and rng. Corrupt or inconsistent input is an error.
func UnmarshalCounter(data []byte, lap dprand.Laplacer, rng *rand.Rand) (Counter, error) {
	if lap == nil || rng == nil {
		return nil, errors.New("panprivate: unmarshal counter: nil noise source")
	}
	c, err := counterDecode(data, lap, rng)
	if err != nil {
		return nil, fmt.Errorf("panprivate: unmarshal counter: %w", err)
	}
	return c, nil
}

func counterDecode(data []byte, lap dprand.Laplacer, rng *rand.Rand) (Counter, error) {
	d := &counterDecoder{b: data}
	if d.byte() != counterMagic {
		return nil, errors.New("not a counter encoding")
	}
	if v := d.byte(); v != counterVersion {
		return nil, fmt.Errorf("unsupported encoding version %d", v)
	}
	code := d.byte()
	var base counterBase
	if algs := counterAlgorithms(); code >= 1 && int(code) <= len(algs) {
		base.alg = algs[code-1]
	}
	base.eps = d.float()
	base.horizon = d.int64()
	base.steps = d.int64()
	base.last = d.float()
	if d.err != nil {
		return nil, d.err
	}
	if base.alg == "" {
		return nil, fmt.Errorf("unknown algorithm code %d", code)
	}
	if err := counterValidateEpsilon("epsilon", base.eps); err != nil {
		return nil, err
	}
	if err := counterValidateHorizon("horizon", base.horizon); err != nil {
		return nil, err
	}
	if base.steps < 0 || base.steps > base.horizon {
		return nil, errors.New("steps outside [0, horizon]")
	}
	var (
		c   Counter
		err error
	)
	switch base.alg {
	case CounterSimple:
		c, err = decodeSimpleCounter(base, d, lap)
	case CounterRandomizedResponse:
		c, err = decodeRRCounter(base, d, rng)
	case CounterCascading:
		c, err = decodeCascadingCounter(base, d, lap)
	case CounterTree:
		c, err = decodeTreeCounter(base, d, lap)
	}
	if err == nil {
		err = d.err
	}
	if err == nil && len(d.b) != 0 {
		err = errors.New("trailing bytes")
	}
	if err != nil {
		return nil, fmt.Errorf("%s counter: %w", base.alg, err)
	}
	return c, nil
}

func counterAppendFloat(b []byte, v float64) []byte {
	u := math.Float64bits(v)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
}

func counterAppendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// counterDecoder reads the encoding; the first error sticks and later reads
// return zero values.
type counterDecoder struct {
	b   []byte
	err error
}

var errCounterShort = errors.New("truncated encoding")

func (d *counterDecoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errCounterShort
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *counterDecoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || len(d.b) < n {
		d.err = errCounterShort
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *counterDecoder) float() float64 {
	p := d.bytes(8)
	if p == nil {
		return 0
	}
	u := uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
		uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
	v := math.Float64frombits(u)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.err = errors.New("non-finite number in encoding")
		return 0
	}
	return v
}

func (d *counterDecoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		c := d.byte()
		if d.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	d.err = errors.New("varint overflow")
	return 0
}

// int64 reads a uvarint that must fit in a non-negative int64.
func (d *counterDecoder) int64() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.err = errors.New("integer overflow")
		return 0
	}
	return int64(v)
}
