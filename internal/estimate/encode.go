package estimate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// The binary table encoding (package binenc): the magic "PET", the format
// version, then
//
//	g: kind code (byte), parameter (float)
//	estimator code (byte)
//	MaxFrequency (uvarint)
//	number of tokens n (uvarint), Bounds (n+1 floats), A (n floats)
//	Frequencies: for i = 1..MaxFrequency (implicit), G, Reported,
//	  Expected, Bias, Variance, MSE (floats)
//	tail flag (byte 0 or 1), and with 1:
//	  From (uvarint), Pi (float), pieces (uvarint) then Lo, Hi, P (floats)
//	  each, offsets (uvarint) then floats, UnitToken (uvarint), MLE shifts
//	  (uvarint) then zigzag varints, Period (uvarint), Increment (float),
//	  ConvergedFrom (uvarint)
//
// Integers are minimal uvarints, floats little-endian IEEE 754 kept bit for
// bit; decoding is strict (trailing bytes, non-minimal integers, unknown
// codes and versions are errors), so an accepted encoding re-encodes to its
// own bytes.
const tableMagic = "PET"

// TableFormat is the version of the estimator tables' binary encoding that
// MarshalBinary writes and UnmarshalBinary reads. Caches key stored tables
// on it, so a table in another format is never looked up.
const TableFormat = 1

// ErrCorruptTable is wrapped by every error decoding a table's encoding.
var ErrCorruptTable = errors.New("estimate: corrupt table encoding")

// Wire codes of g's kind and of the estimator.
var (
	gKindCodes     = []GKind{GIdentity, GCount, GPower, GCap}
	estimatorCodes = []Estimator{MLE, BiasedDown, Unbiased}
)

// statFloats is the number of floats per frequency's statistics.
const statFloats = 6

// MarshalBinary encodes the table (format TableFormat) for caching in a
// store. It refuses a table whose g or estimator has no wire code.
func (t *Table) MarshalBinary() ([]byte, error) {
	gc, ec := slices.Index(gKindCodes, t.G.Kind), slices.Index(estimatorCodes, t.Estimator)
	if gc < 0 || ec < 0 {
		return nil, fmt.Errorf("estimate: encoding table: unknown g %q or estimator %q", t.G.Kind, t.Estimator)
	}
	if len(t.Bounds) != len(t.A)+1 || int64(len(t.Frequencies)) != t.MaxFrequency || t.MaxFrequency < 0 {
		return nil, errors.New("estimate: encoding table: bounds, estimates and statistics are inconsistent")
	}
	size := 16 + 8*(len(t.Bounds)+len(t.A)) + 8*statFloats*len(t.Frequencies)
	if tl := t.Tail; tl != nil {
		size += 64 + 24*len(tl.Pattern) + 8*len(tl.Offsets) + 2*len(tl.MLEShift)
	}
	w := binenc.NewWriter(make([]byte, 0, size))
	w.Header(tableMagic, TableFormat)
	writeG(w, t.G)
	w.Byte(byte(ec))
	w.Uvarint(uint64(t.MaxFrequency))
	w.Uvarint(uint64(len(t.A)))
	writeTokens(w, t.Bounds, t.A, t.Frequencies)
	tl := t.Tail
	w.Bool(tl != nil)
	if tl == nil {
		return w.Bytes(), nil
	}
	if tl.From < 0 || tl.UnitToken < 0 || tl.Period < 0 || tl.ConvergedFrom < 0 {
		return nil, errors.New("estimate: encoding table: negative tail position")
	}
	w.Uvarint(uint64(tl.From))
	w.Float(tl.Pi)
	w.Uvarint(uint64(len(tl.Pattern)))
	for _, pc := range tl.Pattern {
		w.Float(pc.Lo)
		w.Float(pc.Hi)
		w.Float(pc.P)
	}
	w.Uvarint(uint64(len(tl.Offsets)))
	for _, o := range tl.Offsets {
		w.Float(o)
	}
	w.Uvarint(uint64(tl.UnitToken))
	w.Uvarint(uint64(len(tl.MLEShift)))
	for _, s := range tl.MLEShift {
		w.Uvarint(zigzag(s))
	}
	w.Uvarint(uint64(tl.Period))
	w.Float(tl.Increment)
	w.Uvarint(uint64(tl.ConvergedFrom))
	return w.Bytes(), nil
}

// UnmarshalBinary decodes a table written by MarshalBinary and validates it
// (Validate). A corrupt or truncated encoding, trailing bytes, another
// format version or an inconsistent table are errors (wrapping
// ErrCorruptTable for encoding errors); t is unchanged then.
func (t *Table) UnmarshalBinary(data []byte) error {
	r := binenc.NewReader(data, ErrCorruptTable)
	if v := r.Header(tableMagic); r.Err() == nil && v != TableFormat {
		r.Fail("unknown format version %d", v)
	}
	var tt Table
	tt.G = readG(r)
	ec := r.Byte()
	if r.Err() == nil && int(ec) >= len(estimatorCodes) {
		r.Fail("unknown estimator")
	}
	if r.Err() != nil {
		return fmt.Errorf("estimate: decoding table: %w", r.Err())
	}
	tt.Estimator = estimatorCodes[ec]
	tt.MaxFrequency = r.Int64()
	// Every count is bounded by the bytes left, so no allocation exceeds
	// the input's size.
	n := r.Intn(uint64(r.Len()) / 16)
	tt.Bounds = floats(r, n+1)
	tt.A = floats(r, n)
	if r.Err() == nil && uint64(tt.MaxFrequency) > uint64(r.Len())/(8*statFloats) {
		r.Fail("truncated statistics")
	}
	if r.Err() != nil {
		return fmt.Errorf("estimate: decoding table: %w", r.Err())
	}
	tt.Frequencies = readStats(r, 1, tt.MaxFrequency)
	if r.Bool() {
		tl := &Tail{From: r.Int64(), Pi: r.Float()}
		np := r.Intn(uint64(r.Len()) / 24)
		if np > 0 && r.Err() == nil {
			tl.Pattern = make([]sanitize.Piece, np)
			for k := range tl.Pattern {
				tl.Pattern[k] = sanitize.Piece{Lo: r.Float(), Hi: r.Float(), P: r.Float()}
			}
		}
		tl.Offsets = floats(r, r.Intn(uint64(r.Len())/8))
		tl.UnitToken = r.Int64()
		if ns := r.Intn(uint64(r.Len())); ns > 0 && r.Err() == nil {
			tl.MLEShift = make([]int64, ns)
			for k := range tl.MLEShift {
				tl.MLEShift[k] = unzigzag(r.Uvarint())
			}
		}
		tl.Period = r.Int64()
		tl.Increment = r.Float()
		tl.ConvergedFrom = r.Int64()
		tt.Tail = tl
	}
	if err := r.Close(); err != nil {
		return fmt.Errorf("estimate: decoding table: %w", err)
	}
	if err := tt.Validate(); err != nil {
		return fmt.Errorf("estimate: decoded table: %w", err)
	}
	*t = tt
	return nil
}

// writeTokens writes token bounds, estimates and per-frequency statistics
// (the part tables and chunks share).
func writeTokens(w *binenc.Writer, bounds, a []float64, freqs []FrequencyStats) {
	for _, b := range bounds {
		w.Float(b)
	}
	for _, v := range a {
		w.Float(v)
	}
	for _, f := range freqs {
		w.Float(f.G)
		w.Float(f.Reported)
		w.Float(f.Expected)
		w.Float(f.Bias)
		w.Float(f.Variance)
		w.Float(f.MSE)
	}
}

// readStats reads the statistics writeTokens wrote for the n frequencies
// from first on (nil for none); the caller bounds n by the input.
func readStats(r *binenc.Reader, first, n int64) []FrequencyStats {
	if n <= 0 {
		return nil
	}
	out := make([]FrequencyStats, n)
	for i := range out {
		out[i] = FrequencyStats{Frequency: first + int64(i), G: r.Float(), Reported: r.Float(), Expected: r.Float(),
			Bias: r.Float(), Variance: r.Float(), MSE: r.Float()}
	}
	return out
}

// floats reads n floats (nil for none); the caller bounds n by the input.
func floats(r *binenc.Reader, n uint64) []float64 {
	if n == 0 || r.Err() != nil {
		return nil
	}
	if n > uint64(r.Len())/8 {
		r.Fail("truncated")
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = r.Float()
	}
	return out
}

// zigzag maps a signed integer to an unsigned one, small magnitudes to
// small values (0, -1, 1, -2, ... to 0, 1, 2, 3, ...).
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// unzigzag inverts zigzag.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// Validate checks the structural invariants of a table (for tables decoded
// from a store): consistent lengths, ascending bounds, finite estimates and a
// consistent tail.
func (t *Table) Validate() error {
	spec := Spec{MaxFrequency: t.MaxFrequency, G: t.G, Estimator: t.Estimator}
	if err := spec.Validate(); err != nil {
		return err
	}
	if len(t.Bounds) != len(t.A)+1 || len(t.A) == 0 || t.Bounds[0] != 0 {
		return errors.New("estimate: table bounds and estimates are inconsistent")
	}
	for j := 1; j < len(t.Bounds); j++ {
		if !(t.Bounds[j] > t.Bounds[j-1]) {
			return errors.New("estimate: table bounds must ascend")
		}
		if a := t.A[j-1]; math.IsNaN(a) || math.IsInf(a, 0) {
			return errors.New("estimate: table estimates must be finite")
		}
	}
	if int64(len(t.Frequencies)) != t.MaxFrequency {
		return errors.New("estimate: table statistics do not cover every frequency")
	}
	for i, f := range t.Frequencies {
		if f.Frequency != int64(i)+1 {
			return errors.New("estimate: table statistics are out of order")
		}
	}
	if tl := t.Tail; tl != nil {
		m := int64(len(tl.Offsets))
		ok := tl.From >= 1 && tl.From <= t.MaxFrequency && tl.Pi > 0 && tl.Pi <= 1+1e-9 && m > 0 &&
			tl.Offsets[m-1] == 1 && len(tl.Pattern) > 0 &&
			tl.UnitToken >= 0 && tl.UnitToken < int64(len(t.A)) &&
			tl.UnitToken+(t.MaxFrequency-tl.From+1)*m == int64(len(t.A)) &&
			(t.Estimator != MLE || int64(len(tl.MLEShift)) == m) && (t.Estimator == MLE || len(tl.MLEShift) == 0) &&
			tl.Period >= 0 && (tl.Period == 0 || tl.Period <= t.MaxFrequency-tl.From)
		for r := int64(1); ok && r < m; r++ {
			ok = tl.Offsets[r] > tl.Offsets[r-1] && tl.Offsets[r-1] > 0
		}
		if !ok {
			return errors.New("estimate: table tail is inconsistent")
		}
	}
	return nil
}

// writeG writes g as its kind's code and its parameter (the caller has
// checked that the kind has a code).
func writeG(w *binenc.Writer, g G) {
	w.Byte(byte(slices.Index(gKindCodes, g.Kind)))
	w.Float(g.Param)
}

// readG reads a g written by writeG; an unknown kind fails r (and gives
// the zero G).
func readG(r *binenc.Reader) G {
	gc := r.Byte()
	param := r.Float()
	if r.Err() == nil && int(gc) >= len(gKindCodes) {
		r.Fail("unknown g")
	}
	if r.Err() != nil {
		return G{}
	}
	return G{Kind: gKindCodes[gc], Param: param}
}
