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

// treeCounter is the binary-tree counter (noisy dyadic partial sums; Dwork,
// Naor, Pitassi, Rothblum 2010 and Chan, Shi, Song 2010), made pan-private the
// way Fig. 2 protects its accumulators.
//
// Steps are grouped into blocks of B = 2^(L-1) steps, and each block into a
// complete binary tree of dyadic intervals: a node at level i < L-1 covers
// 2^i consecutive steps, a block is a level L-1 node. The output at step t is
// the sum of the released nodes that tile [1, t]: floor(t/B) blocks plus one
// level-i node per set bit i of t mod B. Only blocks and left children are
// ever used, so right children are never accumulated. Each input bit lies in
// exactly one node per level, so with per-draw noise Lap(L/eps) the releases
// are eps-DP for the event.
//
// Pan-privacy: each node's in-progress sum starts at Lap(L/eps) when the node
// opens, and the node is released as that sum plus a fresh Lap(L/eps) when it
// closes. An intrusion sees every open node's noisy partial sum; for each
// level the event then lies either in the part seen at the intrusion
// (protected by the opening noise) or in the part added after it (released
// value minus partial sum, protected by the closing noise), so intrusion plus
// outputs together stay eps-DP for the event.
//
// Error: every released node carries two Lap(L/eps) draws, variance
// 4(L/eps)^2, so the output at step t has variance 4(L/eps)^2 * nodes(t) with
// nodes(t) = floor(t/B) + popcount(t mod B) <= L - 1 + T/B. L is chosen in
// [1, bits.Len(T)] to minimise the mean over t = 1..T; the classical binary
// tree (L = bits.Len(T), at most one block) is one candidate, so the error is
// O(log^1.5 T / eps) in RMSE and O(log^1.5 T sqrt(log 1/beta) / eps) with
// probability 1-beta.
type treeCounter struct {
	counterBase
	lap      dprand.Laplacer
	levels   int
	scale    float64   // L/eps
	blockSum float64   // noisy sum of closed blocks
	partial  []float64 // in-progress noisy sums; 0 where the open node is a right child
	released []float64 // latest released node per level below the top
}

func newTreeCounter(base counterBase, lap dprand.Laplacer) (*treeCounter, error) {
	L := counterTreeLevels(base.horizon)
	c := &treeCounter{counterBase: base, lap: lap, levels: L, scale: float64(L) / base.eps,
		partial: make([]float64, L), released: make([]float64, L-1)}
	for i := range c.partial { // at step 0 every level opens node 0, a left child
		z, err := lap.Laplace(c.scale)
		if err != nil {
			return nil, err
		}
		c.partial[i] = z
	}
	return c, nil
}

// open reports whether level i's node containing leaf j (0-based step) is
// accumulated: always at the top level, else when it is a left child.
func (c *treeCounter) open(i int, j int64) bool {
	return i == c.levels-1 || (j>>i)&1 == 0
}

func (c *treeCounter) Step(bit int) (float64, error) {
	if err := c.begin(bit); err != nil {
		return 0, err
	}
	j := c.steps // this step's leaf
	t := j + 1
	top := c.levels - 1
	for i := 0; i < c.levels; i++ {
		if c.open(i, j) {
			c.partial[i] += float64(bit)
		}
	}
	for i := 0; i < c.levels; i++ {
		if t&(int64(1)<<i-1) != 0 {
			break // level i's node does not close at t, nor do higher ones
		}
		if c.open(i, j) { // close and release
			z, err := c.lap.Laplace(c.scale)
			if err != nil {
				return 0, c.fail(err)
			}
			if i == top {
				c.blockSum += c.partial[i] + z
			} else {
				c.released[i] = c.partial[i] + z
			}
		}
		c.partial[i] = 0
		if c.open(i, t) { // the node starting at leaf t
			z, err := c.lap.Laplace(c.scale)
			if err != nil {
				return 0, c.fail(err)
			}
			c.partial[i] = z
		}
	}
	c.steps = t
	c.last = c.output()
	return c.last, nil
}

// output sums the released nodes tiling [1, steps].
func (c *treeCounter) output() float64 {
	s := c.blockSum
	r := uint64(c.steps) & (uint64(1)<<(c.levels-1) - 1)
	for r != 0 {
		i := bits.TrailingZeros64(r)
		s += c.released[i]
		r &= r - 1
	}
	return s
}

// StandardError is 2 (L/eps) sqrt(nodes(step)): the output sums nodes(step)
// = floor(step/B) + popcount(step mod B) released nodes, each carrying two
// independent Lap(L/eps) draws.
func (c *treeCounter) StandardError(step int64) (float64, bool) {
	B := uint64(1) << (c.levels - 1)
	s := uint64(step)
	nodes := s/B + uint64(bits.OnesCount64(s%B))
	return 2 * c.scale * math.Sqrt(float64(nodes)), false
}

func (c *treeCounter) InternalState() CounterInternalState {
	st := CounterInternalState{CounterState: c.State(), Levels: c.levels, NoiseScale: c.scale,
		Partial: make([]*float64, c.levels), Released: append([]float64(nil), c.released...)}
	bs := c.blockSum
	st.BlockSum = &bs
	for i := range c.partial {
		if c.open(i, c.steps) {
			v := c.partial[i]
			st.Partial[i] = &v
		}
	}
	return st
}

func (c *treeCounter) MarshalBinary() ([]byte, error) {
	b := c.appendHeader(make([]byte, 0, 40+16*c.levels))
	b = binary.AppendUvarint(b, uint64(c.levels))
	b = binenc.AppendFloat(b, c.blockSum)
	for _, v := range c.partial {
		b = binenc.AppendFloat(b, v)
	}
	for _, v := range c.released {
		b = binenc.AppendFloat(b, v)
	}
	return b, nil
}

func decodeTreeCounter(base counterBase, d *binenc.Reader, lap dprand.Laplacer) (Counter, error) {
	L := d.Int64()
	if d.Err() != nil {
		return nil, d.Err()
	}
	if L < 1 || L > int64(bits.Len64(uint64(base.horizon))) {
		return nil, fmt.Errorf("invalid number of levels %d", L)
	}
	c := &treeCounter{counterBase: base, lap: lap, levels: int(L), scale: float64(L) / base.eps,
		partial: make([]float64, L), released: make([]float64, L-1)}
	c.blockSum = d.FiniteFloat()
	for i := range c.partial {
		c.partial[i] = d.FiniteFloat()
	}
	for i := range c.released {
		c.released[i] = d.FiniteFloat()
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	for i, v := range c.partial {
		if !c.open(i, c.steps) && v != 0 {
			return nil, errors.New("partial sum held for a right child")
		}
	}
	if c.output() != c.last {
		return nil, errors.New("output inconsistent with released nodes")
	}
	return c, nil
}
