package panprivate

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// continualMaxEpsilon is the largest epsilon of the continual density
// estimator: D+ puts probability 1/2 + eps + eps^2/2 on 1, which must not
// exceed 1, so eps <= sqrt(2) - 1.
const continualMaxEpsilon = math.Sqrt2 - 1

// defaultContinualHorizon is the horizon (number of events, blanks included)
// of a continual density estimator whose configuration gives none.
const defaultContinualHorizon = int64(1) << 32

// continualLevel describes the continual density estimator's guarantee.
const continualLevel = "user-level pan-private under continual observation, O(epsilon) (Theorem 7.1)"

// ContinualDensityConfig configures the continual-observation density
// estimator (Fig. 3). JSON names follow the HTTP API (README.md, openapi/openapi.json) (POST /v1/streams with
// "continual": true).
type ContinualDensityConfig struct {
	// Epsilon is the table's and the counter's epsilon, 0 < eps <= sqrt2-1.
	Epsilon float64 `json:"epsilon"`
	// UniverseSize is |X|; integer user ids lie in [0, UniverseSize).
	UniverseSize uint64 `json:"universe_size"`
	// SampleSize is m, the number of sampled users, 1 <= m <= UniverseSize.
	SampleSize int `json:"sample_size"`
	// Horizon is the number of events (and blank steps) the estimator
	// accepts; 0 means defaultContinualHorizon.
	Horizon int64 `json:"horizon,omitempty"`
	// Counter is the counter algorithm; empty means
	// defaultCounterAlgorithm(Epsilon, Horizon).
	Counter CounterAlgorithm `json:"counter,omitempty"`
}

// Validate checks c and returns it with defaults filled in, or the first
// invalid field as a *checks.FieldError.
func (c ContinualDensityConfig) Validate() (ContinualDensityConfig, error) {
	if !(c.Epsilon > 0) || c.Epsilon > continualMaxEpsilon {
		return c, &checks.FieldError{Field: "epsilon", Reason: "must be greater than 0 and at most sqrt(2)-1 (so that D+ is a distribution)"}
	}
	if c.Epsilon < counterMinEpsilon {
		return c, &checks.FieldError{Field: "epsilon", Reason: fmt.Sprintf("must be at least %g", counterMinEpsilon)}
	}
	if c.UniverseSize < 1 || c.UniverseSize > maxUniverseSize {
		return c, &checks.FieldError{Field: "universe_size", Reason: "must be between 1 and 2^53"}
	}
	if c.SampleSize < 1 || c.SampleSize > maxSampleSize || uint64(c.SampleSize) > c.UniverseSize {
		return c, &checks.FieldError{Field: "sample_size", Reason: fmt.Sprintf("must be between 1 and min(universe_size, %d)", maxSampleSize)}
	}
	if c.Horizon == 0 {
		c.Horizon = defaultContinualHorizon
	}
	if err := counterValidateHorizon("horizon", c.Horizon); err != nil {
		return c, err
	}
	if c.Counter == "" {
		c.Counter = defaultCounterAlgorithm(c.Epsilon, c.Horizon)
	}
	if err := (CounterConfig{Algorithm: c.Counter, Epsilon: c.Epsilon, Horizon: c.Horizon}).Validate(); err != nil {
		var pe *checks.FieldError
		if errors.As(err, &pe) && pe.Field == "algorithm" {
			return c, &checks.FieldError{Field: "counter", Reason: pe.Reason}
		}
		return c, err
	}
	return c, nil
}

// continualProb is a probability as a numerator over 2^53 (exact draws).
type continualProb uint64

func continualP(p float64) continualProb { return continualProb(math.Round(p * probUnit)) }

func (p continualProb) draw(rng *rand.Rand) int {
	if rng.Uint64()>>11 < uint64(p) {
		return 1
	}
	return 0
}

// ContinualDensity is the continual-observation density estimator of
// Fig. 3 (Dwork, "Differential privacy in new settings", §7). It keeps a
// table of one bit per sampled user (D0 = Bern(1/2) initially, re-drawn from
// D1 = Bern(1/2 + eps/4) on every appearance) and feeds an eps-event-level
// pan-private counter one bit y_t per step:
//
//   - blank step or user not sampled: y ~ D0;
//   - sampled user with table bit 0: y ~ D+ = Bern(1/2 + eps + eps^2/2);
//   - sampled user with table bit 1: y ~ D- = Bern(1/2 - eps + eps^2/2).
//
// By Claim 7.1, y is a fair coin except at a user's first appearance, where
// P(y=1) = 1/2 + eps^2/2. So E[ocount_t] = t/2 + (eps^2/2) m_t, with m_t the
// number of sampled users seen so far, and the estimator outputs the density
//
//	(ocount_t - t/2) / (m eps^2/2),
//
// the fraction of the universe that has appeared: the paper's
// (ocount - t/2)/(eps^2/2) estimates m_t, divided here by the sample size m
// to match the single-output density estimator (Fig. 1). Its standard error
// is about sqrt(t/4 + Var(counter))/(m eps^2/2) (Theorem 7.1: O(sqrt(t)/eps^2)
// in count units).
//
// Deletions (turnstile streams with 0/1 state, as for the single-output
// estimator): a delete of a sampled user draws y from Bern(1/2 + eps) if its
// bit is 0 and Bern(1/2 - eps) if it is 1, then re-draws the bit from D0.
// For a present user (bit ~ D1) this gives P(y=1) = 1/2 - eps^2/2, for an
// absent one (bit ~ D0) a fair coin, so m_t counts the users present now.
//
// A ContinualDensity is not safe for concurrent use.
type ContinualDensity struct {
	cfg     ContinualDensityConfig
	key     [KeySize]byte
	perm    permutation
	names   *userMapper
	table   bitset
	counter Counter
	rng     *rand.Rand
	last    float64
	broken  bool
	input   int // the latest counter input y (tests check Claim 7.1 with it)

	pD1, pPlus, pMinus, pDelPlus, pDelMinus continualProb
}

// NewContinualDensity validates cfg and returns a fresh estimator: a random
// key (which picks the sample M and keys the string-id hash), the table drawn
// from D0, and a new counter. rng supplies every coin (production:
// dprand.New()); lap the counter's Laplace noise (production:
// dprand.SecureLaplace{}).
func NewContinualDensity(cfg ContinualDensityConfig, lap dprand.Laplacer, rng *rand.Rand) (*ContinualDensity, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if lap == nil || rng == nil {
		return nil, errors.New("panprivate: new continual density: nil noise source")
	}
	ctr, err := NewCounter(CounterConfig{Algorithm: cfg.Counter, Epsilon: cfg.Epsilon, Horizon: cfg.Horizon}, lap, rng)
	if err != nil {
		return nil, fmt.Errorf("panprivate: new continual density: %w", err)
	}
	e := newContinualDensity(cfg, newKey(rng), ctr, rng)
	half := continualP(0.5)
	for i := 0; i < cfg.SampleSize; i++ {
		e.table.set(uint64(i), half.draw(rng) == 1)
	}
	return e, nil
}

func newContinualDensity(cfg ContinualDensityConfig, key [KeySize]byte, ctr Counter, rng *rand.Rand) *ContinualDensity {
	eps := cfg.Epsilon
	e := &ContinualDensity{cfg: cfg, key: key, table: newBitset(uint64(cfg.SampleSize)), counter: ctr, rng: rng,
		pD1: continualP(0.5 + eps/4), pPlus: continualP(0.5 + eps + eps*eps/2), pMinus: continualP(0.5 - eps + eps*eps/2),
		pDelPlus: continualP(0.5 + eps), pDelMinus: continualP(0.5 - eps)}
	e.perm = newPermutation(cfg.UniverseSize, &e.key)
	e.names = newUserMapper(cfg.UniverseSize, &e.key)
	return e
}

// Config returns the resolved configuration.
func (e *ContinualDensity) Config() ContinualDensityConfig { return e.cfg }

// steps is the number of events (and blank steps) applied.
func (e *ContinualDensity) steps() int64 { return e.counter.Steps() }

// Output is the latest density estimate (0 before the first step).
func (e *ContinualDensity) Output() float64 { return e.last }

// cost returns epsilon and the kind of guarantee (continualLevel).
func (e *ContinualDensity) cost() (float64, string) { return e.cfg.Epsilon, continualLevel }

// Apply processes one event of user id user, which must lie in
// [0, UniverseSize): an appearance, or a deletion if del. It returns the
// density estimate after the event.
func (e *ContinualDensity) Apply(user uint64, del bool) (float64, error) {
	if user >= e.cfg.UniverseSize {
		return 0, &checks.FieldError{Field: "user", Reason: "must be less than universe_size"}
	}
	return e.step(true, user, del)
}

// applyName processes one event of a string user id, mapped into
// [0, UniverseSize) by HMAC-SHA256 under the state's key (the same name
// always maps to the same id, also after MarshalBinary and restore).
func (e *ContinualDensity) applyName(name string, del bool) (float64, error) {
	if len(name) == 0 || len(name) > maxUserNameLen {
		return 0, &checks.FieldError{Field: "user", Reason: fmt.Sprintf("must be a non-empty string of at most %d bytes", maxUserNameLen)}
	}
	return e.step(true, e.names.id(name), del)
}

// ApplyEvent processes one stream event: its integer id or its string name,
// an appearance or a deletion.
func (e *ContinualDensity) ApplyEvent(ev Event) (float64, error) {
	id, name, named := ev.User.parts()
	if named {
		return e.applyName(name, ev.Delete)
	}
	return e.Apply(id, ev.Delete)
}

// blank processes a "nothing happened" step (the paper's blank symbol).
func (e *ContinualDensity) blank() (float64, error) { return e.step(false, 0, false) }

func (e *ContinualDensity) step(isUser bool, user uint64, del bool) (float64, error) {
	if e.broken {
		return 0, fmt.Errorf("panprivate: continual density step: %w", ErrCounterBroken)
	}
	if e.counter.Steps() >= e.cfg.Horizon {
		return 0, fmt.Errorf("panprivate: continual density step %d: %w", e.counter.Steps()+1, ErrCounterHorizon)
	}
	var (
		idx     uint64
		sampled bool
	)
	if isUser {
		idx = e.perm.forward(user)
		sampled = idx < uint64(e.cfg.SampleSize)
	}
	var y int
	switch {
	case !sampled:
		y = continualP(0.5).draw(e.rng)
	case !del && !e.table.get(idx):
		y = e.pPlus.draw(e.rng)
	case !del:
		y = e.pMinus.draw(e.rng)
	case !e.table.get(idx):
		y = e.pDelPlus.draw(e.rng)
	default:
		y = e.pDelMinus.draw(e.rng)
	}
	ocount, err := e.counter.Step(y)
	if err != nil {
		e.broken = true
		return 0, fmt.Errorf("panprivate: continual density step: %w", err)
	}
	if sampled {
		if del {
			e.table.set(idx, continualP(0.5).draw(e.rng) == 1)
		} else {
			e.table.set(idx, e.pD1.draw(e.rng) == 1)
		}
	}
	e.input = y
	e.last = e.estimate(ocount, e.counter.Steps())
	return e.last, nil
}

// estimate is the density (ocount - t/2)/(m eps^2/2).
func (e *ContinualDensity) estimate(ocount float64, t int64) float64 {
	if t == 0 {
		return 0
	}
	eps := e.cfg.Epsilon
	return (ocount - float64(t)/2) / (float64(e.cfg.SampleSize) * eps * eps / 2)
}

// StandardError returns the standard error of the latest output as an
// estimate of the universe density d (docs/errorbars-streams.md,
// §continual), computed from the configuration, the step count and the
// clamped output only:
//
//	[t/4 - m d eps^4/4 + Var(counter at t)] / (m eps^2/2)^2 + d(1-d)(n-m)/(m(n-1)),
//
// d the clamped output: the counter inputs y_s are independent, fair coins
// except at the m_t first appearances of sampled users (variance
// 1/4 - eps^4/4), the counter adds its own noise, and the sample's density
// m_t/m varies around d (hypergeometric). Deletions add steps of variance
// 1/4 - eps^4/4, so the first term is then an upper bound. bound is the
// counter's (cascading: a bound on the root mean squared error).
func (e *ContinualDensity) StandardError() (se float64, bound bool) {
	t := e.counter.Steps()
	if t == 0 {
		return 0, false
	}
	eps, m, n := e.cfg.Epsilon, float64(e.cfg.SampleSize), e.cfg.UniverseSize
	d := clamp(e.last, 0, 1)
	cse, bound := e.counter.StandardError(t)
	bitsVar := float64(t)/4 - m*d*eps*eps*eps*eps/4
	scale := m * eps * eps / 2
	v := (math.Max(bitsVar, 0)+cse*cse)/(scale*scale) + samplingVariance(d, uint64(e.cfg.SampleSize), n)
	return math.Sqrt(v), bound
}

// Latest returns the latest output as a Release: its standard error
// (StandardError) and the density's range [0, 1]. It spends nothing: the
// output is already public.
func (e *ContinualDensity) Latest() Release {
	se, bound := e.StandardError()
	return Release{Estimate: e.last, StandardError: se, Bound: bound, Min: 0, Max: 1}
}

// ContinualDensityState is the public, JSON-friendly view of a continual
// density estimator: a function of released outputs only.
type ContinualDensityState struct {
	ContinualDensityConfig
	Steps  int64   `json:"steps"`
	Output float64 `json:"output"`
}

// ContinualDensityInternalState is the estimator's full memory: what an
// intruder sees. Pan-privacy covers ONE unannounced view: never show it
// routinely.
type ContinualDensityInternalState struct {
	ContinualDensityState
	// Key is the hex state key (sample permutation and string-id hash).
	Key string `json:"key"`
	// Table is the table bits, '0'/'1', entry i belonging to the sampled
	// user perm^-1(i).
	Table   string               `json:"table"`
	Counter CounterInternalState `json:"counter_state"`
}

// State returns the public view.
func (e *ContinualDensity) State() ContinualDensityState {
	return ContinualDensityState{ContinualDensityConfig: e.cfg, Steps: e.counter.Steps(), Output: e.last}
}

// internalState returns the full memory (see ContinualDensityInternalState).
func (e *ContinualDensity) internalState() ContinualDensityInternalState {
	return ContinualDensityInternalState{ContinualDensityState: e.State(), Key: hex.EncodeToString(e.key[:]),
		Table: e.table.string(uint64(e.cfg.SampleSize)), Counter: e.counter.InternalState()}
}

// Encoding: magic 'C', version, epsilon, universe, m, horizon (uvarint), key,
// table (ceil(m/8) bytes, little-endian bit order), then the counter's bytes
// (length-prefixed). The output is recomputed from the counter.

const continualMagic = "C"

// continualStateFormat is the version of the continual density's binary
// state encoding.
const continualStateFormat = 1

// MarshalBinary encodes the full estimator state (not the noise sources).
func (e *ContinualDensity) MarshalBinary() ([]byte, error) {
	ctr, err := e.counter.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("panprivate: marshal continual density: %w", err)
	}
	m := uint64(e.cfg.SampleSize)
	w := binenc.NewWriter(make([]byte, 0, 64+KeySize+int(m+7)/8+len(ctr)))
	w.Header(continualMagic, continualStateFormat)
	w.Float(e.cfg.Epsilon)
	w.Uvarint(e.cfg.UniverseSize)
	w.Uvarint(m)
	w.Uvarint(uint64(e.cfg.Horizon))
	w.Raw(e.key[:])
	w.Bits(e.table, m)
	w.Uvarint(uint64(len(ctr)))
	w.Raw(ctr)
	return w.Bytes(), nil
}

// UnmarshalContinualDensity restores an estimator encoded by MarshalBinary,
// attaching the noise sources lap and rng.
func UnmarshalContinualDensity(data []byte, lap dprand.Laplacer, rng *rand.Rand) (*ContinualDensity, error) {
	if lap == nil || rng == nil {
		return nil, errors.New("panprivate: unmarshal continual density: nil noise source")
	}
	e, err := continualDecode(data, lap, rng)
	if err != nil {
		return nil, fmt.Errorf("panprivate: unmarshal continual density: %w", err)
	}
	return e, nil
}

func continualDecode(data []byte, lap dprand.Laplacer, rng *rand.Rand) (*ContinualDensity, error) {
	d := binenc.NewReader(data, ErrCorruptState)
	if v := d.Header(continualMagic); d.Err() == nil && v != continualStateFormat {
		return nil, fmt.Errorf("unsupported encoding version %d", v)
	}
	var cfg ContinualDensityConfig
	cfg.Epsilon = d.FiniteFloat()
	cfg.UniverseSize = d.Uvarint()
	m := d.Uvarint()
	cfg.Horizon = d.Int64()
	if d.Err() != nil {
		return nil, d.Err()
	}
	if m > storedMaxSampleSize {
		return nil, errors.New("sample size out of range")
	}
	cfg.SampleSize = int(m)
	var key [KeySize]byte
	copy(key[:], d.Take(uint64(KeySize)))
	tbl := d.Bits(m)
	ctrLen := d.Uvarint()
	if d.Err() != nil {
		return nil, d.Err()
	}
	if ctrLen != uint64(d.Len()) {
		return nil, errors.New("counter length mismatch")
	}
	ctr, err := UnmarshalCounter(d.Rest(), lap, rng)
	if err != nil {
		return nil, err
	}
	cfg.Counter = ctr.State().Algorithm
	if cfg.Horizon == 0 { // Validate would fill in the default
		return nil, errors.New("zero horizon")
	}
	cfg, err = cfg.Validate()
	if err != nil {
		return nil, err
	}
	if st := ctr.State(); st.Epsilon != cfg.Epsilon || st.Horizon != cfg.Horizon {
		return nil, errors.New("counter configuration mismatch")
	}
	e := newContinualDensity(cfg, key, ctr, rng)
	copy(e.table, tbl)
	e.last = e.estimate(ctr.State().Count, ctr.Steps())
	return e, nil
}
