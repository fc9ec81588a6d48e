package panprivate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pwsd/pwsd/internal/binenc"
)

// Unmarshal restores an estimator encoded by MarshalBinary; rng supplies its
// future randomness. Every field is validated; a corrupt encoding yields an
// error wrapping ErrCorruptState (or a *checks.FieldError for a bad configuration).
func Unmarshal(data []byte, rng *rand.Rand) (Estimator, error) {
	if rng == nil {
		return nil, errors.New("panprivate: unmarshal estimator: nil random source")
	}
	r := binenc.NewReader(data, ErrCorruptState)
	version := r.Header(stateMagic)
	if r.Err() != nil || (version != StateFormat && version != legacyStateFormat) {
		return nil, fmt.Errorf("%w: bad magic or version", ErrCorruptState)
	}
	b, err := decodeBase(r, version, rng)
	if err != nil {
		return nil, err
	}
	c := b.cfg
	e, err := b.spec.decode(b, r)
	if err == nil {
		err = r.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("panprivate: unmarshal %s estimator: %w", c.Estimator, err)
	}
	return e, nil
}

// The binary state encoding (package binenc): the magic "PPS", the format
// version, the resolved configuration, the key and the public counts, then
// each estimator's tables, bit-packed (bits at one bit each, counters at the
// width of their range). Integers are uvarints, floats little-endian IEEE 754.
const stateMagic = "PPS"

// StateFormat is the version of the estimators' binary state encoding that
// MarshalBinary writes. Version 1 (legacyStateFormat) carried a slot where
// the exact event count once was; Unmarshal still reads it (ignoring the
// slot) so that rows stored by the previous release load until the store's
// rewrite has re-encoded them.
const (
	StateFormat       = 2
	legacyStateFormat = 1
)

// ErrCorruptState reports a state encoding that cannot be decoded.
var ErrCorruptState = errors.New("panprivate: corrupt state encoding")

// algCodes are the algorithms' wire codes (their indices); the kinds' are
// in their kindSpec.
var algCodes = []Algorithm{AlgorithmDwork, AlgorithmOptBern, AlgorithmPPDS}

// codeOf returns v's wire code, its index in list; every value a Config
// can hold is listed (NewConfig validates them).
func codeOf[T comparable](list []T, v T) byte {
	i := slices.Index(list, v)
	if i < 0 {
		panic("panprivate: unknown wire code")
	}
	return byte(i)
}

// encodeBase writes the magic, version, configuration, key and counts.
func (b *base) encodeBase() *binenc.Writer {
	w := binenc.NewWriter(make([]byte, 0, 128))
	w.Header(stateMagic, StateFormat)
	c := b.cfg
	w.Byte(b.spec.code)
	w.Byte(codeOf(algCodes, c.Algorithm))
	w.Float(c.Epsilon)
	w.Uvarint(c.UniverseSize)
	w.Uvarint(uint64(c.SampleSize))
	if c.Accuracy != nil {
		w.Byte(1)
		w.Float(c.Accuracy.Alpha)
		w.Float(c.Accuracy.Beta)
	} else {
		w.Byte(0)
	}
	w.Uvarint(uint64(c.T))
	w.Uvarint(uint64(c.K))
	w.Uvarint(uint64(c.MaxOccurrences))
	w.Float(c.Rho)
	w.Uvarint(uint64(c.Moduli))
	w.Uvarint(uint64(c.MaxReleases))
	if c.ReleaseNoise == NoiseCalibrated {
		w.Byte(1)
	} else {
		w.Byte(0)
	}
	w.Raw(b.key[:])
	w.Uvarint(uint64(b.stats.Releases))
	w.Uvarint(uint64(b.stats.Intrusions))
	return w
}

func decodeBase(r *binenc.Reader, version byte, rng *rand.Rand) (*base, error) {
	var c Config
	kc, ac := r.Byte(), r.Byte()
	spec, known := registry.byCode[kc]
	if r.Err() == nil && (!known || int(ac) >= len(algCodes)) {
		r.Fail("unknown estimator or algorithm")
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	c.Estimator, c.Algorithm = spec.kind, algCodes[ac]
	c.Epsilon = r.Float()
	c.UniverseSize = r.Uvarint()
	c.SampleSize = int(r.Intn(storedMaxSampleSize))
	switch r.Byte() {
	case 0:
	case 1:
		c.Accuracy = &Accuracy{Alpha: r.Float(), Beta: r.Float()}
	default:
		r.Fail("bad accuracy flag")
	}
	c.T = int(r.Intn(maxCropT))
	c.K = int(r.Intn(maxOccurrences))
	c.MaxOccurrences = int(r.Intn(maxOccurrences))
	c.Rho = r.Float()
	c.Moduli = int(r.Intn(maxModuli))
	c.MaxReleases = int(r.Intn(math.MaxInt32))
	switch r.Byte() {
	case 0:
		c.ReleaseNoise = NoisePaper
	case 1:
		c.ReleaseNoise = NoiseCalibrated
	default:
		r.Fail("bad release noise flag")
	}
	var key [KeySize]byte
	copy(key[:], r.Take(KeySize))
	var st Stats
	if version == legacyStateFormat {
		_ = r.Uvarint() // the legacy event-count slot: read and dropped
	}
	st.Releases = int(r.Intn(math.MaxInt32))
	st.Intrusions = int(r.Intn(math.MaxInt32))
	if r.Err() != nil {
		return nil, r.Err()
	}
	if c.SampleSize == 0 {
		return nil, fmt.Errorf("%w: zero sample size", ErrCorruptState)
	}
	vc, err := c.validate(true)
	if err != nil {
		return nil, fmt.Errorf("panprivate: unmarshal: %w", err)
	}
	if vc.Rho != c.Rho || vc.Moduli != c.Moduli || vc.SampleSize != c.SampleSize {
		return nil, fmt.Errorf("%w: unresolved configuration", ErrCorruptState)
	}
	b, err := newBase(vc, key, rng)
	if err != nil {
		return nil, err
	}
	b.stats = st
	b.law = b.law.withIntrusions(st.Intrusions)
	return b, nil
}
