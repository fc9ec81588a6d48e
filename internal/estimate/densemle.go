package estimate

import (
	"slices"
)

// denseMLE is the MLE token loop (eq. 11) on dense rows: a_j = g(i*)/pi_{i*}
// for the first row i* (in ascending frequency) whose mass on token j
// exceeds every earlier one's by more than tieTol relative, a_j = a_{j-1}
// when no row produces the token. On stationary rows it takes the argmax
// without scanning (the copy shortcut, see advance). Its reference is
// denseMLERef, which scans every token; both compute bit for bit what the
// reference builder (generalBuilderRef) computes (densemle_test.go).
type denseMLE struct {
	denseRows
	// memo[j % copyP] is the argmax scan's outcome on token j, kept for
	// the copyP tokens after it; lastOriginal is the frequency of the
	// last row linked that is not a copy of the row before it with its
	// first token copyP tokens higher (copyP is 1 on unit cells;
	// buildGrid's rows set it from the first copy of a run).
	memo         []mleMemo
	copyP        int64
	lastOriginal int64
	shortcuts    int // tokens whose argmax the shortcut took
}

// newDenseMLE returns an MLE loop over dense rows of g finalising tokens
// 1..n and storing every one.
func newDenseMLE(g G, n int64) *denseMLE {
	u := &denseMLE{denseRows: newDenseRows(g, n, 0)}
	u.noSums = true
	u.setPeriod(1)
	return u
}

// window returns the loop's rows, parameters and estimates (denseLoop).
func (u *denseMLE) window() *denseRows { return &u.denseRows }

// mleMemo is the MLE argmax scan's outcome on token j: the position best
// among the n active rows (found: some row has mass there) and the first
// active row's frequency head.
type mleMemo struct {
	j, head int64
	best, n int
	found   bool
}

// activate appends r (recording it as the last original row unless it
// is a copy; fresh rows are compared with the row before them, markCopy)
// and finalises every token it makes final.
func (u *denseMLE) activate(r *denseRow, fresh bool) error {
	if fresh {
		u.markCopy(r)
	}
	// A copy is one for the shortcut when its tokens step by the run's
	// period: a new step starts a new period. On unit cells a copy's
	// first cell is one above the row before it (markCopy, or the shift
	// tracker's verdict on the raw rows), which is still active: the
	// period stays 1.
	isCopy := false
	if r.copied {
		if k := len(u.rows); k > u.head && u.rows[k-1].freq == r.freq-1 {
			if step := r.lo - u.rows[k-1].lo; step == u.copyP {
				isCopy = true
			} else if step > 0 && step <= maxCopyPeriod {
				u.setPeriod(step)
			}
		}
	}
	if !isCopy {
		u.lastOriginal = r.freq
	}
	u.push(r)
	return u.advance(u.lastLo)
}

// markCopy sets r.copied for a row about to be appended to the active
// rows: whether it is the row linked before it shifted up by one cell, bit
// for bit. Rows prepared on the row goroutine get the flag from the shift
// tracker instead (buildUnit), which compares the rows before their cells
// above n+1 are cut; both verdicts give the same masses on every token up
// to n.
func (u *denseMLE) markCopy(r *denseRow) {
	r.copied = false
	if len(u.rows) > u.head {
		p := u.rows[len(u.rows)-1]
		r.copied = p.freq == r.freq-1 && r.lo == p.lo+1 && r.pi == p.pi && slices.Equal(r.m, p.m)
	}
}

// maxCopyPeriod bounds the period (tokens per unit) the MLE shortcut
// follows.
const maxCopyPeriod = 64

// setPeriod makes the MLE shortcut compare token j with token j-P.
func (u *denseMLE) setPeriod(P int64) {
	u.copyP = P
	u.memo = slices.Grow(u.memo[:0], int(P))[:P]
	for k := range u.memo {
		u.memo[k] = mleMemo{j: -1}
	}
}

// advance finalises tokens up to min(upTo, tokens).
func (u *denseMLE) advance(upTo int64) error {
	upTo = min(upTo, u.tokens)
	for j := u.pos + 1; j <= upTo; j++ {
		act := u.act[u.head:]
		if err := u.tokenCancelled(j, len(act)); err != nil {
			return err
		}
		// When the active rows are those of token j-P (P = copyP: 1 on
		// unit cells, the period of a stationary run's tokens otherwise)
		// shifted up by one row and every one of them is a bit-for-bit
		// copy of the row before it with its tokens P higher (the
		// stationary rows, q_i = 1), each row's mass on this token is its
		// predecessor's on token j-P, so the scan would pick the same
		// position: take it without scanning.
		head := int64(-1)
		if len(act) > 0 {
			head = u.rows[u.head].freq
		}
		var best int
		var found bool
		mm := &u.memo[j%u.copyP]
		if len(act) > 0 && mm.j == j-u.copyP && len(act) == mm.n && head == mm.head+1 && u.lastOriginal < head {
			best, found = mm.best, mm.found
			u.shortcuts++
		} else {
			best, found = argmaxRow(act, j)
		}
		*mm = mleMemo{j: j, head: head, best: best, n: len(act), found: found}
		a := u.last
		if found {
			a = act[best].gOPi
		}
		u.finish(j, a, false)
	}
	u.checkDone()
	return nil
}

// argmaxRow is eq. 11's scan on token j: the first active row (ascending
// frequency) whose mass on the token exceeds the best so far by the factor
// 1 + tieTol (mleBeats; found: some row has mass there).
func argmaxRow(act []denseActive, j int64) (best int, found bool) {
	best, bestM := -1, 0.0
	for x := range act {
		r := &act[x]
		if k := j - 1 - r.lo; k >= 0 {
			if m := r.m[k]; mleBeats(m, bestM, found) {
				best, bestM, found = x, m, true
			}
		}
	}
	return best, found
}

// denseMLERef is denseMLE's reference: the same MLE loop scanning every
// token (argmaxRow), with no copy shortcut.
type denseMLERef struct {
	denseRows
}

// newDenseMLERef returns a scanning MLE loop over dense rows of g
// finalising tokens 1..n and storing every one.
func newDenseMLERef(g G, n int64) *denseMLERef {
	u := &denseMLERef{denseRows: newDenseRows(g, n, 0)}
	u.noSums = true
	return u
}

// window returns the loop's rows, parameters and estimates (denseLoop).
func (u *denseMLERef) window() *denseRows { return &u.denseRows }

// activate appends r and finalises every token it makes final.
func (u *denseMLERef) activate(r *denseRow, _ bool) error {
	u.push(r)
	return u.advance(u.lastLo)
}

// advance finalises tokens up to min(upTo, tokens).
func (u *denseMLERef) advance(upTo int64) error {
	upTo = min(upTo, u.tokens)
	for j := u.pos + 1; j <= upTo; j++ {
		act := u.act[u.head:]
		if err := u.tokenCancelled(j, len(act)); err != nil {
			return err
		}
		a := u.last
		if best, found := argmaxRow(act, j); found {
			a = act[best].gOPi
		}
		u.finish(j, a, false)
	}
	u.checkDone()
	return nil
}
