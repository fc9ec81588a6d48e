package estimate

import (
	"errors"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// trackShift maintains shiftSince, the first frequency from which every row
// read so far is the previous one shifted by 1 (to rounding: 1e-12 relative
// on probabilities, 1e-9 on positions), with a copy of that row relative to
// its frequency.
func (b *builder) trackShift(row sanitize.Row) {
	isShift := b.prevSet && len(row.Pieces) == len(b.prev) && math.Abs(row.Pi-b.prevPi) <= 1e-12 && len(row.Pieces) > 0
	for k := 0; isShift && k < len(row.Pieces); k++ {
		p, q := row.Pieces[k], b.prev[k]
		isShift = math.Abs(p.P-q.P) <= 1e-12*q.P && math.Abs(p.Lo-q.Lo-1) <= 1e-9*max(1, p.Lo) && math.Abs(p.Hi-q.Hi-1) <= 1e-9*max(1, p.Hi)
	}
	switch {
	case !isShift:
		b.shiftSince = 0
	case b.shiftSince == 0:
		f := row.Frequency - 1
		b.shiftSince = f
		b.pattern = b.pattern[:0]
		for _, p := range b.prev {
			b.pattern = append(b.pattern, sanitize.Piece{Lo: p.Lo - float64(f), Hi: p.Hi - float64(f), P: p.P})
		}
		b.patternPi = b.prevPi
	}
	b.prev = append(b.prev[:0], row.Pieces...)
	b.prevPi = row.Pi
	b.prevSet = true
}

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
