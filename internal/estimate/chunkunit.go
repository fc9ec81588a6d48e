package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// buildChunksUnit is BuildChunks for Algorithm 4 (discrete) rows read in
// dense form (sanitize.Table.UnitRows): tokens are the unit cells, so the
// MLE row of each cell is found in one pass over the rows' cells, with the
// general builder's rule (generalBuilder.processToken: rows in ascending frequency,
// a row takes the cell when its mass exceeds the best so far by the factor
// 1 + tieTol, mleBeats; a cell no row reaches repeats the estimate below it), and
// each row's statistics come from its cell masses, which are the general
// builder's masses for unit pieces (the piece's P). Bit for bit the
// general path (TestChunkEqualsTable runs both).
//
// With at, the band reaches at.reach below and above at's values and the
// statistics at their MLE frequencies are collected into at.got where they
// are exact (statsAt.collectUnit).
func buildChunksUnit(ctx context.Context, us unitSource, gs []G, size, k0, n, bandStart int64, at *statsAt) ([][]*Chunk, error) {
	lo, hi := k0*size, (k0+n)*size
	top := hi // the cells read: up to hi, or further for at
	if at != nil {
		var t float64
		bandStart, t = at.band(bandStart, float64(hi))
		top = int64(t)
	}
	base := bandStart - 1 // cell c (1-based position base+c) is (base+c-1, base+c]
	cells := int(top - base)
	bestM := make([]float64, cells+1)
	bestI := make([]int64, cells+1) // 0: no row reaches the cell
	pis := make(map[int64]float64, cells)
	type runRow struct {
		i      int64
		pi     float64
		lo     float64
		masses []float64
	}
	var rows []runRow
	var err error
	done, stopped := false, false
	row := func(i int64, pi, rlo float64, m []float64) bool {
		if i%1024 == 0 {
			if err = checkCancelled(ctx, i, len(m)); err != nil {
				return false
			}
		}
		first := -1
		for k, v := range m {
			if v > 0 {
				first = k
				break
			}
		}
		if first >= 0 && rlo+float64(first) >= float64(top) {
			done = true // supports only move up: no later row reaches the run
			return false
		}
		pis[i] = pi
		for k, v := range m {
			c := int(rlo+float64(k)+1) - int(base) // the cell (rlo+k, rlo+k+1]
			if c < 1 || c > cells {
				continue
			}
			if mleBeats(v, bestM[c], bestI[c] != 0) {
				bestI[c], bestM[c] = i, v
			}
		}
		if i > lo && i <= top {
			rows = append(rows, runRow{i: i, pi: pi, lo: rlo, masses: append([]float64(nil), m...)})
		}
		return true
	}
	far := min(hi+maxLookahead, sanitize.MaxFrequency)
	e := readRows(bandStart, walkEnd(us, float64(top), far), far, &stopped, func(from, to int64) error {
		return us.UnitRows(from, to, func(i int64, pi, rlo float64, m []float64) bool {
			stopped = !row(i, pi, rlo, m)
			return !stopped
		})
	})
	if e != nil {
		return nil, fmt.Errorf("estimate: chunk %d: reading sanitizer rows: %w", k0, e)
	}
	if err != nil {
		return nil, err
	}
	if !done {
		return nil, errors.New("estimate: row supports do not move past the chunk")
	}
	if int64(len(rows)) < hi-lo {
		return nil, errors.New("estimate: the sanitizer table ended inside the chunk")
	}
	out := make([][]*Chunk, n)
	for k := range out {
		out[k] = make([]*Chunk, len(gs))
	}
	if at != nil {
		// The MLE row of each value's cell (v in (base+c-1, base+c]).
		at.wants = map[int64]bool{}
		for _, v := range at.values {
			if c := int(math.Ceil(v)) - int(base); c >= 1 && c <= cells && bestI[c] > 0 {
				at.wants[bestI[c]] = true
			}
		}
	}
	a := make([]float64, cells+1)
	var masses, as []float64
	for m, g := range gs {
		prev := 0.0
		for c := 1; c <= cells; c++ {
			if i := bestI[c]; i > 0 {
				if pi := pis[i]; pi > 0 {
					prev = g.at(i) / pi
				} else {
					prev = 0
				}
			}
			a[c] = prev
		}
		for k := range n {
			klo := (k0 + k) * size
			ch := &Chunk{G: g, Size: size, Index: k0 + k, Bounds: make([]float64, size+1), A: make([]float64, size),
				Frequencies: make([]FrequencyStats, 0, size)}
			for j := range size + 1 {
				ch.Bounds[j] = float64(klo + j)
			}
			copy(ch.A, a[klo-base+1:klo-base+1+size])
			for _, r := range rows[k*size : (k+1)*size] {
				masses, as = masses[:0], as[:0]
				for q, v := range r.masses {
					if v > 0 {
						c := int(r.lo+float64(q)+1) - int(base)
						if c < 1 {
							return nil, fmt.Errorf("estimate: internal error: row %d reaches below chunk %d's band", r.i, k0+k)
						}
						masses = append(masses, v)
						as = append(as, a[c])
					}
				}
				ch.Frequencies = append(ch.Frequencies, rowStats(r.i, g.at(r.i), r.pi, masses, as))
			}
			out[k][m] = ch
		}
		if at != nil {
			for _, r := range rows {
				// Exact where every cell of the row lies in the band's
				// cells (all of them final).
				if !at.wants[r.i] || r.lo < float64(base) || int64(r.lo)+int64(len(r.masses)) > top {
					continue
				}
				masses, as = masses[:0], as[:0]
				for q, v := range r.masses {
					if v > 0 {
						masses = append(masses, v)
						as = append(as, a[int(r.lo+float64(q)+1)-int(base)])
					}
				}
				at.put(r.i, m, len(gs), rowStats(r.i, g.at(r.i), r.pi, masses, as))
			}
		}
	}
	return out, nil
}
