package sanitize

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sort"
)

// Anchored rows (issue 37; docs/store.md, "Anchored rows after a restart").
//
// A Table restored from kept rows (persist.go) holds a public skeleton: a
// release's draws still step from it to every key's frequency. Where a
// caller knows, from public data, near which frequencies the next draws
// will fall (the MLE frequencies of a parameter set's last release, which
// that release published), Anchor computes the rows at chosen places near
// them and keeps them in memory as further starts: a draw then walks from
// the nearest anchored row below its frequency when that is cheaper than
// the skeleton. Anchored rows are rows of the table, computed along its
// chains by the walk protocol (every junction on the way verified), so
// every row reached from one is the same bit for bit as from row 0. They
// are never encoded by KeptRows: which places they sit at is the caller's
// business, and this package stores nothing.

// anchorBreakPoints bounds the break points of a Table's anchored rows
// (24 bytes each with its mass and cumulative mass, anchoredOf: 48 MiB at
// most).
const anchorBreakPoints = 1 << 21

// Anchor computes the rows of the distinct frequencies in freqs (below the
// stationary cycle, which needs none) in ascending order along one walk,
// and keeps them as the Table's anchored rows in place of any kept before,
// until the walk has stepped maxSteps rows (it then stops after the row
// under way: one walk to a row steps at most about RestartCost rows). The
// rows kept hold at most anchorBreakPoints break points: past that, those
// that save a walk the fewest rows per break point are dropped (anchor).
// It returns how many rows it kept. It stops with ctx's error, or with a
// row's JunctionError, keeping nothing.
func (t *Table) Anchor(ctx context.Context, freqs []int64, maxSteps int64) (int, error) {
	return t.anchor(ctx, freqs, maxSteps, anchorBreakPoints)
}

// anchor is Anchor with at most maxPoints break points kept. Each row
// computed is ranked by its saving (anchorRank): the rows a walk to it
// steps from the starts the table holds when anchor is called, anchored
// rows aside (skeletonCost: a checkpoint every 64 rows below 2^16, the
// kept rows of blocks above), per break point it holds. anchorKeeper keeps
// the rows within maxPoints, every row kept ranked above every row
// dropped. (Keeping the lowest places first, as a walk meets them, kept
// the rows next to checkpoints, where a walk steps 32 rows on average, and
// dropped those of the largest keys, hundreds of rows from a kept row.)
func (t *Table) anchor(ctx context.Context, freqs []int64, maxSteps int64, maxPoints int) (int, error) {
	todo := make([]int64, 0, len(freqs))
	for _, f := range freqs {
		if checkFreq(f) == nil {
			todo = append(todo, f)
		}
	}
	slices.Sort(todo)
	todo = slices.Compact(todo)
	// What each row saves, over the starts the table holds now (a walk
	// may keep more checkpoints on its way).
	costs := make([]int64, len(todo))
	for k, f := range todo {
		costs[k] = t.skeletonCost(f)
	}
	keep := anchorKeeper{maxPoints: maxPoints}
	var cu *cursor
	start := t.stepped.Load()
	for k, f := range todo {
		if st := t.stationary(); (st != nil && f >= st.from()) || t.stepped.Load()-start >= maxSteps {
			break
		}
		cu = t.startFor(f, cu, nil)
		var a *anchored
		if err := t.walk(ctx, cu, f, f, func(r *rowState, d int64) bool {
			if d == 0 && r.i == f {
				a = anchoredOf(r)
			}
			return false
		}); err != nil {
			return 0, fmt.Errorf("sanitize: anchor: %w", err)
		}
		if a == nil { // the walk met the stationary cycle
			cu = nil
			continue
		}
		a.rank = anchorRank{saving: float64(costs[k]) / float64(len(a.row.x)), i: f}
		keep.offer(a)
	}
	kept := keep.kept()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.anchors = kept
	return len(kept), nil
}

// anchorRank orders the rows Anchor computes by what keeping one saves:
// the rows a walk to it would step without it per break point, and among
// equal savings the lower row first.
type anchorRank struct {
	saving float64
	i      int64
}

// below reports whether r ranks below s.
func (r anchorRank) below(s anchorRank) bool {
	return r.saving < s.saving || (r.saving == s.saving && r.i > s.i)
}

// anchorKeeper holds the anchored rows offered to it within maxPoints
// break points: past them it drops the lowest ranked, and every row
// offered later ranked at most as high as one dropped, so that every row
// it keeps ranks above every row it dropped.
type anchorKeeper struct {
	maxPoints int
	held      anchorHeap
	points    int        // the break points held
	floor     anchorRank // the highest rank dropped, once dropped
	dropped   bool
}

// offer adds a, unless it ranks at most as high as a row dropped before,
// and drops the lowest ranked rows while the rows held exceed maxPoints.
func (k *anchorKeeper) offer(a *anchored) {
	if k.dropped && !k.floor.below(a.rank) {
		return
	}
	heap.Push(&k.held, a)
	for k.points += len(a.row.x); k.points > k.maxPoints; {
		out := heap.Pop(&k.held).(*anchored)
		k.points -= len(out.row.x)
		k.floor, k.dropped = out.rank, true
	}
}

// kept returns the rows held, ascending.
func (k *anchorKeeper) kept() []*anchored {
	kept := []*anchored(k.held)
	slices.SortFunc(kept, func(a, b *anchored) int { return cmp.Compare(a.row.i, b.row.i) })
	return kept
}

// anchorHeap holds anchored rows with the lowest ranked on top
// (container/heap).
type anchorHeap []*anchored

func (h anchorHeap) Len() int           { return len(h) }
func (h anchorHeap) Less(a, b int) bool { return h[a].rank.below(h[b].rank) }
func (h anchorHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }

// Push adds x, an *anchored (container/heap).
func (h *anchorHeap) Push(x any) { *h = append(*h, x.(*anchored)) }

// Pop removes the last row (container/heap).
func (h *anchorHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	*h = old[:len(old)-1]
	return a
}

// Anchored returns how many anchored rows the table holds.
func (t *Table) Anchored() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.anchors)
}

// anchorIn returns the anchored row nearest at or below i with index above
// lo, or nil.
func (ch *rowChain) anchorIn(lo, i int64) *rowState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	k := sort.Search(len(ch.anchors), func(k int) bool { return ch.anchors[k].row.i > i })
	if k == 0 || ch.anchors[k-1].row.i <= lo {
		return nil
	}
	return ch.anchors[k-1].row
}

// anchoredSampler returns the sampler of the anchored row i, or nil when
// row i is not anchored.
func (ch *rowChain) anchoredSampler(i int64) *sampler {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	k := sort.Search(len(ch.anchors), func(k int) bool { return ch.anchors[k].row.i >= i })
	if k < len(ch.anchors) && ch.anchors[k].row.i == i {
		return ch.anchors[k].s
	}
	return nil
}

// anchored is an anchored row and its sampler, which shares the row's
// break points and masses (neither is ever modified).
type anchored struct {
	row  *rowState
	s    *sampler
	rank anchorRank // what keeping it saves (Anchor)
}

// anchoredOf returns r, a cursor's row, as an anchored row with its
// sampler: the break points, masses and cumulative masses in one
// allocation (24 bytes a break point), the cumulative masses computed now,
// in Anchor's background walk, and not by the first draw at the row.
func anchoredOf(r *rowState) *anchored {
	s := newSampler(r)
	row := *r
	row.x, row.m, row.adj = s.x, s.m, slices.Clone(r.adj)
	return &anchored{row: &row, s: s}
}
