package panprivate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// CounterCascadingParameters are the parameters of the cascading buffers
// counter (Fig. 2).
type CounterCascadingParameters struct {
	// D is the number of buffer levels d.
	D int `json:"d"`
	// L is the buffer threshold l.
	L float64 `json:"l"`
	// Kappa is the confidence parameter: bounds hold with probability
	// 1 - exp(-kappa).
	Kappa float64 `json:"kappa"`
	// LevelEpsilon is the epsilon' of every Laplace draw, Lap(1/epsilon').
	// Theorem 6.1 gives (2d+1) epsilon' event-level pan-privacy, so
	// epsilon' = epsilon/(2d+1) for a counter with total epsilon.
	LevelEpsilon float64 `json:"level_epsilon"`
	// MaxUpdates is the flush-on-updates limit (l epsilon'/(4 kappa))^2,
	// rounded down, at least 1, at most horizon+1 (never reached).
	MaxUpdates int64 `json:"max_updates"`
}

// counterCascadingDerive returns the cascading counter parameters for total
// epsilon eps and horizon T. Zero d, l or kappa are derived as in
// Corollary 6.1, with lg = max(1, ceil(log2 T)):
//
//	d      = ceil(lg/2)                 (d = O(log T))
//	kappa  = lg^2                       (kappa = log^2 T)
//	eps'   = eps/(2d+1)                 (eps' = O(eps/log T), total exactly eps)
//	l      = 8 kappa/eps' = 8 lg^2 (2d+1)/eps   (l = O(log^3 T/eps))
//
// so that (l eps'/4 kappa)^2 = 4: every level flushes at least every 4
// updates and d = log_4 T levels suffice (Claim 6.1). Given values are kept.
// The inputs must be valid (CounterConfig.Validate).
func counterCascadingDerive(eps float64, horizon int64, d int, l, kappa float64) CounterCascadingParameters {
	lg := max(1, bits.Len64(uint64(horizon-1)))
	if d == 0 {
		d = (lg + 1) / 2
	}
	if kappa == 0 {
		kappa = float64(lg * lg)
	}
	levelEps := eps / float64(2*d+1)
	if l == 0 {
		l = 8 * kappa / levelEps
	}
	x := l * levelEps / (4 * kappa)
	u := math.Floor(x*x*(1+1e-12) + 1e-9)
	u = math.Max(1, math.Min(u, float64(horizon)+1))
	return CounterCascadingParameters{D: d, L: l, Kappa: kappa, LevelEpsilon: levelEps, MaxUpdates: int64(u)}
}

// theoremBound returns an explicit-constant form of Theorem 6.1's error bound
// at step t after n ones, holding with probability about 1 - 2 exp(-kappa):
//
//	(2d+1) l  +  2 sqrt(kappa * 2F) / eps',   F = t/u^d + 2n/u  (u = MaxUpdates)
//
// The first term is the ones held back below the output level (level d's
// buffer is below l and within 2dl of the true count, Claim 6.2); the second
// is the Laplace noise of the at most F updates of ocount (Claim 6.1), two
// Lap(1/eps') draws each, at kappa-dependent confidence.
func (p CounterCascadingParameters) theoremBound(t, n int64) float64 {
	u := float64(p.MaxUpdates)
	F := float64(t)/math.Pow(u, float64(p.D)) + 2*float64(n)/u + 1
	return float64(2*p.D+1)*p.L + 2*math.Sqrt(p.Kappa*2*F)/p.LevelEpsilon
}

// cascadingCounter is the cascading buffers counter of Fig. 2 with the
// pan-private initial noise on every accumulator.
type cascadingCounter struct {
	counterBase
	CounterCascadingParameters
	lap    dprand.Laplacer
	ocount float64
	acc    []float64 // a_i: ones since level i's last flush plus Lap(1/eps')
	buf    []float64 // b_i
	upd    []int64   // u_i
}

func newCascadingCounter(base counterBase, p CounterCascadingParameters, lap dprand.Laplacer) (*cascadingCounter, error) {
	c := &cascadingCounter{counterBase: base, CounterCascadingParameters: p, lap: lap,
		acc: make([]float64, p.D), buf: make([]float64, p.D), upd: make([]int64, p.D)}
	for i := range c.acc {
		z, err := lap.Laplace(1 / p.LevelEpsilon)
		if err != nil {
			return nil, err
		}
		c.acc[i] = z
	}
	return c, nil
}

func (c *cascadingCounter) Step(bit int) (float64, error) {
	if err := c.begin(bit); err != nil {
		return 0, err
	}
	x := float64(bit)
	for i := range c.acc {
		c.acc[i] += x
	}
	scale := 1 / c.LevelEpsilon
	in := x // buffer update for level 1 with input x_t
	for i := 0; i < c.D; i++ {
		z, err := c.lap.Laplace(scale)
		if err != nil {
			return 0, c.fail(err)
		}
		c.buf[i] += in + z
		c.upd[i]++
		if c.buf[i] < c.L && c.upd[i] < c.MaxUpdates {
			break
		}
		// Flush level i: pass a_i up, then reset it with fresh noise.
		in = c.acc[i]
		if i == c.D-1 {
			z, err := c.lap.Laplace(scale)
			if err != nil {
				return 0, c.fail(err)
			}
			c.ocount += in + z
		}
		z, err = c.lap.Laplace(scale)
		if err != nil {
			return 0, c.fail(err)
		}
		c.acc[i], c.buf[i], c.upd[i] = z, 0, 0
	}
	c.steps++
	c.last = c.ocount
	return c.last, nil
}

// StandardError bounds the root mean squared error of the output at step:
// the output lags the count by the ones not yet passed to it, at most
// (2d+1) l (Claim 6.2), and carries two Lap(1/eps') draws per update of
// ocount, of which there are at most F = step/u^d + 2 step/u + 1
// (Claim 6.1 with the count at its largest, step): RMSE <=
// sqrt(((2d+1) l)^2 + 4 F/eps'^2).
func (c *cascadingCounter) StandardError(step int64) (float64, bool) {
	u := float64(c.MaxUpdates)
	t := float64(step)
	F := t/math.Pow(u, float64(c.D)) + 2*t/u + 1
	held := float64(2*c.D+1) * c.L
	return math.Sqrt(held*held + 4*F/(c.LevelEpsilon*c.LevelEpsilon)), true
}

func (c *cascadingCounter) InternalState() CounterInternalState {
	o := c.ocount
	return CounterInternalState{CounterState: c.State(), OCount: &o,
		D: c.D, L: c.L, Kappa: c.Kappa, LevelEpsilon: c.LevelEpsilon, MaxUpdates: c.MaxUpdates,
		Accumulators: append([]float64(nil), c.acc...), Buffers: append([]float64(nil), c.buf...),
		Updates: append([]int64(nil), c.upd...)}
}

func (c *cascadingCounter) MarshalBinary() ([]byte, error) {
	b := c.appendHeader(make([]byte, 0, 64+20*c.D))
	b = binary.AppendUvarint(b, uint64(c.D))
	b = binenc.AppendFloat(b, c.L)
	b = binenc.AppendFloat(b, c.Kappa)
	b = binenc.AppendFloat(b, c.ocount)
	for i := range c.acc {
		b = binenc.AppendFloat(b, c.acc[i])
		b = binenc.AppendFloat(b, c.buf[i])
		b = binary.AppendUvarint(b, uint64(c.upd[i]))
	}
	return b, nil
}

func decodeCascadingCounter(base counterBase, d *binenc.Reader, lap dprand.Laplacer) (Counter, error) {
	cfg := CounterConfig{Algorithm: CounterCascading, Epsilon: base.eps, Horizon: base.horizon}
	D := d.Int64()
	cfg.L = d.FiniteFloat()
	cfg.Kappa = d.FiniteFloat()
	if d.Err() != nil {
		return nil, d.Err()
	}
	if D < 1 || D > counterMaxDepth {
		return nil, fmt.Errorf("invalid depth %d", D)
	}
	cfg.D = int(D)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := counterCascadingDerive(cfg.Epsilon, cfg.Horizon, cfg.D, cfg.L, cfg.Kappa)
	if p.D != cfg.D || p.L != cfg.L || p.Kappa != cfg.Kappa {
		// Stored parameters are the resolved ones: anything else is not an
		// encoding MarshalBinary writes.
		return nil, errors.New("unresolved cascading parameters")
	}
	c := &cascadingCounter{counterBase: base, CounterCascadingParameters: p, lap: lap,
		acc: make([]float64, p.D), buf: make([]float64, p.D), upd: make([]int64, p.D)}
	c.ocount = d.FiniteFloat()
	for i := range c.acc {
		c.acc[i] = d.FiniteFloat()
		c.buf[i] = d.FiniteFloat()
		c.upd[i] = d.Int64()
		if d.Err() == nil && (c.upd[i] >= p.MaxUpdates || c.buf[i] >= p.L) {
			return nil, errors.New("buffer beyond its flush limits")
		}
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	if c.ocount != c.last {
		return nil, errors.New("output inconsistent with ocount")
	}
	return c, nil
}
