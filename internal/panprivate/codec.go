package panprivate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Unmarshal restores an estimator encoded by MarshalBinary; rng supplies its
// future randomness. Every field is validated; a corrupt encoding yields an
// error wrapping ErrCorruptState (or a *ParamError for a bad configuration).
func Unmarshal(data []byte, rng *rand.Rand) (Estimator, error) {
	if rng == nil {
		return nil, errors.New("panprivate: unmarshal estimator: nil random source")
	}
	r := &wireReader{b: data}
	if !bytes.Equal(r.take(uint64(len(wireMagic))), wireMagic) || r.byte1() != wireVersion {
		return nil, fmt.Errorf("%w: bad magic or version", ErrCorruptState)
	}
	b, err := decodeBase(r, rng)
	if err != nil {
		return nil, err
	}
	var e Estimator
	c := b.cfg
	switch {
	case c.Estimator == KindDensity && c.Algorithm == AlgorithmPPDS:
		e, err = decodePPDS(b, r)
	case c.Estimator == KindDensity:
		e, err = decodeSampledDensity(b, r)
	case c.Estimator == KindCroppedMean:
		e, err = decodeCroppedMean(b, r)
	case c.Estimator == KindHeavyHitters:
		e, err = decodeHeavyHitters(b, r)
	default:
		e, err = decodeIncidence(b, r)
	}
	if err == nil && r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, fmt.Errorf("panprivate: unmarshal %s estimator: %w", c.Estimator, err)
	}
	return e, nil
}

// Wire codes.
var (
	kindCodes = []Kind{KindDensity, KindCroppedMean, KindHeavyHitters, KindIncidence}
	algCodes  = []Algorithm{AlgorithmDwork, AlgorithmOptBern, AlgorithmPPDS}
)

func codeOf[T comparable](list []T, v T) byte {
	for i, x := range list {
		if x == v {
			return byte(i)
		}
	}
	panic("panprivate: unknown wire code")
}

// encodeBase writes the magic, version, configuration, key and counts.
func (b *base) encodeBase() *wireWriter {
	w := &wireWriter{b: make([]byte, 0, 128)}
	w.raw(wireMagic)
	w.byte1(wireVersion)
	c := b.cfg
	w.byte1(codeOf(kindCodes, c.Estimator))
	w.byte1(codeOf(algCodes, c.Algorithm))
	w.float(c.Epsilon)
	w.uvarint(c.UniverseSize)
	w.uvarint(uint64(c.SampleSize))
	if c.Accuracy != nil {
		w.byte1(1)
		w.float(c.Accuracy.Alpha)
		w.float(c.Accuracy.Beta)
	} else {
		w.byte1(0)
	}
	w.uvarint(uint64(c.T))
	w.uvarint(uint64(c.K))
	w.uvarint(uint64(c.MaxOccurrences))
	w.float(c.Rho)
	w.uvarint(uint64(c.Moduli))
	w.uvarint(uint64(c.MaxReleases))
	if c.ReleaseNoise == NoiseCalibrated {
		w.byte1(1)
	} else {
		w.byte1(0)
	}
	w.raw(b.key[:])
	w.uvarint(0) // formerly the event count: always 0, ignored on reading
	w.uvarint(uint64(b.stats.Releases))
	w.uvarint(uint64(b.stats.Intrusions))
	return w
}

func decodeBase(r *wireReader, rng *rand.Rand) (*base, error) {
	var c Config
	kc, ac := r.byte1(), r.byte1()
	if r.err == nil && (int(kc) >= len(kindCodes) || int(ac) >= len(algCodes)) {
		r.fail("unknown estimator or algorithm")
	}
	if r.err != nil {
		return nil, r.err
	}
	c.Estimator, c.Algorithm = kindCodes[kc], algCodes[ac]
	c.Epsilon = r.float()
	c.UniverseSize = r.uvarint()
	c.SampleSize = int(r.intn(storedMaxSampleSize))
	switch r.byte1() {
	case 0:
	case 1:
		c.Accuracy = &Accuracy{Alpha: r.float(), Beta: r.float()}
	default:
		r.fail("bad accuracy flag")
	}
	c.T = int(r.intn(MaxCropT))
	c.K = int(r.intn(MaxOccurrences))
	c.MaxOccurrences = int(r.intn(MaxOccurrences))
	c.Rho = r.float()
	c.Moduli = int(r.intn(MaxModuli))
	c.MaxReleases = int(r.intn(math.MaxInt32))
	switch r.byte1() {
	case 0:
		c.ReleaseNoise = NoisePaper
	case 1:
		c.ReleaseNoise = NoiseCalibrated
	default:
		r.fail("bad release noise flag")
	}
	var key [KeySize]byte
	copy(key[:], r.take(KeySize))
	var st Stats
	_ = r.uvarint() // formerly the exact event count: dropped
	st.Releases = int(r.intn(math.MaxInt32))
	st.Intrusions = int(r.intn(math.MaxInt32))
	if r.err != nil {
		return nil, r.err
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
