package panprivate

import (
	"fmt"
)

// State is the JSON view of an estimator's internal state, returned by an
// announced intrusion. Pan-privacy makes it safe to reveal: every entry is
// randomized. Fields not used by an estimator are omitted.
type State struct {
	Estimator    Kind      `json:"estimator"`
	Algorithm    Algorithm `json:"algorithm"`
	Epsilon      float64   `json:"epsilon"`
	UniverseSize uint64    `json:"universe_size"`
	SampleSize   int       `json:"sample_size"`
	// Intrusions counts the announced intrusions before this one.
	Intrusions int `json:"intrusions"`
	// Key (hex) keys the string-id hash and the sampling permutation.
	Key string `json:"key"`
	// P0 and P1 are P(bit = 1) under the distributions in use for users
	// that have not / have appeared.
	P0 float64 `json:"p0,omitempty"`
	P1 float64 `json:"p1,omitempty"`
	// Users lists the universe ids whose entries the tables hold, in table
	// order (density, cropped mean, heavy hitters, incidence: the sample M;
	// ppds: the users at or above the current level).
	Users []uint64 `json:"users"`
	// Bits holds one '0'/'1' per user (density; ppds: membership in the
	// distinct sample).
	Bits string `json:"bits,omitempty"`
	// Level and Members are the ppds level L and distinct-sample size.
	Level   *int `json:"level,omitempty"`
	Members *int `json:"members,omitempty"`
	// Tables are the cropped-mean tables (one for cropped_mean, one per
	// threshold for heavy_hitters).
	Tables []TableState `json:"tables,omitempty"`
	// Multiplicities are the heavy-hitter multiplicities r_x per user.
	Multiplicities []float64 `json:"multiplicities,omitempty"`
	// Moduli are the incidence counters, one set per prime.
	Moduli []ModulusState `json:"moduli,omitempty"`
}

// TableState is one cropped-mean table: threshold t, a counter per user in
// [0, t) (in units of 1/Resolution) and a bit per user.
type TableState struct {
	T          float64  `json:"t"`
	Resolution uint64   `json:"resolution"`
	Counters   []uint64 `json:"counters"`
	Bits       string   `json:"bits"`
}

// ModulusState is one modular incidence counter: the prime p, the initial
// noise law (P(noise = i)) and a counter mod p per user.
type ModulusState struct {
	P        int       `json:"p"`
	Noise    []float64 `json:"noise"`
	Counters []uint64  `json:"counters"`
}

// stateHeader fills the fields every state view shares.
func (b *base) stateHeader() State {
	s := State{
		Estimator:    b.cfg.Estimator,
		Algorithm:    b.cfg.Algorithm,
		Epsilon:      b.cfg.Epsilon,
		UniverseSize: b.cfg.UniverseSize,
		SampleSize:   b.cfg.SampleSize,
		Intrusions:   b.stats.Intrusions,
		Key:          fmt.Sprintf("%x", b.key[:]),
	}
	if b.spec.bitLaw {
		s.P0, s.P1 = b.law.p(false), b.law.p(true)
	}
	return s
}

// sampleUsers lists perm^-1(0..m-1): the users of M in table order.
func (b *base) sampleUsers() []uint64 {
	users := make([]uint64, b.cfg.SampleSize)
	for i := range users {
		users[i] = b.perm.inverse(uint64(i))
	}
	return users
}
