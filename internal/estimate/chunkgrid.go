package estimate

import (
	"context"
	"fmt"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// buildChunksGrid is BuildChunks for Algorithm 5 (max_separation) rows
// whose break points lie on the exact 2^-20 grid (docs/algorithms.md, "How
// the estimator tables are built"): when every two consecutive break points
// of the band are farther apart than the general builder's tolerance, its
// tokens are exactly the sorted union of the break points and a row's mass
// on a token is its piece's P (the piece is the token) or the piece's
// density times the token's length, so the MLE row of each token is found
// in one pass over the rows' pieces with the general builder's tie rule.
// The statistics then come from chunkOf, as on the general path. It returns
// ok = false, having built nothing, where the condition fails (the caller
// takes the general path).
func buildChunksGrid(ctx context.Context, src RowSource, gs []G, size, k0, n, bandStart int64) (out [][]*Chunk, ok bool, err error) {
	lo, hi := k0*size, (k0+n)*size
	fhi := float64(hi)
	var band []sanitize.Row // every row from bandStart that reaches tokens <= hi
	pts := []float64{0}
	var active, scratch []float64 // points not yet final, sorted
	crumbs := false
	done := false
	e := src.Rows(bandStart, min(hi+maxLookahead, sanitize.MaxFrequency), func(r sanitize.Row) bool {
		if r.Frequency%1024 == 0 {
			if err = checkCancelled(ctx, r.Frequency, len(r.Pieces)); err != nil {
				return false
			}
		}
		if len(r.Pieces) > 0 && r.Pieces[0].Lo >= fhi {
			done = true // supports only move up: no later row reaches the run
			return false
		}
		r = r.Clone()
		band = append(band, r)
		if len(r.Pieces) > 0 {
			// Points below this row's support are final: later supports
			// only move up (a row reaching below them takes the general
			// path, which drops such crumbs).
			low := r.Pieces[0].Lo
			if len(pts) > 0 && low < pts[len(pts)-1] {
				crumbs = true
			}
			k := 0
			for k < len(active) && active[k] < low {
				k++
			}
			pts = append(pts, active[:k]...)
			active = mergePoints(active[k:], r.Pieces, fhi, &scratch)
		}
		return true
	})
	pts = append(pts, active...)
	if crumbs {
		return nil, false, err
	}
	if e != nil {
		return nil, false, fmt.Errorf("estimate: chunk %d: reading sanitizer rows: %w", k0, e)
	}
	if err != nil || !done {
		return nil, false, err
	}
	for k := 1; k < len(pts); k++ {
		if pts[k]-pts[k-1] <= tol(pts[k]) || pts[k] != pts[k] {
			return nil, false, nil // the general builder would merge them
		}
	}
	// The MLE row of each token (pts[j-1], pts[j]].
	bestM := make([]float64, len(pts))
	best := make([]int, len(pts)) // index into band + 1; 0: none
	for ri, r := range band {
		for _, pc := range r.Pieces {
			if !(pc.P > 0) || pc.Lo >= fhi {
				continue
			}
			j0, found := slices.BinarySearch(pts, pc.Lo)
			if !found {
				return nil, false, nil
			}
			dens := pc.P / (pc.Hi - pc.Lo)
			for j := j0 + 1; j < len(pts) && pts[j-1] < pc.Hi; j++ {
				m := pc.P
				if pts[j-1] != pc.Lo || pts[j] != pc.Hi {
					m = dens * (pts[j] - pts[j-1])
				}
				if m > 0 && (best[j] == 0 || m > bestM[j]*(1+tieTol)) {
					best[j], bestM[j] = ri+1, m
				}
			}
		}
	}
	var rows []sanitize.Row
	for _, r := range band {
		if r.Frequency > lo && r.Frequency <= hi {
			rows = append(rows, r)
		}
	}
	if int64(len(rows)) != hi-lo {
		return nil, false, fmt.Errorf("estimate: the sanitizer table ended inside chunk %d", k0)
	}
	out = make([][]*Chunk, n)
	for k := range out {
		out[k] = make([]*Chunk, len(gs))
	}
	for m, g := range gs {
		t := &Table{G: g, Estimator: MLE, MaxFrequency: hi, Bounds: pts, A: make([]float64, len(pts)-1)}
		prev := 0.0
		for j := 1; j < len(pts); j++ {
			if b := best[j]; b > 0 {
				prev = 0
				if r := band[b-1]; r.Pi > 0 {
					prev = g.at(r.Frequency) / r.Pi
				}
			}
			t.A[j-1] = prev
		}
		for k := range n {
			c, err := chunkOf(t, g, size, k0+k, bandStart, rows[k*size:(k+1)*size])
			if err != nil {
				return nil, false, err
			}
			out[k][m] = c
		}
	}
	return out, true, nil
}

// mergePoints merges the break points (at most top) of one row's sorted
// pieces into the sorted distinct points pts, in one pass (a row adds few
// points to those of the rows before it).
func mergePoints(pts []float64, pieces []sanitize.Piece, top float64, scratch *[]float64) []float64 {
	row := (*scratch)[:0]
	for _, pc := range pieces {
		for _, x := range [2]float64{pc.Lo, pc.Hi} {
			if x <= top && (len(row) == 0 || x > row[len(row)-1]) {
				row = append(row, x)
			}
		}
	}
	*scratch = row
	// Fast path: every point already present.
	i, fresh := 0, 0
	for _, x := range row {
		for i < len(pts) && pts[i] < x {
			i++
		}
		if i == len(pts) || pts[i] != x {
			fresh++
		}
	}
	if fresh == 0 {
		return pts
	}
	out := make([]float64, 0, len(pts)+fresh)
	i = 0
	for _, x := range row {
		for i < len(pts) && pts[i] < x {
			out = append(out, pts[i])
			i++
		}
		if i == len(pts) || pts[i] != x {
			out = append(out, x)
		}
	}
	return append(out, pts[i:]...)
}
