package panprivate

import (
	"fmt"
	"math/rand/v2"

	"github.com/pwsd/pwsd/internal/checks"
)

// base holds what every estimator shares.
type base struct {
	cfg   Config
	spec  *kindSpec // cfg.Estimator's
	key   [KeySize]byte
	perm  permutation
	names *userMapper
	rng   *rand.Rand
	law   bitLaw // unused by incidence
	stats Stats
	ids   []uint64 // scratch: resolved ids of the current batch
}

// newBase builds the shared part of an estimator of the validated
// configuration c.
func newBase(c Config, key [KeySize]byte, rng *rand.Rand) (*base, error) {
	spec, ok := specOf(c.Estimator)
	if !ok { // Validate refuses unknown kinds; never default to one
		return nil, fmt.Errorf("unknown kind %q", c.Estimator)
	}
	b := &base{cfg: c, spec: spec, key: key, rng: rng}
	b.perm = newPermutation(c.UniverseSize, &b.key)
	b.names = newUserMapper(c.UniverseSize, &b.key)
	if spec.bitLaw {
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
			return nil, checks.Errorf(fmt.Sprintf("events[%d].op", i), "delete is not supported by %s", b.cfg.Estimator)
		}
		if ev.User.named {
			if len(ev.User.name) == 0 || len(ev.User.name) > maxUserNameLen {
				return nil, checks.Errorf(fmt.Sprintf("events[%d].user", i), "must be a non-empty string of at most %d bytes", maxUserNameLen)
			}
			ids = append(ids, b.names.id(ev.User.name))
			continue
		}
		if ev.User.id >= b.cfg.UniverseSize {
			return nil, checks.Errorf(fmt.Sprintf("events[%d].user", i), "must be less than universe_size")
		}
		ids = append(ids, ev.User.id)
	}
	if cap(ids) <= 1<<16 {
		b.ids = ids
	}
	return ids, nil
}
