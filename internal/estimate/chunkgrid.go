package estimate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

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
// The same walk gives each row's masses on the tokens, from which the
// statistics are summed in chunkOf's order (unless estimatesOnly: then
// chunks hold tokens and estimates only, and the band may start at the
// run's lowest row). It returns
// ok = false, having built nothing, where the condition fails (the caller
// takes the general path).
//
// With at (estimates only), the band also reaches at.reach below and above
// the values at.values, and the statistics at those values' MLE
// frequencies are collected into at.got where they are exact (statsAt).
func buildChunksGrid(ctx context.Context, src RowSource, gs []G, size, k0, n, bandStart int64, estimatesOnly bool, at *statsAt) (out [][]*Chunk, ok bool, err error) {
	lo, hi := k0*size, (k0+n)*size
	fhi := float64(hi)
	if at != nil {
		// The grid reaches past the run (every integer is a break point,
		// so the run's own tokens, estimates and ties are unchanged).
		bandStart, fhi = at.band(bandStart, fhi)
	}
	var band []sanitize.Row // every row from bandStart that reaches tokens <= hi
	var slab pieceSlab      // their pieces
	defer slab.release()
	// The points: 0 (the first token's lower end), then every row's end
	// points. 0 starts among the points not yet final, so that it merges
	// with the rows whose supports reach down to it (a run from chunk 0)
	// rather than standing twice.
	var pts []float64            // the final points, sorted
	active := []float64{0}       // the points not yet final, sorted
	var spare, scratch []float64 // mergePoints' other buffer, and its row's points
	crumbs := false
	done, stopped := false, false
	// add takes row r into the band, its pieces in the slab already: only
	// those starting at or below fhi (rowPoints, walkCells and the cells
	// stop there), and at least one unless r has none.
	add := func(r sanitize.Row) {
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
			active = mergePoints(active[k:], r.Pieces, fhi, &scratch, &spare)
		}
	}
	// cancelled checks ctx now and then.
	cancelled := func(freq int64, width int) bool {
		if freq%1024 == 0 {
			err = checkCancelled(ctx, freq, width)
		}
		return err != nil
	}
	far := min(hi+maxLookahead, sanitize.MaxFrequency)
	read := func(from, to int64) error {
		return src.Rows(from, to, func(r sanitize.Row) bool {
			if cancelled(r.Frequency, len(r.Pieces)) {
				stopped = true
				return false
			}
			if len(r.Pieces) > 0 && r.Pieces[0].Lo >= fhi {
				done, stopped = true, true // supports only move up: no later row reaches the run
				return false
			}
			if n := len(r.Pieces); n > 0 && r.Pieces[n-1].Lo > fhi {
				r.Pieces = r.Pieces[:sort.Search(n, func(i int) bool { return r.Pieces[i].Lo > fhi })]
			}
			add(slab.clone(r))
			return true
		})
	}
	if ps, ok := src.(pieceSource); ok && !referenceOnly {
		// The table's own rows, their pieces written into the slab at once
		// (pieceSlab.pieces): the same pieces as Rows and the copy above,
		// without the copy (the pair of the read above,
		// TestChunkGridPieceRowsMatchRows).
		read = func(from, to int64) error {
			return ps.PieceRows(from, to, func(i int64, pi float64, x, m []float64, d int64, _ bool) bool {
				if cancelled(i, len(m)) {
					stopped = true
					return false
				}
				pieces, above := slab.pieces(x, m, d, fhi)
				if above {
					done, stopped = true, true
					return false
				}
				add(sanitize.Row{Frequency: i, Pi: pi, Pieces: pieces})
				return true
			})
		}
	}
	e := readRows(bandStart, walkEnd(src, fhi, far), far, &stopped, read)
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
	// The MLE row of each token (pts[j-1], pts[j]]: the general builder's
	// tie rule over the rows in order.
	bestM := make([]float64, len(pts))
	best := make([]int, len(pts)) // index into band + 1; 0: none
	var cells [statsBatch]gridCells
	for ri, r := range band {
		if !mleOf(r, ri, pts, fhi, best, bestM) {
			return nil, false, nil
		}
	}
	// The run's rows lo+1 .. hi are consecutive in band.
	first := -1
	for ri, r := range band {
		if r.Frequency == lo+1 {
			first = ri
			break
		}
	}
	if first < 0 || int64(len(band)-first) < hi-lo || band[first+int(hi-lo)-1].Frequency != hi {
		return nil, false, fmt.Errorf("estimate: the sanitizer table ended inside chunk %d", k0)
	}
	rows := band[first : first+int(hi-lo)]
	out = make([][]*Chunk, n)
	tables := make([]*Table, len(gs))
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
		tables[m] = t
	}
	for k := range out {
		out[k] = make([]*Chunk, len(gs))
		for m, g := range gs {
			c, err := chunkTokens(tables[m], g, size, k0+int64(k))
			if err != nil {
				return nil, false, err
			}
			if !estimatesOnly {
				c.Frequencies = make([]FrequencyStats, size)
			}
			out[k][m] = c
		}
	}
	if estimatesOnly {
		if at != nil {
			at.collect(band, pts, fhi, bandStart, tables, best)
		}
		return out, true, nil
	}
	// Each row's statistics, statsBatch rows at a time, from its cells
	// (found once for every g).
	jobs := make([]statsJob, 0, statsBatch)
	for i0 := 0; i0 < len(rows); i0 += statsBatch {
		batch := rows[i0:min(i0+statsBatch, len(rows))]
		for x, r := range batch {
			if len(r.Pieces) > 0 && r.Pieces[0].Lo < float64(bandStart-1) {
				return nil, false, fmt.Errorf("estimate: internal error: row %d reaches below chunk %d's band", r.Frequency, k0)
			}
			cells[x].of(r, pts, fhi)
		}
		for m, g := range gs {
			jobs = jobs[:0]
			for x, r := range batch {
				cl := &cells[x]
				cl.a = cl.a[:0]
				for _, j := range cl.tok {
					cl.a = append(cl.a, tables[m].A[j-1])
				}
				i := int64(i0 + x)
				jobs = append(jobs, statsJob{freq: r.Frequency, g: g.at(r.Frequency), pi: r.Pi,
					masses: cl.mass, a: cl.a, out: &out[i/size][m].Frequencies[i%size]})
			}
			rowStatsBatch(jobs)
		}
	}
	return out, true, nil
}

// gridCells are one row's masses on the grid's tokens: mass[x] on token
// (pts[tok[x]-1], pts[tok[x]]], in the order of its pieces and tokens (the
// order in which chunkOf sums them), and a, a buffer for the tokens'
// estimates.
type gridCells struct {
	tok     []int32
	mass, a []float64
}

// of finds row r's cells on the tokens pts (below top) in one walk: a
// piece's P where the piece is the token, else its density times the
// token's length. It returns false when a piece's lower end is not a point
// (the caller takes the general path).
func (c *gridCells) of(r sanitize.Row, pts []float64, top float64) bool {
	c.tok, c.mass = c.tok[:0], c.mass[:0]
	return walkCells(r, pts, top, c, nil)
}

// mlePass is the MLE pass's state: each token's best row so far (index
// into the band + 1; 0: none) and its mass there, and the row offered.
type mlePass struct {
	best  []int
	bestM []float64
	ri    int
}

// mleOf is the MLE pass's step for row ri of the band: the row's cells as
// gridCells.of finds them, each offered to its token's best row so far
// (mleBeats: the general builder's tie rule, rows in order), without
// storing them. It returns false where of does (the caller takes the
// general path; best is then discarded). The pair of of followed by that
// loop over its cells (TestMLEOfMatchesCells).
func mleOf(r sanitize.Row, ri int, pts []float64, top float64, best []int, bestM []float64) bool {
	return walkCells(r, pts, top, nil, &mlePass{best: best, bestM: bestM, ri: ri})
}

// walkCells is the one walk of of and mleOf: row r's cells on the tokens
// pts below top, each appended to c or, with mle set, offered to its
// token's best row (a branch the processor predicts: one is nil throughout).
func walkCells(r sanitize.Row, pts []float64, top float64, c *gridCells, mle *mlePass) bool {
	j0 := -1
	for _, pc := range r.Pieces {
		if pc.Lo >= top {
			break // pieces are sorted: the rest lie above the run too
		}
		if j0 < 0 {
			j0, _ = slices.BinarySearch(pts, pc.Lo)
		}
		for j0 < len(pts) && pts[j0] < pc.Lo {
			j0++
		}
		if j0 == len(pts) || pts[j0] != pc.Lo {
			return false
		}
		dens := pc.P / (pc.Hi - pc.Lo)
		for j := j0 + 1; j < len(pts) && pts[j-1] < pc.Hi; j++ {
			m := pc.P
			if pts[j-1] != pc.Lo || pts[j] != pc.Hi {
				m = dens * (pts[j] - pts[j-1])
			}
			if mle != nil {
				if mleBeats(m, mle.bestM[j], mle.best[j] != 0) {
					mle.best[j], mle.bestM[j] = mle.ri+1, m
				}
				continue
			}
			c.tok = append(c.tok, int32(j))
			c.mass = append(c.mass, m)
		}
	}
	return true
}

// pieceSlab copies rows' pieces into large shared blocks: one allocation
// per pieceSlabSize pieces rather than one per row. Its blocks come from
// and go back to slabBlocks (release), so that a process building chunk
// after chunk reuses them instead of allocating and zeroing megabytes per
// run.
type pieceSlab struct {
	free   []sanitize.Piece
	blocks []*[]sanitize.Piece
}

// pieceSlabSize is the number of pieces of one block of a pieceSlab.
const pieceSlabSize = 1 << 14

// slabBlocks holds the blocks of released pieceSlabs (each pieceSlabSize
// pieces): a cache of memory, never of values (every piece is written by
// clone before it is read).
var slabBlocks = sync.Pool{New: func() any { b := make([]sanitize.Piece, pieceSlabSize); return &b }}

// grow gives the slab room for n more pieces: a new block (or, past a
// block's size, a slice of its own).
func (s *pieceSlab) grow(n int) {
	if n > pieceSlabSize {
		s.free = make([]sanitize.Piece, n)
		return
	}
	b := slabBlocks.Get().(*[]sanitize.Piece)
	s.blocks = append(s.blocks, b)
	s.free = *b
}

// clone returns r with its pieces copied into the slab.
func (s *pieceSlab) clone(r sanitize.Row) sanitize.Row {
	n := len(r.Pieces)
	if n > len(s.free) {
		s.grow(n)
	}
	dst := s.free[:n:n]
	s.free = s.free[n:]
	copy(dst, r.Pieces)
	r.Pieces = dst
	return r
}

// pieces writes into the slab the pieces of a row in the table's own form
// (sanitize.Table.PieceRows: break points x and masses m, shifted by d)
// that Rows would give, those starting at or below top only, and returns
// them; above reports that the row's first piece starts at or above top
// (nothing is written then). The pieces are those of Rows bit for bit: the
// same additions x[k] + d, the pieces of mass <= 0 left out.
func (s *pieceSlab) pieces(x, m []float64, d int64, top float64) (out []sanitize.Piece, above bool) {
	fd := float64(d)
	k0 := 0
	for k0 < len(m) && !(m[k0] > 0) {
		k0++
	}
	if k0 == len(m) {
		return nil, false
	}
	if x[k0]+fd >= top {
		return nil, true
	}
	if n := len(m) - k0; n > len(s.free) {
		s.grow(n)
	}
	dst := s.free
	n := 0
	for k := k0; k < len(m); k++ {
		lo := x[k] + fd
		if lo > top {
			break
		}
		if v := m[k]; v > 0 {
			dst[n] = sanitize.Piece{Lo: lo, Hi: x[k+1] + fd, P: v}
			n++
		}
	}
	out = dst[:n:n]
	s.free = s.free[n:]
	return out, false
}

// release gives the slab's blocks back: no row cloned into it may be read
// afterwards.
func (s *pieceSlab) release() {
	for _, b := range s.blocks {
		slabBlocks.Put(b)
	}
	s.blocks, s.free = nil, nil
}

// mergePoints merges the break points (at most top) of one row's sorted
// pieces into the sorted distinct points pts, in one pass (a row adds few
// points to those of the rows before it). The result is pts itself (when
// the row adds no point, or adds them all above pts and pts' buffer has
// room: appended in place), or is written into *spare, which then takes
// pts' buffer (the two alternate). The pair of mergePointsRef.
func mergePoints(pts []float64, pieces []sanitize.Piece, top float64, scratch, spare *[]float64) []float64 {
	row := rowPoints((*scratch)[:0], pieces, top)
	*scratch = row
	// The row's first point not in pts (r), and where it goes (i).
	i, r := 0, 0
	for ; r < len(row); r++ {
		x := row[r]
		for i < len(pts) && pts[i] < x {
			i++
		}
		if i == len(pts) || pts[i] != x {
			break
		}
	}
	if r == len(row) {
		return pts
	}
	rest := row[r:]
	if i == len(pts) && len(pts)+len(rest) <= cap(pts) {
		// All the rest lie above pts (the usual case: supports move
		// up), and its buffer has room.
		return append(pts, rest...)
	}
	out := append(slices.Grow((*spare)[:0], len(pts)+len(rest)), pts[:i]...)
	*spare = pts[:0]
	for _, x := range rest {
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

// rowPoints appends to dst the distinct end points (at most top) of sorted
// pieces, ascending.
func rowPoints(dst []float64, pieces []sanitize.Piece, top float64) []float64 {
	for _, pc := range pieces {
		for _, x := range [2]float64{pc.Lo, pc.Hi} {
			if x <= top && (len(dst) == 0 || x > dst[len(dst)-1]) {
				dst = append(dst, x)
			}
		}
	}
	return dst
}

// mergePointsRef is mergePoints' plain reference: the sorted union of pts
// and the row's points, in a new slice.
func mergePointsRef(pts []float64, pieces []sanitize.Piece, top float64) []float64 {
	out := append(slices.Clone(pts), rowPoints(nil, pieces, top)...)
	slices.Sort(out)
	return slices.Compact(out)
}
