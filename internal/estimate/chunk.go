package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// ChunkSize returns the number of frequencies one MLE chunk covers under
// privacy p: the power of two at least L + 16 (and 64), about half a row's
// support. Consecutive chunks are built in one pass (MaxChunkRun), so the
// size matters where a release's values lie far apart: a key alone in its
// stretch then costs its chunks, about half the rows of one chunk of
// 4 L + 16 (docs/performance.md).
func ChunkSize(p sanitize.Privacy) int64 {
	need := math.Ceil(sanitize.L(p)) + 16
	size := int64(64)
	for float64(size) < need && size < 1<<30 {
		size *= 2
	}
	return size
}

// Chunk is the part of an MLE estimator table on one stretch of the
// frequency axis: chunk k of size S covers the sanitized values and the true
// frequencies in (k S, (k+1) S]. Its tokens, their MLE
// estimates a_j and the per-frequency statistics are the ones the full
// table (Build with any MaxFrequency at or above the chunk's top) has
// there, bit for bit: eq. 11's a_j depends only on the rows whose support
// holds token j, and a row's statistics only on the tokens of its support
// (docs/algorithms.md, "Estimates near the sample's keys").
//
// Chunks are the unit pwsd builds, caches and stores for frequencies
// releases: they depend on the parameters and k only, so a team that
// releases under the same parameters every day reuses them, and a sample
// needs only the chunks near its values, whatever its largest frequency.
type Chunk struct {
	G           G
	Size        int64            // S (ChunkSize)
	Index       int64            // k
	Bounds      []float64        // token bounds, Bounds[0] = k S, last = (k+1) S
	A           []float64        // per-token MLE estimates
	Frequencies []FrequencyStats // frequencies k S + 1 .. (k+1) S
}

// ChunkOf returns the index of the chunk of size size holding value or
// frequency v > 0. A value so small that v/size underflows to 0 (a
// subnormal such as 5e-324) lies in chunk 0, whose range (0, size] holds
// it: without the floor it was chunk -1, and an import of it a 500.
func ChunkOf(v float64, size int64) int64 { return max(0, int64(math.Ceil(v/float64(size)))-1) }

// Lo returns the bottom of the chunk's range (Lo, Hi].
func (c *Chunk) Lo() float64 { return float64(c.Index * c.Size) }

// Hi returns the top of the chunk's range.
func (c *Chunk) Hi() float64 { return float64((c.Index + 1) * c.Size) }

// Estimate returns a_j of the token holding value v, which must lie in the
// chunk's range.
func (c *Chunk) Estimate(v float64) (float64, error) {
	if !(v > c.Lo() && v <= c.Hi()) {
		return 0, fmt.Errorf("estimate: value %g outside chunk %d", v, c.Index)
	}
	k, _ := slices.BinarySearch(c.Bounds, v-tol(v)) // first bound >= v (within tolerance)
	k = min(max(k, 1), len(c.A))
	return c.A[k-1], nil
}

// Stats returns the statistics of frequency i, which must lie in the
// chunk's range, of a chunk that holds them (HasStats).
func (c *Chunk) Stats(i int64) (FrequencyStats, error) {
	lo := c.Index * c.Size
	if i <= lo || i > lo+c.Size {
		return FrequencyStats{}, fmt.Errorf("estimate: frequency %d outside chunk %d", i, c.Index)
	}
	if !c.HasStats() {
		return FrequencyStats{}, fmt.Errorf("estimate: chunk %d holds estimates only (BuildChunkEstimates)", c.Index)
	}
	return c.Frequencies[i-lo-1], nil
}

// HasStats reports whether the chunk holds its frequencies' statistics
// (BuildChunks) or its tokens and estimates only (BuildChunkEstimates).
func (c *Chunk) HasStats() bool { return int64(len(c.Frequencies)) == c.Size }

// SizeBytes returns about how many bytes the chunk holds.
func (c *Chunk) SizeBytes() int64 {
	return int64(cap(c.Bounds)+cap(c.A))*8 + int64(cap(c.Frequencies))*56 + 128
}

// BuildChunk builds MLE chunk k of size size of g over the rows of src
// (BuildChunks).
func BuildChunk(ctx context.Context, src RowSource, g G, size, k int64) (*Chunk, error) {
	cs, err := BuildChunks(ctx, src, []G{g}, size, k, 1)
	if err != nil {
		return nil, err
	}
	return cs[0][0], nil
}

// MaxChunkRun returns how many consecutive chunks of size size BuildChunks
// builds in one pass at most under privacy p: the run's rows are kept until
// its statistics are computed, so a run holds at most about 2^20 pieces.
func MaxChunkRun(p sanitize.Privacy, size int64) int64 {
	w := 3*math.Ceil(sanitize.L(p)) + 8 // pieces per row, generously
	return max(1, int64(float64(1<<20)/(float64(size)*w)))
}

// BuildChunks builds the MLE chunks k0 .. k0+n-1 of size size of each g
// over the rows of src in one pass: out[k-k0][m] is chunk k of gs[m]. It
// reads the rows from the start of the support of the run's lowest row to
// where the rows' supports have passed its top, about n size + 4 L rows:
// with a source whose rows cost O(L) each wherever they lie
// (sanitize.Table's rows by restart), a chunk costs the same at frequency
// 10^3 and 10^9.
func BuildChunks(ctx context.Context, src RowSource, gs []G, size, k0, n int64) ([][]*Chunk, error) {
	return buildChunks(ctx, src, gs, size, k0, n, false)
}

// BuildChunkEstimates is BuildChunks for the answers that read only the
// chunks' tokens and estimates (a sanitized value's a_j, a key's MLE
// frequency): its chunks may hold no statistics (Chunk.HasStats), which
// spares the statistics and, for Algorithm 5 rows on the exact grid, the
// rows below the run (the band starts at the run's lowest row: rows below
// it put no mass above it). Tokens and estimates equal BuildChunks' bit for
// bit.
func BuildChunkEstimates(ctx context.Context, src RowSource, gs []G, size, k0, n int64) ([][]*Chunk, error) {
	return buildChunks(ctx, src, gs, size, k0, n, true)
}

func buildChunks(ctx context.Context, src RowSource, gs []G, size, k0, n int64, estimatesOnly bool) ([][]*Chunk, error) {
	out, err := Open(ctx, src, Ask{Chunks: &ChunkAsk{Gs: gs, Size: size, First: k0, Count: n, EstimatesOnly: estimatesOnly}})
	if err != nil {
		return nil, err
	}
	return out.Chunks, nil
}

// buildChunksGeneral is BuildChunks on general loops made by newLoop (any
// row source): on newEstimatesOnlyRef, the reference the fast chunk
// builders are tested against.
func buildChunksGeneral(ctx context.Context, src RowSource, newLoop newGeneralLoop, gs []G, size, k0, n, bandStart int64) ([][]*Chunk, error) {
	lo, hi := k0*size, (k0+n)*size
	builders := make([]generalLoop, len(gs))
	for m, g := range gs {
		builders[m] = newLoop(ctx, g, MLE, hi, bandStart, 0)
	}
	var rows []sanitize.Row
	var err error
	fn := func(row sanitize.Row, dens []float64, cerr error, _ *shiftMark) bool {
		if err = builders[0].cancelled(row.Frequency, len(row.Pieces)); err != nil {
			return false
		}
		done := true
		for _, b := range builders {
			if b.done {
				continue
			}
			if err = b.addChecked(row, dens, cerr, nil); err != nil {
				return false
			}
			if err = b.advance(); err != nil {
				return false
			}
			done = done && b.done
		}
		if row.Frequency > lo && row.Frequency <= hi {
			rows = append(rows, row.Clone())
		}
		return !done
	}
	last := min(hi+maxLookahead, sanitize.MaxFrequency)
	// Runs are short and built two at a time (the service's workers), so
	// the rows are read on this goroutine, asked first up to where the
	// run expects to stop (walkEnd).
	stopped := false
	e := readRows(bandStart, walkEnd(src, float64(hi), last), last, &stopped, func(from, to int64) error {
		return serialRows(src, from, to, nil, func(row sanitize.Row, dens []float64, cerr error, mark *shiftMark) bool {
			stopped = !fn(row, dens, cerr, mark)
			return !stopped
		})
	})
	if e != nil {
		return nil, fmt.Errorf("estimate: chunk %d: reading sanitizer rows: %w", k0, e)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(rows)) != hi-lo {
		return nil, errors.New("estimate: the sanitizer table ended inside the chunk")
	}
	out := make([][]*Chunk, n)
	for k := range out {
		out[k] = make([]*Chunk, len(gs))
	}
	for m, b := range builders {
		if !b.done && b.nextFreq <= last {
			b.exhausted = true
			if err := b.advance(); err != nil {
				return nil, err
			}
		}
		if !b.done {
			return nil, errors.New("estimate: row supports do not move past the chunk")
		}
		for k := range n {
			c, err := chunkOf(b.t, gs[m], size, k0+k, bandStart, rows[k*size:(k+1)*size])
			if err != nil {
				return nil, err
			}
			out[k][m] = c
		}
	}
	return out, nil
}

// chunkOf cuts chunk k out of the band table t (tokens from bandStart - 1
// on) and computes its rows' statistics.
func chunkOf(t *Table, g G, size, k, bandStart int64, rows []sanitize.Row) (*Chunk, error) {
	c, err := chunkTokens(t, g, size, k)
	if err != nil {
		return nil, err
	}
	// Statistics of each row from its outcomes on the band's tokens.
	c.Frequencies = make([]FrequencyStats, 0, size)
	var masses, as []float64
	for _, r := range rows {
		masses, as = masses[:0], as[:0]
		for _, pc := range r.Pieces {
			if pc.Lo < float64(bandStart-1) {
				return nil, fmt.Errorf("estimate: internal error: row %d reaches below chunk %d's band", r.Frequency, k)
			}
			density := pc.P / (pc.Hi - pc.Lo)
			m, _ := slices.BinarySearch(t.Bounds, pc.Lo+tol(pc.Lo))
			// The builder's rule (rowState.advance): a piece inside the
			// token puts its P there, else its density times the overlap.
			for m = max(m, 1); m < len(t.Bounds) && t.Bounds[m-1] < pc.Hi-tol(pc.Hi); m++ {
				pos, top := t.Bounds[m-1], t.Bounds[m]
				mass := 0.0
				if pc.Lo >= pos-tol(pos) && pc.Hi <= top+tol(top) {
					mass = pc.P
				} else if ov := math.Min(pc.Hi, top) - math.Max(pc.Lo, pos); ov > tol(top) {
					mass = density * ov
				} else {
					continue
				}
				masses = append(masses, mass)
				as = append(as, t.A[m-1])
			}
		}
		c.Frequencies = append(c.Frequencies, rowStats(r.Frequency, g.at(r.Frequency), r.Pi, masses, as))
	}
	return c, nil
}

// chunkTokens cuts chunk k's tokens and estimates out of the band table t
// (its statistics are left to the caller).
func chunkTokens(t *Table, g G, size, k int64) (*Chunk, error) {
	lo, hi := k*size, (k+1)*size
	c := &Chunk{G: g, Size: size, Index: k}
	// Tokens of the chunk: those above lo (every integer is a break point,
	// so no token straddles lo or hi).
	j, _ := slices.BinarySearch(t.Bounds, float64(lo)+tol(float64(lo)))
	if j == 0 || j >= len(t.Bounds) || math.Abs(t.Bounds[j-1]-float64(lo)) > tol(float64(lo)) {
		return nil, fmt.Errorf("estimate: internal error: chunk %d's lower end is not a token bound", k)
	}
	end, _ := slices.BinarySearch(t.Bounds, float64(hi)+tol(float64(hi))+1e-300) // first bound above hi
	end = min(max(end, j), len(t.Bounds))
	for end > j && t.Bounds[end-1] > float64(hi)+tol(float64(hi)) {
		end--
	}
	c.Bounds = append([]float64(nil), t.Bounds[j-1:end]...)
	c.A = append([]float64(nil), t.A[j-1:end-1]...)
	c.Bounds[0] = float64(lo)
	if len(c.A) != len(c.Bounds)-1 || len(c.A) == 0 {
		return nil, fmt.Errorf("estimate: internal error: chunk %d's tokens", k)
	}
	c.Bounds[len(c.Bounds)-1] = float64(hi)
	return c, nil
}

// Lookup is what answers read of an estimator: the estimate a_j of a
// sanitized value's token, the statistics of a true frequency, and the
// frequency from which keys are mostly reported. *Table and *ChunkSet
// implement it.
type Lookup interface {
	Estimate(v float64) (float64, error)
	Stats(i int64) (FrequencyStats, error)
	SupportedFrom(s sanitize.Sampling) int64
}

// ChunkSet is the MLE estimator of one g on the chunks a request needs: it
// answers values and frequencies inside them, and ErrOutOfRange elsewhere.
//
// Sparse holds statistics at single frequencies (those a release's run
// collected at its MLE frequencies, ChunkAsk.StatsAt), read where no chunk
// with statistics holds the frequency: they are the chunk's, bit for bit.
type ChunkSet struct {
	G         G
	Size      int64 // the chunks' size
	Chunks    map[int64]*Chunk
	Supported int64 // the answer of SupportedFrom, computed from the sanitizer's rows
	Sparse    map[int64]FrequencyStats
}

// Estimate returns a_j of the token holding v (eq. 11).
func (s *ChunkSet) Estimate(v float64) (float64, error) {
	if !(v > 0) {
		return 0, ErrNotReported
	}
	c := s.Chunks[ChunkOf(v, s.Size)]
	if c == nil {
		return 0, ErrOutOfRange
	}
	return c.Estimate(v)
}

// Stats returns the statistics of frequency i.
func (s *ChunkSet) Stats(i int64) (FrequencyStats, error) {
	if i < 1 {
		return FrequencyStats{}, errors.New("estimate: frequency must be at least 1")
	}
	c := s.Chunks[ChunkOf(float64(i), s.Size)]
	if c == nil || !c.HasStats() {
		if st, ok := s.Sparse[i]; ok {
			return st, nil
		}
	}
	if c == nil {
		return FrequencyStats{}, ErrOutOfRange
	}
	return c.Stats(i)
}

// SupportedFrom returns the smallest frequency whose privacy part of
// reporting pi_i/q_i reaches 1/2 (Table.SupportedFrom's rule), or 0; it was
// computed for the chunks' own sampling scheme when the set was made.
func (s *ChunkSet) SupportedFrom(sanitize.Sampling) int64 { return s.Supported }

// The binary chunk encoding (package binenc): the magic "PEC", the format
// version ChunkFormat, then g (kind code, parameter), the size and the index
// (uvarints), the number of tokens n (uvarint), Bounds (n+1 floats), A (n
// floats), and, unless the chunk holds estimates only, the size
// frequencies' G, Reported, Expected, Bias, Variance, MSE (floats).
// Decoding is strict, as for tables.
const chunkMagic = "PEC"

// ChunkFormat is the version of the chunks' binary encoding; caches key
// stored chunks on it.
const ChunkFormat = 1

// MarshalBinary encodes the chunk (format ChunkFormat).
func (c *Chunk) MarshalBinary() ([]byte, error) {
	gc := slices.Index(gKindCodes, c.G.Kind)
	if gc < 0 || len(c.Bounds) != len(c.A)+1 || c.Size < 1 || (len(c.Frequencies) != 0 && !c.HasStats()) || c.Index < 0 {
		return nil, errors.New("estimate: encoding chunk: inconsistent chunk")
	}
	w := binenc.NewWriter(make([]byte, 0, 32+8*(len(c.Bounds)+len(c.A))+8*statFloats*len(c.Frequencies)))
	w.Header(chunkMagic, ChunkFormat)
	writeG(w, c.G)
	w.Uvarint(uint64(c.Size))
	w.Uvarint(uint64(c.Index))
	w.Uvarint(uint64(len(c.A)))
	writeTokens(w, c.Bounds, c.A, c.Frequencies)
	return w.Bytes(), nil
}

// UnmarshalBinary decodes a chunk written by MarshalBinary; c is unchanged
// on error (which wraps ErrCorruptTable).
func (c *Chunk) UnmarshalBinary(data []byte) error {
	r := binenc.NewReader(data, ErrCorruptTable)
	if v := r.Header(chunkMagic); r.Err() == nil && v != ChunkFormat {
		r.Fail("unknown format version %d", v)
	}
	var cc Chunk
	cc.G = readG(r)
	if r.Err() != nil {
		return fmt.Errorf("estimate: decoding chunk: %w", r.Err())
	}
	cc.Size = r.Int64()
	cc.Index = r.Int64()
	n := r.Intn(uint64(r.Len()) / 16)
	cc.Bounds = floats(r, n+1)
	cc.A = floats(r, n)
	if r.Err() == nil && (cc.Size < 1 || (r.Len() != 0 && uint64(r.Len()) != 8*statFloats*uint64(cc.Size))) {
		r.Fail("statistics of the wrong length")
	}
	if r.Err() != nil {
		return fmt.Errorf("estimate: decoding chunk: %w", r.Err())
	}
	if r.Len() != 0 {
		cc.Frequencies = readStats(r, cc.Index*cc.Size+1, cc.Size)
	}
	if err := r.Close(); err != nil {
		return fmt.Errorf("estimate: decoding chunk: %w", err)
	}
	if cc.Index > sanitize.MaxFrequency/cc.Size-1 || cc.G.Validate() != nil || len(cc.Bounds) < 2 ||
		cc.Bounds[0] != cc.Lo() || cc.Bounds[len(cc.Bounds)-1] != cc.Hi() || !slices.IsSorted(cc.Bounds) {
		return fmt.Errorf("estimate: decoding chunk: %w: inconsistent chunk", ErrCorruptTable)
	}
	*c = cc
	return nil
}
