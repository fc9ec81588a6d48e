package panprivate

// Counters under continual observation (Dwork, "Differential privacy in new
// settings", §6; docs/algorithms.md §7-8). A counter reads one bit per step and after
// every step releases an estimate of the number of 1s seen so far. Every
// counter here is event-level pan-private: its released outputs together with
// its internal state at any single (unannounced) intrusion are epsilon-DP with
// respect to changing one input bit.

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// CounterAlgorithm names a counter construction.
type CounterAlgorithm string

// The counter constructions. The JSON names are part of the API contract.
const (
	// CounterSimple adds x_t + Lap(1/eps) to the output at every step.
	CounterSimple CounterAlgorithm = "simple"
	// CounterRandomizedResponse is the randomized-response variant of the
	// simple counter: every bit is reported through binary randomized
	// response and the running sum of reports is debiased.
	CounterRandomizedResponse CounterAlgorithm = "randomized_response"
	// CounterCascading is the cascading buffers counter of Fig. 2.
	CounterCascading CounterAlgorithm = "cascading"
	// CounterTree is the binary-tree (dyadic partial sums) counter.
	CounterTree CounterAlgorithm = "tree"
)

// Limits on counter parameters.
const (
	// CounterMinEpsilon and CounterMaxEpsilon bound a counter's epsilon.
	CounterMinEpsilon = 1e-6
	CounterMaxEpsilon = 100
	// CounterMaxHorizon bounds the number of steps a counter accepts
	// (2^40, so that every count is exact in a float64).
	CounterMaxHorizon = int64(1) << 40
	// CounterMaxDepth bounds the cascading counter's number of levels d.
	CounterMaxDepth = 64
)

// CounterLevel describes the privacy guarantee every counter gives: Cost
// reports it with the epsilon of the guarantee.
const CounterLevel = "event-level pan-private (one unannounced intrusion) under continual observation"

// ErrCounterHorizon is returned (wrapped) by Step once the counter has taken
// as many steps as its horizon allows.
var ErrCounterHorizon = errors.New("counter horizon reached")

// ErrCounterBit is returned (wrapped) by Step for an input other than 0 or 1.
var ErrCounterBit = errors.New("counter input must be 0 or 1")

// ErrCounterBroken is returned (wrapped) by Step after a noise draw failed in
// the middle of a step: the counter's state may be half-updated and the
// counter refuses further steps. Reload it from its last persisted bytes.
var ErrCounterBroken = errors.New("counter unusable after a failed step")

// Counter is a counter under continual observation. A Counter is not safe for
// concurrent use.
type Counter interface {
	// Step consumes the next input bit (0 or 1) and returns the counter's
	// output after it: a noisy estimate of the number of 1s so far. Steps
	// beyond the horizon fail with ErrCounterHorizon and change nothing.
	Step(bit int) (output float64, err error)
	// Steps is the number of steps taken so far.
	Steps() int64
	// State is the public view of the counter: configuration, steps and the
	// latest released output. It is a function of released outputs only, so
	// it may be shown any number of times.
	State() CounterState
	// InternalState is the counter's full memory, which is what an intruder
	// sees. Pan-privacy covers ONE unannounced view of it: never show it
	// routinely.
	InternalState() CounterInternalState
	// Cost returns the privacy guarantee: epsilon and its kind (CounterLevel).
	Cost() (epsilon float64, level string)
	// MarshalBinary encodes the full counter state (not the noise sources)
	// for persistence; UnmarshalCounter restores it.
	MarshalBinary() ([]byte, error)
}

// CounterState is the JSON-friendly public view of a counter.
type CounterState struct {
	Algorithm CounterAlgorithm `json:"algorithm"`
	Epsilon   float64          `json:"epsilon"`
	Horizon   int64            `json:"horizon"`
	Steps     int64            `json:"steps"`
	// Count is the latest released output (0 before the first step).
	Count float64 `json:"count"`
}

// CounterInternalState is the JSON-friendly view of a counter's memory. Only
// the fields of the counter's algorithm are set.
type CounterInternalState struct {
	CounterState
	// Simple: the running noisy output. Cascading: the output counter ocount.
	OCount *float64 `json:"ocount,omitempty"`
	// Randomized response: the number of reported 1s.
	Reported *int64 `json:"reported,omitempty"`
	// Cascading: parameters (d, l, kappa, per-noise epsilon', the update
	// limit (l eps'/4 kappa)^2) and per-level accumulators a_i, buffers b_i
	// and updates since the last flush u_i.
	D            int       `json:"d,omitempty"`
	L            float64   `json:"l,omitempty"`
	Kappa        float64   `json:"kappa,omitempty"`
	LevelEpsilon float64   `json:"level_epsilon,omitempty"`
	MaxUpdates   int64     `json:"max_updates,omitempty"`
	Accumulators []float64 `json:"accumulators,omitempty"`
	Buffers      []float64 `json:"buffers,omitempty"`
	Updates      []int64   `json:"updates,omitempty"`
	// Tree: number of levels, Laplace scale per noise draw, the noisy sum of
	// completed top-level blocks, the in-progress noisy node sums (null for
	// levels whose current node is never released) and the latest released
	// node per level.
	Levels     int        `json:"levels,omitempty"`
	NoiseScale float64    `json:"noise_scale,omitempty"`
	BlockSum   *float64   `json:"block_sum,omitempty"`
	Partial    []*float64 `json:"partial,omitempty"`
	Released   []float64  `json:"released,omitempty"`
}

// CounterConfig configures a counter. JSON names follow the HTTP API (README.md, openapi/openapi.json)
// (POST /v1/counters). D, L and Kappa apply to the cascading counter only;
// zero means "derive from Epsilon and Horizon" (Corollary 6.1).
type CounterConfig struct {
	// Algorithm is simple, randomized_response, cascading or tree; empty
	// means DefaultCounterAlgorithm(Epsilon, Horizon).
	Algorithm CounterAlgorithm `json:"algorithm,omitempty"`
	// Epsilon is the counter's total event-level pan-privacy guarantee.
	Epsilon float64 `json:"epsilon"`
	// Horizon is the maximum number of steps T.
	Horizon int64 `json:"horizon"`
	// D is the cascading counter's number of buffer levels d.
	D int `json:"d,omitempty"`
	// L is the cascading counter's buffer threshold l.
	L float64 `json:"l,omitempty"`
	// Kappa is the cascading counter's confidence parameter kappa.
	Kappa float64 `json:"kappa,omitempty"`
	// Postprocess optionally publishes, beside the raw outputs, a
	// post-processed count (MonotoneOutputs); it is not part of the
	// mechanism and costs no privacy. The caller keeps it (and the latest
	// post-processed output) with the counter.
	Postprocess CounterPostprocess `json:"postprocess,omitempty"`
}

// Validate checks c and reports the first invalid field as a
// *checks.FieldError. An empty Algorithm is valid.
func (c CounterConfig) Validate() error {
	if err := counterValidateEpsilon("epsilon", c.Epsilon); err != nil {
		return err
	}
	if err := counterValidateHorizon("horizon", c.Horizon); err != nil {
		return err
	}
	if err := c.Postprocess.Validate(); err != nil {
		return err
	}
	switch c.Algorithm {
	case "", CounterSimple, CounterRandomizedResponse, CounterTree, CounterCascading:
	default:
		return &checks.FieldError{Field: "algorithm", Reason: "must be one of simple, randomized_response, cascading, tree"}
	}
	cascading := c.Algorithm == CounterCascading
	if c.D != 0 {
		if !cascading {
			return &checks.FieldError{Field: "d", Reason: "applies to the cascading algorithm only"}
		}
		if c.D < 1 || c.D > CounterMaxDepth {
			return &checks.FieldError{Field: "d", Reason: fmt.Sprintf("must be an integer from 1 to %d", CounterMaxDepth)}
		}
	}
	if c.L != 0 {
		if !cascading {
			return &checks.FieldError{Field: "l", Reason: "applies to the cascading algorithm only"}
		}
		if !(c.L > 0) || c.L > 1e15 {
			return &checks.FieldError{Field: "l", Reason: "must be a finite number greater than 0 (at most 1e15)"}
		}
	}
	if c.Kappa != 0 {
		if !cascading {
			return &checks.FieldError{Field: "kappa", Reason: "applies to the cascading algorithm only"}
		}
		if !(c.Kappa > 0) || c.Kappa > 1e15 {
			return &checks.FieldError{Field: "kappa", Reason: "must be a finite number greater than 0 (at most 1e15)"}
		}
	}
	return nil
}

func counterValidateEpsilon(field string, eps float64) error {
	if !(eps >= CounterMinEpsilon && eps <= CounterMaxEpsilon) {
		return &checks.FieldError{Field: field, Reason: fmt.Sprintf("must be a number from %g to %g", CounterMinEpsilon, float64(CounterMaxEpsilon))}
	}
	return nil
}

func counterValidateHorizon(field string, horizon int64) error {
	if horizon < 1 || horizon > CounterMaxHorizon {
		return &checks.FieldError{Field: field, Reason: fmt.Sprintf("must be an integer from 1 to %d", CounterMaxHorizon)}
	}
	return nil
}

// NewCounter validates cfg and returns a fresh counter. Laplace noise comes
// from lap (production: dprand.SecureLaplace{}) and the randomized-response
// coins from rng (production: dprand.New()). The pan-private initial noise is
// drawn here.
func NewCounter(cfg CounterConfig, lap dprand.Laplacer, rng *rand.Rand) (Counter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lap == nil || rng == nil {
		return nil, errors.New("panprivate: new counter: nil noise source")
	}
	alg := cfg.Algorithm
	if alg == "" {
		alg = DefaultCounterAlgorithm(cfg.Epsilon, cfg.Horizon)
	}
	base := counterBase{alg: alg, eps: cfg.Epsilon, horizon: cfg.Horizon}
	var (
		c   Counter
		err error
	)
	switch alg {
	case CounterSimple:
		c = &simpleCounter{counterBase: base, lap: lap}
	case CounterRandomizedResponse:
		c = newRRCounter(base, rng)
	case CounterTree:
		c, err = newTreeCounter(base, lap)
	case CounterCascading:
		c, err = newCascadingCounter(base, CounterCascadingDerive(cfg.Epsilon, cfg.Horizon, cfg.D, cfg.L, cfg.Kappa), lap)
	}
	if err != nil {
		return nil, fmt.Errorf("panprivate: new %s counter: %w", alg, err)
	}
	return c, nil
}

// CounterSteps feeds bits to c in order and returns one output per bit. It
// checks every bit and the remaining horizon first, so an invalid batch
// changes nothing. (A failing noise source can still stop it midway; the
// counter then reports ErrCounterBroken and must be reloaded.)
func CounterSteps(c Counter, bitsIn []int) ([]float64, error) {
	for _, b := range bitsIn {
		if b != 0 && b != 1 {
			return nil, fmt.Errorf("panprivate: counter steps: %w", ErrCounterBit)
		}
	}
	if st := c.State(); int64(len(bitsIn)) > st.Horizon-st.Steps {
		return nil, fmt.Errorf("panprivate: counter steps: %d bits but %d steps left: %w", len(bitsIn), st.Horizon-st.Steps, ErrCounterHorizon)
	}
	out := make([]float64, len(bitsIn))
	for i, b := range bitsIn {
		v, err := c.Step(b)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// DefaultCounterAlgorithm returns the counter with the lowest predicted error
// for the given epsilon and horizon T, where error is the root mean squared
// error averaged over all steps t = 1..T (CounterPredictedMSE), whatever the
// stream:
//
//   - randomized_response, MSE (T+1)/2 * e^eps/(e^eps-1)^2, wins for short
//     horizons (T < 2^14 for 0.5 <= eps <= 2, T < 2^13 at eps = 0.1, T < 2^17
//     at eps = 5);
//   - tree, MSE 4 (L/eps)^2 * (mean number of released nodes summed per
//     output) = O(log^3 T / eps^2), wins for longer ones.
//
// The simple Laplace counter (MSE (T+1)/eps^2) is never chosen: randomized
// response has the same O(T) error with a smaller constant for every epsilon
// (e^eps/(e^eps-1)^2 < 2/eps^2). The cascading counter is never chosen
// either: its error depends on the stream's density, which is unknown when
// the counter is created. With the parameters of Corollary 6.1 it holds back
// up to about (2d+1) l = Theta(log^4 T / eps) ones, more than any practical
// stream has (at T = 2^16 it outputs nothing at all: RMSE = root mean n_t);
// hand-tuned (d = 1) it beats the tree on sparse streams but loses on dense
// ones, and its bound O((sqrt(n_t) + log^4 T)/eps) never beats the tree's
// O(log^1.5 T / eps).
func DefaultCounterAlgorithm(epsilon float64, horizon int64) CounterAlgorithm {
	rr := CounterPredictedMSE(CounterRandomizedResponse, epsilon, horizon)
	tree := CounterPredictedMSE(CounterTree, epsilon, horizon)
	if tree < rr {
		return CounterTree
	}
	return CounterRandomizedResponse
}

// CounterPredictedMSE returns the mean squared error of the counter's output,
// averaged over steps t = 1..horizon, for the algorithms whose error does not
// depend on the input: simple, randomized_response and tree. It returns NaN
// for cascading (whose error depends on the stream) and for invalid inputs.
func CounterPredictedMSE(alg CounterAlgorithm, epsilon float64, horizon int64) float64 {
	if counterValidateEpsilon("epsilon", epsilon) != nil || counterValidateHorizon("horizon", horizon) != nil {
		return math.NaN()
	}
	T := float64(horizon)
	switch alg {
	case CounterSimple:
		// Var at step t is 2t/eps^2; the mean over t = 1..T is (T+1)/eps^2.
		return (T + 1) / (epsilon * epsilon)
	case CounterRandomizedResponse:
		return (T + 1) / 2 * rrStepVariance(epsilon)
	case CounterTree:
		L := counterTreeLevels(horizon)
		b := float64(L) / epsilon
		return 4 * b * b * counterTreeMeanNodes(horizon, L)
	}
	return math.NaN()
}

// counterTreeLevels returns the number of tree levels L in [1, bits.Len(T)]
// minimising the predicted mean squared error L^2 * mean_t nodes(t, L).
func counterTreeLevels(horizon int64) int {
	best, bestL := math.Inf(1), 1
	for L := 1; L <= bits.Len64(uint64(horizon)); L++ {
		if v := float64(L*L) * counterTreeMeanNodes(horizon, L); v < best {
			best, bestL = v, L
		}
	}
	return bestL
}

// counterTreeMeanNodes returns the mean over t = 1..T of the number of
// released nodes whose sum is the output at step t, for a tree with L levels:
// floor(t/B) whole blocks of B = 2^(L-1) steps plus popcount(t mod B).
func counterTreeMeanNodes(horizon int64, L int) float64 {
	B := uint64(1) << (L - 1)
	n := uint64(horizon) + 1 // t = 0..T; t = 0 contributes nothing
	full, rem := n/B, n%B
	blocks := float64(B)*float64(full)*float64(full-1)/2 + float64(full)*float64(rem)
	pop := float64(full)*float64(counterPopcountSum(B)) + float64(counterPopcountSum(rem))
	return (blocks + pop) / float64(horizon)
}

// counterPopcountSum returns sum_{x=0}^{n-1} popcount(x).
func counterPopcountSum(n uint64) uint64 {
	var s uint64
	for k := 0; k < 64 && uint64(1)<<k < n; k++ {
		period := uint64(1) << (k + 1)
		half := uint64(1) << k
		s += n / period * half
		if r := n % period; r > half {
			s += r - half
		}
	}
	return s
}

// counterBase holds what every counter has.
type counterBase struct {
	alg     CounterAlgorithm
	eps     float64
	horizon int64
	steps   int64
	last    float64 // latest output
	broken  bool
}

func (c *counterBase) Steps() int64 { return c.steps }

func (c *counterBase) Cost() (float64, string) { return c.eps, CounterLevel }

func (c *counterBase) State() CounterState {
	return CounterState{Algorithm: c.alg, Epsilon: c.eps, Horizon: c.horizon, Steps: c.steps, Count: c.last}
}

// begin validates a step before any state changes.
func (c *counterBase) begin(bit int) error {
	if c.broken {
		return fmt.Errorf("panprivate: %s counter step: %w", c.alg, ErrCounterBroken)
	}
	if bit != 0 && bit != 1 {
		return fmt.Errorf("panprivate: %s counter step: %w", c.alg, ErrCounterBit)
	}
	if c.steps >= c.horizon {
		return fmt.Errorf("panprivate: %s counter step %d: %w", c.alg, c.steps+1, ErrCounterHorizon)
	}
	return nil
}

// fail marks the counter broken after a mid-step noise failure.
func (c *counterBase) fail(err error) error {
	c.broken = true
	return fmt.Errorf("panprivate: %s counter step %d: %w (%w)", c.alg, c.steps+1, err, ErrCounterBroken)
}

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
