package panprivate

import (
	"fmt"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// croppedMeanSpec registers the t-cropped mean: the mean of min(n_x, t)
// over the universe.
func croppedMeanSpec() kindSpec {
	return kindSpec{
		kind: KindCroppedMean, code: 1,
		algorithms: []Algorithm{AlgorithmDwork, AlgorithmOptBern}, defaultAlgorithm: AlgorithmDwork,
		maxEpsilon: 0.5, sizedByAccuracy: true, bitLaw: true,
		params: []Param{{Name: "t", Required: true,
			Doc: fmt.Sprintf("the cropping threshold: the estimate is the mean of min(n_x, t); 2 <= t <= %d", maxCropT)}},
		check: func(c *Config) error {
			if c.T < 2 || c.T > maxCropT {
				return checks.Errorf("t", "must be between 2 and %d for cropped_mean", maxCropT)
			}
			return nil
		},
		build:   func(b *base) (Estimator, error) { return newCroppedMean(b), nil },
		decode:  func(b *base, r *binenc.Reader) (Estimator, error) { return decodeCroppedMean(b, r) },
		example: Config{Estimator: KindCroppedMean, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, T: 4},
	}
}

// croppedMean is the t-cropped mean estimator of Dwork et al., Fig. 2: for
// each user of the sample M a counter mod t, started uniformly at random,
// and a bit from D0. An appearance advances the counter; when it wraps to 0
// the bit is re-drawn from D1. A user appearing n times has been re-drawn
// from D1 with probability exactly min(n, t)/t, so the fraction of ones theta
// has mean P0 + (P1 - P0) E[min(n, t)]/t and the release is
// t (theta - P0)/(P1 - P0) + Lap(t/(eps m)), i.e. 4t/eps (theta - 1/2) + ...
// for the dwork pair. The counters are uniformly distributed whatever the
// stream, so they are perfectly private.
//
// Deletions are not supported: a wrap cannot be undone.
//
// An announced intrusion re-draws the bits as for density and re-draws the
// counters uniformly (a kept counter would reveal the number of appearances
// mod t between two intrusions). Afterwards a user's bit reflects whether its
// counter wrapped in any phase between intrusions, so the release estimates
// the mean of t (1 - prod over phases (1 - min(n_phase, t)/t)), which equals
// the cropped mean for users whose appearances fall between the same two
// intrusions (always, for t = 1 and when no intrusion happened).
type croppedMean struct {
	*base
	counters []uint32
	bits     bitset
}

func newCroppedMean(b *base) *croppedMean {
	m := b.cfg.SampleSize
	c := &croppedMean{base: b, counters: make([]uint32, m), bits: newBitset(uint64(m))}
	for i := range c.counters {
		c.counters[i] = uint32(b.rng.IntN(b.cfg.T))
		c.bits.set(uint64(i), b.law.draw(b.rng, false))
	}
	return c
}

func (c *croppedMean) Privacy() Privacy {
	return c.privacy(c.cfg.Epsilon, c.law.releaseCost(c.cfg.Epsilon))
}

func (c *croppedMean) Apply(events []Event) error {
	ids, err := c.resolve(events, false)
	if err != nil {
		return err
	}
	m, t := uint64(c.cfg.SampleSize), uint32(c.cfg.T)
	for _, u := range ids {
		v := c.perm.forward(u)
		if v >= m {
			continue
		}
		x := c.counters[v] + 1
		if x == t {
			x = 0
			c.bits.set(v, c.law.draw(c.rng, true))
		}
		c.counters[v] = x
	}
	return nil
}

func (c *croppedMean) estimate() float64 {
	theta := float64(c.bits.count()) / float64(c.cfg.SampleSize)
	return float64(c.cfg.T) * c.law.debias(theta)
}

func (c *croppedMean) Release(noise dprand.Laplacer) (Release, error) {
	t, m := float64(c.cfg.T), float64(c.cfg.SampleSize)
	em := errorModel{lo: 0, hi: t, bound: true, variance: func(mu float64) float64 {
		// t^2 pbar(1-pbar)/(m gap^2), pbar = P0 + gap mu/t: the exact
		// variance plus gap^2 sigma^2 t^2 (m-1)/(m (n-1)) >= 0, sigma^2 the
		// universe variance of min(n_x, t)/t (docs/errorbars-streams.md).
		p0, gap := c.law.p(false), c.law.gap()
		pbar := p0 + gap*mu/t
		return t * t * pbar * (1 - pbar) / (m * gap * gap)
	}}
	return c.noisyRelease(noise, c.estimate, t/(c.cfg.Epsilon*m), c.law.releaseCost(c.cfg.Epsilon), em)
}

func (c *croppedMean) state() State {
	s := c.stateHeader()
	s.Users = c.sampleUsers()
	counters := make([]uint64, len(c.counters))
	for i, x := range c.counters {
		counters[i] = uint64(x)
	}
	s.Tables = []TableState{{T: float64(c.cfg.T), Resolution: 1, Counters: counters,
		Bits: c.bits.string(uint64(c.cfg.SampleSize))}}
	return s
}

func (c *croppedMean) Intrude() State {
	s := c.state()
	for i := range c.counters {
		c.counters[i] = uint32(c.rng.IntN(c.cfg.T))
		c.bits.set(uint64(i), c.law.rerandomize(c.rng, c.bits.get(uint64(i))))
	}
	c.law = c.law.shifted()
	c.stats.Intrusions++
	return s
}

func (c *croppedMean) MarshalBinary() ([]byte, error) {
	w := c.encodeBase()
	vals := make([]uint64, len(c.counters))
	for i, x := range c.counters {
		vals[i] = uint64(x)
	}
	w.Packed(vals, binenc.WidthFor(uint64(c.cfg.T)))
	w.Bits(c.bits, uint64(c.cfg.SampleSize))
	return w.Bytes(), nil
}

func decodeCroppedMean(b *base, r *binenc.Reader) (*croppedMean, error) {
	m := uint64(b.cfg.SampleSize)
	vals := r.Packed(m, binenc.WidthFor(uint64(b.cfg.T)), uint64(b.cfg.T))
	bits := bitset(r.Bits(m))
	if r.Err() != nil {
		return nil, fmt.Errorf("cropped mean tables: %w", r.Err())
	}
	c := &croppedMean{base: b, counters: make([]uint32, m), bits: bits}
	for i, v := range vals {
		c.counters[i] = uint32(v)
	}
	return c, nil
}
