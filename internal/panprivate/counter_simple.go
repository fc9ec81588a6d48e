package panprivate

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// simpleCounter is the simple solution of §6: at step t the output grows by
// x_t + Lap(1/eps). Its only memory is the released output, so event-level
// pan-privacy is immediate; output error at step t has variance 2t/eps^2.
type simpleCounter struct {
	counterBase
	lap dprand.Laplacer
}

func (c *simpleCounter) Step(bit int) (float64, error) {
	if err := c.begin(bit); err != nil {
		return 0, err
	}
	z, err := c.lap.Laplace(1 / c.eps)
	if err != nil {
		return 0, c.fail(err)
	}
	c.last += float64(bit) + z
	c.steps++
	return c.last, nil
}

// StandardError is sqrt(2 step)/eps: step independent Lap(1/eps) draws.
func (c *simpleCounter) StandardError(step int64) (float64, bool) {
	return math.Sqrt(2*float64(step)) / c.eps, false
}

func (c *simpleCounter) InternalState() CounterInternalState {
	o := c.last
	return CounterInternalState{CounterState: c.State(), OCount: &o}
}

func (c *simpleCounter) MarshalBinary() ([]byte, error) {
	return c.appendHeader(make([]byte, 0, 32)), nil
}

func decodeSimpleCounter(base counterBase, _ *binenc.Reader, lap dprand.Laplacer) (Counter, error) {
	return &simpleCounter{counterBase: base, lap: lap}, nil
}

// rrCounter is the randomized-response variant of the simple counter. Each
// bit x_t is reported as y_t = x_t with probability p = e^eps/(1+e^eps) and
// flipped otherwise (the paper's "draw from D0 or D1", with the tight pair
// D0 = Bern(1-p), D1 = Bern(p), which is exactly eps-DP per event for every
// eps). The output is the unbiased estimate (S_t - t(1-p))/(2p-1) of the
// count, S_t = sum of reports; its variance at step t is
// t e^eps/(e^eps-1)^2. Memory: S_t, a function of the outputs.
type rrCounter struct {
	counterBase
	rng      *rand.Rand
	reported int64
	flip     float64 // 1-p
}

func newRRCounter(base counterBase, rng *rand.Rand) *rrCounter {
	return &rrCounter{counterBase: base, rng: rng, flip: 1 / (1 + math.Exp(base.eps))}
}

// rrStepVariance is the variance e^eps/(e^eps-1)^2 that one randomized
// response step adds to the output.
func rrStepVariance(eps float64) float64 {
	em1 := math.Expm1(eps)
	return (em1 + 1) / (em1 * em1)
}

func (c *rrCounter) estimate() float64 {
	if c.steps == 0 {
		return 0
	}
	return (float64(c.reported) - float64(c.steps)*c.flip) / (1 - 2*c.flip)
}

func (c *rrCounter) Step(bit int) (float64, error) {
	if err := c.begin(bit); err != nil {
		return 0, err
	}
	y := bit
	if c.rng.Float64() < c.flip {
		y = 1 - bit
	}
	c.reported += int64(y)
	c.steps++
	c.last = c.estimate()
	return c.last, nil
}

// StandardError is sqrt(step e^eps/(e^eps-1)^2): every report has variance
// p(1-p) whatever the bit, scaled by 1/(2p-1)^2.
func (c *rrCounter) StandardError(step int64) (float64, bool) {
	return math.Sqrt(float64(step) * rrStepVariance(c.eps)), false
}

func (c *rrCounter) InternalState() CounterInternalState {
	r := c.reported
	return CounterInternalState{CounterState: c.State(), Reported: &r}
}

func (c *rrCounter) MarshalBinary() ([]byte, error) {
	b := c.appendHeader(make([]byte, 0, 40))
	return binary.AppendUvarint(b, uint64(c.reported)), nil
}

func decodeRRCounter(base counterBase, d *binenc.Reader, rng *rand.Rand) (Counter, error) {
	c := newRRCounter(base, rng)
	c.reported = d.Int64()
	if d.Err() != nil {
		return nil, d.Err()
	}
	if c.reported > c.steps {
		return nil, errors.New("more reports than steps")
	}
	if c.estimate() != c.last {
		return nil, errors.New("output inconsistent with reports")
	}
	return c, nil
}
