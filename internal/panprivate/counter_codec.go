package panprivate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// Binary encoding (package binenc). Layout: magic 'P', the format version,
// algorithm code, epsilon (float64 little endian), horizon and steps
// (uvarint), latest output (float64), then the algorithm's fields. The steps
// are the public time of continual observation, not a count of 1s.

const counterMagic = 'P'

// CounterStateFormat is the version of the counters' binary state encoding.
const CounterStateFormat = 1

const counterVersion = CounterStateFormat

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
	b = binenc.AppendFloat(b, c.eps)
	b = binary.AppendUvarint(b, uint64(c.horizon))
	b = binary.AppendUvarint(b, uint64(c.steps))
	return binenc.AppendFloat(b, c.last)
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
	d := binenc.NewReader(data, ErrCorruptState)
	if d.Byte() != counterMagic {
		return nil, errors.New("not a counter encoding")
	}
	if v := d.Byte(); v != counterVersion {
		return nil, fmt.Errorf("unsupported encoding version %d", v)
	}
	code := d.Byte()
	var base counterBase
	if algs := counterAlgorithms(); code >= 1 && int(code) <= len(algs) {
		base.alg = algs[code-1]
	}
	base.eps = d.FiniteFloat()
	base.horizon = d.Int64()
	base.steps = d.Int64()
	base.last = d.FiniteFloat()
	if d.Err() != nil {
		return nil, d.Err()
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
		err = d.Err()
	}
	if err == nil {
		err = d.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("%s counter: %w", base.alg, err)
	}
	return c, nil
}
