package panprivate

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// ppds is pan-private distinct sampling (Digalakis et al., Alg. 3) with the
// OptBern distributions.
//
// Every user u has a level: the number of trailing zeros of perm(u)+1, so
// that exactly floor(|X|/2^l) users have level >= l and, perm being a random
// permutation, a user has level l with probability about 2^-(l+1) (the
// Flajolet-Martin levels of the paper, computed from the sampling
// permutation instead of a linear hash). The users at level >= L qualify;
// each qualifying user is in the distinct sample M_DS with probability P0
// (never appeared) or P1 (appeared), re-drawn at every appearance (P1) and
// deletion (P0). Whenever |M_DS| reaches m the level L rises and the users of
// the old level leave, so |M_DS| < m always (the paper checks once per
// insertion; checking until the bound holds gives the same state after
// initialization and keeps the bound strict).
//
// The state is a bit per qualifying user (bit k-1 for the user with
// perm(u)+1 = k 2^L), about m/P0 bits: membership in M_DS. The release
// divides by the actual number of qualifying users n_L = floor(|X|/2^L)
// where the paper divides by |X|/2^L:
// (|M_DS|/n_L - P0) / (P1 - P0) + Lap(1/(eps n_L)).
type ppds struct {
	*base
	level   uint
	members uint64
	bits    bitset // over the n_L qualifying users
}

// ppdsMaxLevel is the highest level with at least one qualifying user.
func ppdsMaxLevel(n uint64) uint { return uint(bits.Len64(n)) - 1 }

func newPPDS(b *base) *ppds {
	d := &ppds{base: b}
	d.initialize()
	return d
}

// qualifying returns n_L, the number of users at level >= L.
func (d *ppds) qualifying() uint64 { return d.cfg.UniverseSize >> d.level }

// initialize runs the initialization phase of Alg. 3 without scanning the
// universe: it draws the users level by level from the top and stops at the
// first level whose members would fill the sample. Sequential insertion with
// the fill check yields the same final level: the smallest L with fewer than
// m members at level >= L.
func (d *ppds) initialize() {
	m := uint64(d.cfg.SampleSize)
	n := d.cfg.UniverseSize
	var chosen []uint64 // perm(u)+1 of the members at levels >= the current one
	top := ppdsMaxLevel(n)
	level := top
	for l := int(top); l >= 0; l-- {
		before := len(chosen)
		step := uint64(1) << (uint(l) + 1)
		for w := uint64(1) << uint(l); w <= n; w += step { // w = (2j+1) 2^l
			if d.law.draw(d.rng, false) {
				chosen = append(chosen, w)
			}
		}
		if uint64(len(chosen)) >= m && uint(l) < top { // the top level is never evicted
			chosen = chosen[:before]
			break
		}
		level = uint(l)
	}
	d.level = level
	d.bits = newBitset(d.qualifying())
	for _, w := range chosen {
		d.bits.set(w>>d.level-1, true)
	}
	d.members = uint64(len(chosen))
}

func (d *ppds) Privacy() Privacy {
	return d.privacy(d.cfg.Epsilon, d.law.releaseCost(d.cfg.Epsilon))
}

func (d *ppds) Apply(events []Event) error {
	ids, err := d.resolve(events, true)
	if err != nil {
		return err
	}
	for i, u := range ids {
		w := d.perm.forward(u) + 1
		if w&(1<<d.level-1) != 0 {
			continue // below the current level
		}
		k := w>>d.level - 1
		old, nb := d.bits.get(k), d.law.draw(d.rng, !events[i].Delete)
		switch {
		case nb && !old:
			d.bits.set(k, true)
			d.members++
			d.evict()
		case !nb && old:
			d.bits.set(k, false)
			d.members--
		}
	}
	return nil
}

// evict raises the level until fewer than m users are in the sample. The
// qualifying user with index k at level L+1 had index 2k+1 at level L.
func (d *ppds) evict() {
	m := uint64(d.cfg.SampleSize)
	for d.members >= m && d.level < ppdsMaxLevel(d.cfg.UniverseSize) {
		d.level++
		n := d.qualifying()
		nb := newBitset(n)
		for k := uint64(0); k < n; k++ {
			if d.bits.get(2*k + 1) {
				nb.set(k, true)
			}
		}
		d.bits = nb
		d.members = nb.count()
	}
}

func (d *ppds) estimate() float64 {
	return d.law.debias(float64(d.members) / float64(d.qualifying()))
}

func (d *ppds) Release(noise dprand.Laplacer) (Release, error) {
	return d.noisyRelease(noise, d.estimate, 1/(d.cfg.Epsilon*float64(d.qualifying())), d.law.releaseCost(d.cfg.Epsilon), d.errorModel())
}

// ppdsLevelSDs is the margin, in binomial standard deviations, by which
// boundLevel keeps the largest possible sample below m: the sample at a
// level is a sum of independent bits, each 1 with probability at most P1, so
// it exceeds its worst-case mean by 4 standard deviations with probability
// about 3e-5 at any one time (normal tail; less by Chernoff's bound).
const ppdsLevelSDs = 4

// boundLevel is the highest level the stream's history can force (with
// the ppdsLevelSDs margin), from public values only (n, m, P1): the smallest
// level L whose n_L qualifying users, every one of them appeared (P(bit) =
// P1, the largest probability any bit has: intrusions re-draw from the base
// pair, and only shift the pair in use inside it), keep the sample below m:
// n_L P1 + 4 sqrt(n_L P1 (1-P1)) < m. The level is a running maximum (evict
// only raises it): it rises whenever a fluctuation fills the sample, and
// deletions never lower it, so a stream whose users all appeared and were
// then deleted reads at the level its peak forced, whatever its final
// density. No stream the API accepts raises the level above boundLevel
// except by a fluctuation beyond the margin.
func (d *ppds) boundLevel() uint {
	n, m := d.cfg.UniverseSize, float64(d.cfg.SampleSize)
	p1 := float64(d.law.base[1]) / probUnit
	top := ppdsMaxLevel(n)
	for l := uint(0); l < top; l++ {
		nl := float64(n >> l)
		if nl*p1+ppdsLevelSDs*math.Sqrt(nl*p1*(1-p1)) < m {
			return l
		}
	}
	return top
}

// errorModel states the release's standard error at boundLevel and marks
// it a bound (docs/errorbars-streams.md, §ppds): the qualifying users at
// level L are a uniform random n_L-subset of the universe (perm is random),
// so at a fixed level the variance is the density variance of a sample of
// n_L users (Theorem 5.2) with release noise 1/(eps n_L), both decreasing in
// n_L. The actual level is part of the state, which a release must not
// reveal, and depends on the whole history (the level the final density
// predicts understated the error by half after deletions, issue 32), so the
// error is stated at the highest level the history can force: exact when the
// stream reached that level, conservative when it stayed lower.
func (d *ppds) errorModel() errorModel {
	n := d.cfg.UniverseSize
	nl := n >> d.boundLevel()
	return errorModel{lo: 0, hi: 1, bound: true,
		variance: func(x float64) float64 { return d.densityVariance(x, nl, n) },
		noiseScale: func(float64) float64 {
			scale, _ := d.releaseScale(1/(d.cfg.Epsilon*float64(nl)), d.law.releaseCost(d.cfg.Epsilon))
			return scale
		}}
}

func (d *ppds) state() State {
	s := d.stateHeader()
	n := d.qualifying()
	s.Users = make([]uint64, n)
	for k := uint64(0); k < n; k++ {
		s.Users[k] = d.perm.inverse((k+1)<<d.level - 1)
	}
	s.Bits = d.bits.string(n)
	level, members := int(d.level), int(d.members)
	s.Level, s.Members = &level, &members
	return s
}

// Intrude returns the state, then re-draws every qualifying user's membership
// (member: from D1, not a member: from D0) and shifts the distributions.
func (d *ppds) Intrude() State {
	s := d.state()
	n := d.qualifying()
	for k := uint64(0); k < n; k++ {
		d.bits.set(k, d.law.rerandomize(d.rng, d.bits.get(k)))
	}
	d.members = d.bits.count()
	d.evict()
	d.law = d.law.shifted()
	d.stats.Intrusions++
	return s
}

func (d *ppds) MarshalBinary() ([]byte, error) {
	w := d.encodeBase()
	w.Uvarint(uint64(d.level))
	w.Bits(d.bits, d.qualifying())
	return w.Bytes(), nil
}

func decodePPDS(b *base, r *binenc.Reader) (*ppds, error) {
	d := &ppds{base: b}
	d.level = uint(r.Intn(uint64(ppdsMaxLevel(b.cfg.UniverseSize))))
	if r.Err() != nil {
		return nil, fmt.Errorf("ppds level: %w", r.Err())
	}
	n := d.qualifying()
	if n > 4*uint64(storedMaxSampleSize)+64 {
		return nil, fmt.Errorf("%w: ppds level too low for the sample size", ErrCorruptState)
	}
	d.bits = bitset(r.Bits(n))
	if r.Err() != nil {
		return nil, fmt.Errorf("ppds bits: %w", r.Err())
	}
	d.members = d.bits.count()
	if d.members >= uint64(b.cfg.SampleSize) && d.level < ppdsMaxLevel(b.cfg.UniverseSize) {
		return nil, fmt.Errorf("%w: ppds sample over its bound", ErrCorruptState)
	}
	return d, nil
}
