package panprivate

import (
	"fmt"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// densitySpec registers the density estimator: the fraction of the universe
// that appears. Its algorithms choose the state distributions (dwork,
// optbern: sampledDensity) or the sampling scheme (ppds: ppds.go).
func densitySpec() kindSpec {
	return kindSpec{
		kind: KindDensity, code: 0,
		algorithms: []Algorithm{AlgorithmDwork, AlgorithmOptBern, AlgorithmPPDS}, defaultAlgorithm: AlgorithmOptBern,
		maxEpsilon: MaxDensityEpsilon, sizedByAccuracy: true, bitLaw: true,
		build: func(b *base) (Estimator, error) {
			if b.cfg.Algorithm == AlgorithmPPDS {
				return newPPDS(b), nil
			}
			return newSampledDensity(b), nil
		},
		decode: func(b *base, r *binenc.Reader) (Estimator, error) {
			if b.cfg.Algorithm == AlgorithmPPDS {
				return decodePPDS(b, r)
			}
			return decodeSampledDensity(b, r)
		},
		example: Config{Estimator: KindDensity, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100},
	}
}

// sampledDensity is the density estimator of Dwork et al., Fig. 1
// (algorithm dwork) and Digalakis et al., Alg. 2 (optbern): a bit per user of
// the sample M, drawn from D0 at the start, re-drawn from D1 at every
// appearance and from D0 at every deletion. The release is
// (theta - P0) / (P1 - P0) + Lap(1/(eps m)), theta the fraction of ones, which
// for the original pairs is 4/eps (theta - 1/2) and
// (theta - 1/2 + tanh(eps/2)/2) / tanh(eps/2).
type sampledDensity struct {
	*base
	bits bitset // bit i belongs to user perm^-1(i)
}

func newSampledDensity(b *base) *sampledDensity {
	m := uint64(b.cfg.SampleSize)
	d := &sampledDensity{base: b, bits: newBitset(m)}
	for i := uint64(0); i < m; i++ {
		d.bits.set(i, b.law.draw(b.rng, false))
	}
	return d
}

func (d *sampledDensity) Privacy() Privacy {
	return d.privacy(d.cfg.Epsilon, d.law.releaseCost(d.cfg.Epsilon))
}

func (d *sampledDensity) Apply(events []Event) error {
	ids, err := d.resolve(events, true)
	if err != nil {
		return err
	}
	m := uint64(d.cfg.SampleSize)
	for i, u := range ids {
		if v := d.perm.forward(u); v < m {
			d.bits.set(v, d.law.draw(d.rng, !events[i].Delete))
		}
	}
	return nil
}

// estimate returns the noiseless estimate: the debiased fraction of ones.
func (d *sampledDensity) estimate() float64 {
	theta := float64(d.bits.count()) / float64(d.cfg.SampleSize)
	return d.law.debias(theta)
}

func (d *sampledDensity) Release(noise dprand.Laplacer) (Release, error) {
	m, n := uint64(d.cfg.SampleSize), d.cfg.UniverseSize
	em := errorModel{lo: 0, hi: 1, variance: func(x float64) float64 { return d.densityVariance(x, m, n) }}
	return d.noisyRelease(noise, d.estimate, 1/(d.cfg.Epsilon*float64(m)), d.law.releaseCost(d.cfg.Epsilon), em)
}

func (d *sampledDensity) state() State {
	s := d.stateHeader()
	s.Users = d.sampleUsers()
	s.Bits = d.bits.string(uint64(d.cfg.SampleSize))
	return s
}

func (d *sampledDensity) Intrude() State {
	s := d.state()
	m := uint64(d.cfg.SampleSize)
	for i := uint64(0); i < m; i++ {
		d.bits.set(i, d.law.rerandomize(d.rng, d.bits.get(i)))
	}
	d.law = d.law.shifted()
	d.stats.Intrusions++
	return s
}

func (d *sampledDensity) MarshalBinary() ([]byte, error) {
	w := d.encodeBase()
	w.Bits(d.bits, uint64(d.cfg.SampleSize))
	return w.Bytes(), nil
}

func decodeSampledDensity(b *base, r *binenc.Reader) (*sampledDensity, error) {
	d := &sampledDensity{base: b, bits: bitset(r.Bits(uint64(b.cfg.SampleSize)))}
	if r.Err() != nil {
		return nil, fmt.Errorf("density bits: %w", r.Err())
	}
	return d, nil
}
