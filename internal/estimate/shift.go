package estimate

import (
	"errors"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// shiftTracker finds where the rows read become shifted copies of one
// another (q_i = 1 from some row on): the builders keep one to record the
// stationary tail, and the row goroutines keep their own (the marks they
// hand over, shiftMark, are adopted by the builder).
type shiftTracker struct {
	shiftSince int64            // rows shiftSince.. (read so far) are shifted copies; 0 = none
	pattern    []sanitize.Piece // row shiftSince relative to shiftSince
	patternPi  float64
	prev       []sanitize.Piece // previous row, for trackShift
	prevPi     float64
	prevSet    bool
	prevM      []float64 // trackShiftDense: previous row's dense masses on cells prevLo+1..
	prevLo     int64
}

// trackShift maintains shiftSince, the first frequency from which every row
// read so far is the previous one shifted by 1 (to rounding: 1e-12 relative
// on probabilities, 1e-9 on positions), with a copy of that row relative to
// its frequency.
func (tr *shiftTracker) trackShift(row sanitize.Row) {
	isShift := tr.prevSet && len(row.Pieces) == len(tr.prev) && math.Abs(row.Pi-tr.prevPi) <= 1e-12 && len(row.Pieces) > 0
	for k := 0; isShift && k < len(row.Pieces); k++ {
		p, q := row.Pieces[k], tr.prev[k]
		isShift = math.Abs(p.P-q.P) <= 1e-12*q.P && math.Abs(p.Lo-q.Lo-1) <= 1e-9*max(1, p.Lo) && math.Abs(p.Hi-q.Hi-1) <= 1e-9*max(1, p.Hi)
	}
	switch {
	case !isShift:
		tr.shiftSince = 0
	case tr.shiftSince == 0:
		f := row.Frequency - 1
		tr.shiftSince = f
		tr.pattern = tr.pattern[:0]
		for _, p := range tr.prev {
			tr.pattern = append(tr.pattern, sanitize.Piece{Lo: p.Lo - float64(f), Hi: p.Hi - float64(f), P: p.P})
		}
		tr.patternPi = tr.prevPi
	}
	tr.prev = append(tr.prev[:0], row.Pieces...)
	tr.prevPi = row.Pi
	tr.prevSet = true
}

// trackShiftDense is trackShift for a row on unit cells given in dense
// form (masses m on cells lo+1 .. lo+len(m), zeros allowed): the row's
// pieces are its positive cells, and it reaches the same verdicts as
// trackShift on those pieces as long as positions stay below
// denseShiftLimit, where trackShift's position tolerance (1e-9 relative)
// is below one unit, so that integer positions must shift exactly by 1.
//
// It reports whether the row is the previous one shifted up by one cell bit
// for bit (reporting probability and masses), which the dense MLE uses
// (denseRow.copied).
func (tr *shiftTracker) trackShiftDense(i int64, pi float64, lo int64, m []float64) (copied bool) {
	isShift := tr.prevSet && math.Abs(pi-tr.prevPi) <= 1e-12
	if isShift && lo == tr.prevLo+1 && slices.Equal(m, tr.prevM) && slices.ContainsFunc(m, func(v float64) bool { return v > 0 }) {
		// Bit-identical masses one cell up (the stationary rows): the
		// cell-by-cell walk below would accept them.
		copied = pi == tr.prevPi
	} else if isShift {
		// Walk the positive cells of both rows in step: cell lo+1+k of
		// this row must match cell prevLo+1+k' = lo+k of the previous one.
		k, kp, n := 0, 0, 0
		for isShift {
			for k < len(m) && !(m[k] > 0) {
				k++
			}
			for kp < len(tr.prevM) && !(tr.prevM[kp] > 0) {
				kp++
			}
			if k == len(m) || kp == len(tr.prevM) {
				isShift = k == len(m) && kp == len(tr.prevM) && n > 0
				break
			}
			p, q := m[k], tr.prevM[kp]
			isShift = lo+int64(k) == tr.prevLo+int64(kp)+1 && math.Abs(p-q) <= 1e-12*q
			k, kp, n = k+1, kp+1, n+1
		}
	}
	switch {
	case !isShift:
		tr.shiftSince = 0
	case tr.shiftSince == 0:
		f := i - 1
		tr.shiftSince = f
		tr.pattern = tr.pattern[:0]
		for k, v := range tr.prevM {
			if v > 0 {
				c := float64(tr.prevLo + int64(k))
				tr.pattern = append(tr.pattern, sanitize.Piece{Lo: c - float64(f), Hi: c + 1 - float64(f), P: v})
			}
		}
		tr.patternPi = tr.prevPi
	}
	tr.prevM = append(tr.prevM[:0], m...)
	tr.prevLo = lo
	tr.prevPi = pi
	tr.prevSet = true
	return copied
}

// shiftMark is a shift tracker's state after one row (trackShift run on the
// row goroutine): since is its shiftSince, and pattern and pi are set
// (pattern non-nil) on the row where a run of shifted copies begins.
type shiftMark struct {
	since   int64
	pattern []sanitize.Piece
	pi      float64
}

// track runs tr.trackShift on row and returns the mark the builder adopts.
func track(tr *shiftTracker, row sanitize.Row) shiftMark {
	before := tr.shiftSince
	tr.trackShift(row)
	return tr.markSince(before)
}

// markSince is the tracker's state after a row as a shiftMark, given its
// shiftSince before the row (the pattern is copied when the row began a
// run of shifted copies).
func (tr *shiftTracker) markSince(before int64) shiftMark {
	m := shiftMark{since: tr.shiftSince}
	if tr.shiftSince != 0 && before == 0 {
		m.pattern, m.pi = slices.Clone(tr.pattern), tr.patternPi
	}
	return m
}

// adopt takes over the tracker's state after a row (see shiftMark).
func (tr *shiftTracker) adopt(m *shiftMark) {
	tr.shiftSince = m.since
	if m.pattern != nil {
		tr.pattern, tr.patternPi = m.pattern, m.pi
	}
}

// denseShiftLimit bounds the frequencies trackShiftDense handles (see
// there): 1e-9 * 1e8 = 0.1 < 1.
const denseShiftLimit = 1e8

// stationarity asks a Stationary source where its rows become shifted
// copies, but only when the rows read end in such a run that starts at or
// below n (asking can be expensive for sources that would have to compute
// far ahead). A claim contradicted by the rows read is an error.
func (b *builder) stationarity(src RowSource) error {
	st, ok := src.(Stationary)
	if !ok || b.shiftSince == 0 || b.shiftSince > b.n {
		return nil
	}
	s, ok := st.StationaryFrom()
	if !ok || s < 1 || s > b.n {
		return nil
	}
	if s < b.shiftSince {
		return errors.New("estimate: the source claims stationary rows but a row is not a shifted copy")
	}
	b.statFrom, b.statOK, b.patternSet = s, true, true
	return nil
}
