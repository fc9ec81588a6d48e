package accounting

import (
	"container/list"
	"fmt"
	"math"
	"sync"

	"github.com/pwsd/pwsd/internal/checks"
)

// Mechanism kinds a ledger records for a charge.
const (
	// MechanismGeneric is any (epsilon, delta)-DP release, composed by the
	// generic dominating pair (Generic). Sound for every release.
	MechanismGeneric = "generic"
	// MechanismLaplace is a release of Laplace noise that is epsilon-DP
	// (delta 0), composed by its exact PLD (Laplace).
	MechanismLaplace = "laplace"
)

// Charge is one release as a ledger composes it: the mechanism's kind and
// its public parameters.
type Charge struct {
	Mechanism string
	Epsilon   float64
	Delta     float64
}

// Validate checks the charge's parameters: a known mechanism, 0 <= epsilon
// <= 50, 0 <= delta <= 1, and delta 0 for Laplace.
func (c Charge) Validate() error {
	var errs checks.Errors
	errs.AddErr("epsilon", validEpsilon("epsilon", c.Epsilon))
	if !(c.Delta >= 0 && c.Delta <= 1) {
		errs.Add("delta", "must be a number from 0 to 1")
	}
	switch c.Mechanism {
	case MechanismGeneric:
	case MechanismLaplace:
		if c.Delta != 0 {
			errs.Add("delta", "must be 0 for the Laplace mechanism")
		}
	default:
		errs.Add("mechanism", fmt.Sprintf("must be %q or %q", MechanismGeneric, MechanismLaplace))
	}
	return errs.Err()
}

// PLD returns the charge's PLD on grid g.
func (c Charge) PLD(g Grid) (*PLD, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Mechanism == MechanismLaplace {
		return Laplace(g, c.Epsilon)
	}
	return Generic(g, c.Epsilon, c.Delta)
}

// ComposeCharges returns base composed with every charge in cs. Identical
// charges are composed together by SelfCompose, so n equal charges cost
// about 2 log2 n compositions, not n.
func ComposeCharges(base *PLD, cs []Charge) (*PLD, error) {
	counts := map[Charge]int{}
	var order []Charge
	for _, c := range cs {
		if counts[c] == 0 {
			order = append(order, c)
		}
		counts[c]++
	}
	out := base
	for _, c := range order {
		one, err := c.PLD(base.grid)
		if err != nil {
			return nil, fmt.Errorf("composing a %s charge: %w", c.Mechanism, err)
		}
		many, err := one.SelfCompose(counts[c])
		if err != nil {
			return nil, err
		}
		if out, err = out.Compose(many); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BudgetSlack is the relative slack a budget check allows for rounding in
// sums of charges (ten charges of 0.1 fit a budget of 1).
const BudgetSlack = 1e-9

// Spent returns the epsilon a ledger has spent at delta, the smaller of two
// upper bounds: the composed PLD's epsilon at delta, and basic
// composition's sum of epsilons when the sum of deltas is within delta
// (sumEps, sumDelta). Both are valid, so the smaller is.
func Spent(composed *PLD, sumEps, sumDelta, delta float64) float64 {
	eps := composed.Epsilon(delta)
	if sumDelta <= delta*(1+BudgetSlack) {
		eps = math.Min(eps, sumEps)
	}
	return eps
}

// Cache keeps the composed PLD of each dataset's ledger up to a position
// (the number or id of the last charge composed), so that checking a new
// charge composes only the charges recorded since. It is bounded by the
// total number of grid points it holds (8 bytes each), evicting the least
// recently used ledger; safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	max    int
	used   int
	order  *list.List // front: most recently used; values are *cached
	byName map[string]*list.Element
}

// cached is one ledger's composed PLD up to pos.
type cached struct {
	name string
	pos  int64
	pld  *PLD
}

// NewCache returns a cache holding at most maxPoints grid points in all.
func NewCache(maxPoints int) *Cache {
	return &Cache{max: maxPoints, order: list.New(), byName: map[string]*list.Element{}}
}

// Get returns the composed PLD cached for name and the position it was
// composed up to.
func (c *Cache) Get(name string) (int64, *PLD, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byName[name]
	if !ok {
		return 0, nil, false
	}
	c.order.MoveToFront(e)
	v := e.Value.(*cached)
	return v.pos, v.pld, true
}

// Put caches p as name's ledger composed up to pos, replacing an entry at
// an earlier position (an entry at a later one is kept).
func (c *Cache) Put(name string, pos int64, p *PLD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byName[name]; ok {
		v := e.Value.(*cached)
		if v.pos > pos {
			return
		}
		c.used -= len(v.pld.p)
		c.order.Remove(e)
		delete(c.byName, name)
	}
	if len(p.p) > c.max {
		return
	}
	c.byName[name] = c.order.PushFront(&cached{name: name, pos: pos, pld: p})
	c.used += len(p.p)
	for c.used > c.max {
		old := c.order.Back()
		v := old.Value.(*cached)
		c.order.Remove(old)
		delete(c.byName, v.name)
		c.used -= len(v.pld.p)
	}
}

// Forget drops name's entry (its ledger no longer extends what was cached).
func (c *Cache) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byName[name]; ok {
		c.used -= len(e.Value.(*cached).pld.p)
		c.order.Remove(e)
		delete(c.byName, name)
	}
}
