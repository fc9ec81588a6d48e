package panprivate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/pwsd/pwsd/internal/dprand"
)

// Estimator is a pan-private stream estimator. Implementations are not safe
// for concurrent use.
type Estimator interface {
	// Config returns the resolved configuration (defaults and the chosen
	// sample size filled in).
	Config() Config
	// Apply applies a batch of events atomically: the whole batch is
	// validated first (a *ParamError names the offending event), and a
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

// Release is one noisy estimate.
type Release struct {
	Estimate     float64 `json:"estimate"`
	EpsilonSpent float64 `json:"epsilon_spent"`
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

// ErrReleaseLimit reports that max_releases releases were already made.
var ErrReleaseLimit = errors.New("panprivate: release limit reached")

// ErrUninformative reports that announced intrusions have shrunk the gap
// between the state distributions so far that no estimate can be formed.
var ErrUninformative = errors.New("panprivate: state no longer informative after announced intrusions")

// User is a user id: an integer in [0, universe_size), used as it is, or a
// string, mapped into the universe with a keyed hash. Its JSON form is a
// number or a string.
type User struct {
	id    uint64
	name  string
	named bool
}

// UserID returns the integer user id.
func UserID(id uint64) User { return User{id: id} }

// UserName returns a string user id.
func UserName(name string) User { return User{name: name, named: true} }

// MarshalJSON encodes u as a number or a string.
func (u User) MarshalJSON() ([]byte, error) {
	if u.named {
		return json.Marshal(u.name)
	}
	return []byte(strconv.FormatUint(u.id, 10)), nil
}

// UnmarshalJSON accepts a non-negative integer or a string.
func (u *User) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("panprivate: user: %w", err)
		}
		*u = UserName(s)
		return nil
	}
	id, err := strconv.ParseUint(string(data), 10, 64)
	if err != nil {
		return errors.New("panprivate: user must be a non-negative integer or a string")
	}
	*u = UserID(id)
	return nil
}

// Event is one stream element: an appearance of User, or with Delete its
// deletion (the 0/1 turnstile model: the user's entry is re-drawn from the
// "never appeared" law). Its JSON form is {"user": ..., "op": "delete"}.
type Event struct {
	User   User
	Delete bool
}

type eventJSON struct {
	User User   `json:"user"`
	Op   string `json:"op,omitempty"`
}

// MarshalJSON encodes e as {"user": ..., "op": "delete"} (op omitted for an
// appearance).
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{User: e.User}
	if e.Delete {
		j.Op = "delete"
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes {"user": ..., "op": "insert" | "delete"}; op
// defaults to insert.
func (e *Event) UnmarshalJSON(data []byte) error {
	var j struct {
		User *User  `json:"user"`
		Op   string `json:"op"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if j.User == nil {
		return errors.New("panprivate: event without user")
	}
	switch j.Op {
	case "", "insert":
		*e = Event{User: *j.User}
	case "delete":
		*e = Event{User: *j.User, Delete: true}
	default:
		return errors.New("panprivate: event op must be insert or delete")
	}
	return nil
}

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
		return nil, err
	}
	switch {
	case c.Estimator == KindDensity && c.Algorithm == AlgorithmPPDS:
		return newPPDS(b), nil
	case c.Estimator == KindDensity:
		return newSampledDensity(b), nil
	case c.Estimator == KindCroppedMean:
		return newCroppedMean(b), nil
	case c.Estimator == KindHeavyHitters:
		return newHeavyHitters(b), nil
	default:
		return newIncidence(b)
	}
}

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

// base holds what every estimator shares.
type base struct {
	cfg   Config
	key   [KeySize]byte
	perm  permutation
	names *userMapper
	rng   *rand.Rand
	law   bitLaw // unused by incidence
	stats Stats
	ids   []uint64 // scratch: resolved ids of the current batch
}

func newBase(c Config, key [KeySize]byte, rng *rand.Rand) (*base, error) {
	b := &base{cfg: c, key: key, rng: rng}
	b.perm = newPermutation(c.UniverseSize, &b.key)
	b.names = newUserMapper(c.UniverseSize, &b.key)
	if c.Estimator != KindIncidence {
		law, err := newBitLaw(c.Algorithm, c.Epsilon)
		if err != nil {
			return nil, err
		}
		b.law = law
	}
	return b, nil
}

func (b *base) Config() Config {
	c := b.cfg
	if c.Accuracy != nil {
		a := *c.Accuracy
		c.Accuracy = &a
	}
	return c
}

func (b *base) Stats() Stats { return b.stats }

// resolve validates a batch and maps it to universe ids (into b.ids). It
// changes no state except the scratch slice.
func (b *base) resolve(events []Event, deletes bool) ([]uint64, error) {
	ids := b.ids[:0]
	if cap(ids) < len(events) {
		ids = make([]uint64, 0, len(events))
	}
	for i, ev := range events {
		if ev.Delete && !deletes {
			return nil, paramErr(fmt.Sprintf("events[%d].op", i), "delete is not supported by %s", b.cfg.Estimator)
		}
		if ev.User.named {
			if len(ev.User.name) == 0 || len(ev.User.name) > MaxUserNameLen {
				return nil, paramErr(fmt.Sprintf("events[%d].user", i), "must be a non-empty string of at most %d bytes", MaxUserNameLen)
			}
			ids = append(ids, b.names.id(ev.User.name))
			continue
		}
		if ev.User.id >= b.cfg.UniverseSize {
			return nil, paramErr(fmt.Sprintf("events[%d].user", i), "must be less than universe_size")
		}
		ids = append(ids, ev.User.id)
	}
	if cap(ids) <= 1<<16 {
		b.ids = ids
	}
	return ids, nil
}

// beginRelease checks the release limit and the noise source.
func (b *base) beginRelease(noise dprand.Laplacer) error {
	if noise == nil {
		return errors.New("panprivate: release: nil noise source")
	}
	if b.cfg.MaxReleases > 0 && b.stats.Releases >= b.cfg.MaxReleases {
		return ErrReleaseLimit
	}
	if b.cfg.Estimator != KindIncidence && !(b.law.gap() > 1e-12) {
		return ErrUninformative
	}
	return nil
}

// laplace draws Lap(scale) through noise, wrapping errors.
// releaseScale returns the Laplace scale of a release whose papers' scale is
// paperScale and whose exact cost at that scale is cost, and the epsilon the
// release spends: the papers' noise at its exact cost, or (calibrated) the
// noise scaled by cost/epsilon so that the release costs exactly epsilon.
func (b *base) releaseScale(paperScale, cost float64) (scale, spent float64) {
	if b.cfg.ReleaseNoise == NoiseCalibrated && cost > b.cfg.Epsilon {
		return paperScale * cost / b.cfg.Epsilon, b.cfg.Epsilon
	}
	return paperScale, cost
}

// privacy states the guarantee of an estimator whose state costs state and
// whose release, with the papers' noise, costs cost.
func (b *base) privacy(state, cost float64) Privacy {
	_, spent := b.releaseScale(0, cost)
	return Privacy{State: state, PerRelease: spent}
}

// noisyRelease draws one release: estimate plus Laplace noise of the papers'
// scale paperScale (or calibrated, see releaseScale), whose exact cost with
// the papers' noise is cost.
func (b *base) noisyRelease(noise dprand.Laplacer, estimate func() float64, paperScale, cost float64) (Release, error) {
	if err := b.beginRelease(noise); err != nil {
		return Release{}, err
	}
	scale, spent := b.releaseScale(paperScale, cost)
	x, err := laplace(noise, scale)
	if err != nil {
		return Release{}, err
	}
	b.stats.Releases++
	return Release{Estimate: estimate() + x, EpsilonSpent: spent}, nil
}

func laplace(noise dprand.Laplacer, scale float64) (float64, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return 0, fmt.Errorf("panprivate: release: bad noise scale %g", scale)
	}
	x, err := noise.Laplace(scale)
	if err != nil {
		return 0, fmt.Errorf("panprivate: release: %w", err)
	}
	return x, nil
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
	if b.cfg.Estimator != KindIncidence {
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
