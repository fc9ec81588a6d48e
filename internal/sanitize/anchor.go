package sanitize

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
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
// (16 bytes each with its mass: 32 MiB; 24 with the cumulative mass of
// the rows drawn at, anchoredSampler: 48 MiB at most).
const anchorBreakPoints = 1 << 21

// Anchor computes the rows of the distinct frequencies in freqs (below the
// stationary cycle, which needs none) in ascending order along one walk,
// and keeps them as the Table's anchored rows in place of any kept before:
// the lowest frequencies first, until the rows kept hold anchorBreakPoints
// break points or the walk has stepped maxSteps rows (it then stops after
// the row under way: one walk to a row steps at most about RestartCost
// rows). It returns how many rows it kept. It stops with ctx's error, or
// with a row's JunctionError, keeping nothing.
func (t *Table) Anchor(ctx context.Context, freqs []int64, maxSteps int64) (int, error) {
	todo := make([]int64, 0, len(freqs))
	for _, f := range freqs {
		if checkFreq(f) == nil {
			todo = append(todo, f)
		}
	}
	slices.Sort(todo)
	todo = slices.Compact(todo)
	var kept []*anchored
	points := 0
	var cu *cursor
	start := t.stepped.Load()
	for _, f := range todo {
		if st := t.stationary(); (st != nil && f >= st.from()) || t.stepped.Load()-start >= maxSteps {
			break
		}
		cu = t.startFor(f, cu, nil)
		var row *rowState
		if err := t.walk(ctx, cu, f, f, func(r *rowState, d int64) bool {
			if d == 0 && r.i == f {
				row = r.clone()
			}
			return false
		}); err != nil {
			return 0, fmt.Errorf("sanitize: anchor: %w", err)
		}
		if row == nil { // the walk met the stationary cycle
			cu = nil
			continue
		}
		if points += len(row.x); points > anchorBreakPoints {
			break
		}
		kept = append(kept, &anchored{row: row})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.anchors = kept
	return len(kept), nil
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

// anchoredSampler returns the sampler of the anchored row i, built over the
// row's own break points and masses the first time a draw asks for it, or
// nil when row i is not anchored.
func (ch *rowChain) anchoredSampler(i int64) *sampler {
	ch.mu.Lock()
	k := sort.Search(len(ch.anchors), func(k int) bool { return ch.anchors[k].row.i >= i })
	var a *anchored
	if k < len(ch.anchors) && ch.anchors[k].row.i == i {
		a = ch.anchors[k]
	}
	ch.mu.Unlock()
	if a == nil {
		return nil
	}
	if s := a.s.Load(); s != nil {
		return s
	}
	s := samplerOver(a.row)
	if !a.s.CompareAndSwap(nil, s) {
		return a.s.Load() // another goroutine built it first
	}
	return s
}

// anchored is an anchored row and, once a draw has asked for it, its
// sampler, which shares the row's break points and masses (neither is ever
// modified): only the cumulative masses are added, 8 bytes a break point.
type anchored struct {
	row *rowState
	s   atomic.Pointer[sampler]
}
