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
	// counterMinEpsilon and counterMaxEpsilon bound a counter's epsilon.
	counterMinEpsilon = 1e-6
	counterMaxEpsilon = 100
	// counterMaxHorizon bounds the number of steps a counter accepts
	// (2^40, so that every count is exact in a float64).
	counterMaxHorizon = int64(1) << 40
	// counterMaxDepth bounds the cascading counter's number of levels d.
	counterMaxDepth = 64
)

// counterLevel describes the privacy guarantee every counter gives: Cost
// reports it with the epsilon of the guarantee.
const counterLevel = "event-level pan-private (one unannounced intrusion) under continual observation"

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
	// Cost returns the privacy guarantee: epsilon and its kind (counterLevel).
	Cost() (epsilon float64, level string)
	// StandardError returns the standard error of the output at step
	// (1-based) as an estimate of the number of 1s among the first step
	// bits, whatever they are: a function of the configuration alone, so it
	// costs no privacy. bound is true when it is an upper bound on the root
	// mean squared error rather than the exact standard deviation
	// (cascading, whose output lags the count). docs/errorbars-streams.md.
	StandardError(step int64) (se float64, bound bool)
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
	// means defaultCounterAlgorithm(Epsilon, Horizon).
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
		if c.D < 1 || c.D > counterMaxDepth {
			return &checks.FieldError{Field: "d", Reason: fmt.Sprintf("must be an integer from 1 to %d", counterMaxDepth)}
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
	if !(eps >= counterMinEpsilon && eps <= counterMaxEpsilon) {
		return &checks.FieldError{Field: field, Reason: fmt.Sprintf("must be a number from %g to %g", counterMinEpsilon, float64(counterMaxEpsilon))}
	}
	return nil
}

func counterValidateHorizon(field string, horizon int64) error {
	if horizon < 1 || horizon > counterMaxHorizon {
		return &checks.FieldError{Field: field, Reason: fmt.Sprintf("must be an integer from 1 to %d", counterMaxHorizon)}
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
		alg = defaultCounterAlgorithm(cfg.Epsilon, cfg.Horizon)
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
		c, err = newCascadingCounter(base, counterCascadingDerive(cfg.Epsilon, cfg.Horizon, cfg.D, cfg.L, cfg.Kappa), lap)
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

func (c *counterBase) Cost() (float64, string) { return c.eps, counterLevel }

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
