package estimate

import (
	"github.com/pwsd/pwsd/internal/sanitize"
)

// rowState is one active row of the general builder: its pieces cut at the
// finalised position, their densities and suffix sums, and the running sums
// of the estimators.
type rowState struct {
	freq    int64
	pi      float64
	g       float64
	gOverPi float64
	lo, top float64
	pieces  []sanitize.Piece
	dens    []float64
	suffix  []float64 // suffix[k] = sum of P over pieces k.. (len(pieces)+1 entries)
	cur     int       // first piece that may still overlap the current token
	first   int       // 0-based index of the first token recorded in masses, -1 if none
	masses  []float64 // the row's probability of tokens first, first+1, ...
	sa      float64   // sum_{h<j} a_h pi_{i,h} over finalised tokens
	cell    float64   // unbiased: mass in the open unit cell
	sabs    float64   // unbiased: sum_{h<j} |a_h| pi_{i,h}, the cancellation in E_i
	lastM   float64   // fused biased-down: mass on the last token, not yet in sa
}

// advance returns the row's probability of token (pos, t] and its mass above
// pos, moving the cursor past pieces that end at or below pos; tp and tt are
// tol(pos) and tol(t).
func (r *rowState) advance(pos, t, tp, tt float64) (m, rem float64) {
	for r.cur < len(r.pieces) && r.pieces[r.cur].Hi <= pos+tp {
		r.cur++
	}
	if r.cur == len(r.pieces) {
		return 0, 0
	}
	p := r.pieces[r.cur]
	if p.Lo >= pos-tp {
		rem = p.P + r.suffix[r.cur+1]
	} else {
		rem = r.dens[r.cur]*(p.Hi-pos) + r.suffix[r.cur+1]
	}
	for k := r.cur; k < len(r.pieces) && r.pieces[k].Lo < t-tt; k++ {
		q := r.pieces[k]
		if q.Lo >= pos-tp && q.Hi <= t+tt {
			m += q.P
		} else if ov := min(q.Hi, t) - max(q.Lo, pos); ov > tt {
			m += r.dens[k] * ov
		}
		if q.Hi > t+tt {
			break
		}
	}
	return m, rem
}
