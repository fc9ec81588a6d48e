package panprivate

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Estimator is a pan-private stream estimator. Implementations are not safe
// for concurrent use.
type Estimator interface {
	// Config returns the resolved configuration (defaults and the chosen
	// sample size filled in).
	Config() Config
	// Apply applies a batch of events atomically: the whole batch is
	// validated first (a *checks.FieldError names the offending event), and a
	// rejected batch changes nothing.
	Apply(events []Event) error
	// Release returns one noisy estimate. It fails with ErrReleaseLimit
	// after Config().MaxReleases releases.
	Release(noise dprand.Laplacer) (Release, error)
	// Intrude performs an announced intrusion: it returns the internal
	// state as it is, then re-randomizes it and switches to the shifted
	// distributions, which later releases account for.
	Intrude() State
	// Stats returns the counts of events, releases and intrusions so far.
	Stats() Stats
	// Privacy returns the estimator's privacy parameters.
	Privacy() Privacy
	// MarshalBinary encodes the whole state (configuration, key, tables,
	// counts) compactly. Unmarshal restores it.
	MarshalBinary() ([]byte, error)
}

// Stats are an estimator's public counts. The number of events is not one
// of them: with one event per user it is the exact count the estimators
// exist to protect, so it is neither kept nor stored.
type Stats struct {
	Releases   int `json:"releases"`
	Intrusions int `json:"intrusions"`
}

// Privacy states an estimator's guarantees in the papers' terms. The state
// is State-DP against one unannounced intrusion (user level); each release
// adds Laplace noise the papers charge PerRelease for, so the state together
// with r releases is (State + r*PerRelease)-pan-private (2 epsilon for the
// density estimators with one release, Theorem 3.2 of Dwork et al.).
type Privacy struct {
	State      float64 `json:"state_epsilon"`
	PerRelease float64 `json:"release_epsilon"`
}

// New creates an estimator from cfg (validated first) drawing all its
// randomness — the key that fixes M, initial entries and re-draws — from rng.
// Pass dprand.New() in production. The estimator keeps rng.
func New(cfg Config, rng *rand.Rand) (Estimator, error) {
	if rng == nil {
		return nil, errors.New("panprivate: new estimator: nil random source")
	}
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	b, err := newBase(c, newKey(rng), rng)
	if err != nil {
		return nil, fmt.Errorf("panprivate: new estimator: %w", err)
	}
	return b.spec.build(b)
}
