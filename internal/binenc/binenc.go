package binenc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrCorrupt is wrapped by every decoding error.
var ErrCorrupt = errors.New("corrupt encoding")

// SumSize is the size of the SHA-256 checksum that ends a sealed encoding
// (Writer.Seal, Unseal).
const SumSize = sha256.Size

// Unseal returns the body of data, a sealed encoding (Writer.Seal), or an
// error ("truncated", "checksum mismatch") when data is shorter than a
// checksum or its checksum does not match the body.
func Unseal(data []byte) ([]byte, error) {
	if len(data) < SumSize {
		return nil, errors.New("truncated")
	}
	body, sum := data[:len(data)-SumSize], data[len(data)-SumSize:]
	if want := sha256.Sum256(body); !bytes.Equal(sum, want[:]) {
		return nil, errors.New("checksum mismatch")
	}
	return body, nil
}

// Writer appends an encoding to a byte slice.
type Writer struct{ b []byte }

// NewWriter returns a Writer appending to buf.
func NewWriter(buf []byte) *Writer { return &Writer{b: buf} }

// Seal appends the SHA-256 checksum of the encoding written so far and
// returns the sealed encoding (read back by Unseal).
func (w *Writer) Seal() []byte {
	sum := sha256.Sum256(w.b)
	w.b = append(w.b, sum[:]...)
	return w.b
}

// Bytes returns the encoding written so far.
func (w *Writer) Bytes() []byte { return w.b }

// Header writes magic followed by the format version.
func (w *Writer) Header(magic string, version byte) {
	w.b = append(w.b, magic...)
	w.b = append(w.b, version)
}

// Byte writes one byte.
func (w *Writer) Byte(v byte) { w.b = append(w.b, v) }

// Bool writes 1 for true and 0 for false.
func (w *Writer) Bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// Uvarint writes v as a uvarint.
func (w *Writer) Uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

// Float writes v as little-endian IEEE 754 bits.
func (w *Writer) Float(v float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
}

// Raw writes p as it is.
func (w *Writer) Raw(p []byte) { w.b = append(w.b, p...) }

// String writes len(s) as a uvarint, then s.
func (w *Writer) String(s string) {
	w.Uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// Bits writes the first n bits of words (bit i is bit i%64 of words[i/64])
// in ceil(n/8) bytes, little-endian.
func (w *Writer) Bits(words []uint64, n uint64) {
	for i := uint64(0); i < (n+7)/8; i++ {
		w.b = append(w.b, byte(words[i/8]>>(8*(i%8))))
	}
}

// Packed writes vals at width bits each, least significant bit first; every
// value must be < 2^width.
func (w *Writer) Packed(vals []uint64, width uint) {
	if width == 0 {
		return
	}
	var acc uint64
	var nacc uint
	for _, v := range vals {
		// Emit v in pieces so that acc never overflows.
		rem := width
		for rem > 0 {
			take := min(rem, 64-nacc, 32)
			acc |= (v & (1<<take - 1)) << nacc
			v >>= take
			rem -= take
			nacc += take
			for nacc >= 8 {
				w.b = append(w.b, byte(acc))
				acc >>= 8
				nacc -= 8
			}
		}
	}
	if nacc > 0 {
		w.b = append(w.b, byte(acc))
	}
}

// WidthFor returns the number of bits needed for values < limit.
func WidthFor(limit uint64) uint {
	if limit <= 1 {
		return 0
	}
	return uint(bits.Len64(limit - 1))
}

// Reader decodes an encoding strictly.
type Reader struct {
	b    []byte
	err  error
	base error
}

// NewReader returns a Reader of b whose errors wrap base (ErrCorrupt when
// base is nil).
func NewReader(b []byte, base error) *Reader {
	if base == nil {
		base = ErrCorrupt
	}
	return &Reader{b: b, base: base}
}

// Err returns the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Len returns the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) }

// Rest returns the unread bytes and consumes them.
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	p := r.b
	r.b = r.b[len(r.b):]
	return p
}

// Fail records an error (if none is recorded yet) wrapping the Reader's base error.
func (r *Reader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", r.base, fmt.Sprintf(format, args...))
	}
}

// Close reports the first error, or an error if bytes are left unread.
func (r *Reader) Close() error {
	if r.err == nil && len(r.b) != 0 {
		r.Fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// Header reads magic and a version byte and returns the version; a wrong
// magic is an error.
func (r *Reader) Header(magic string) byte {
	if p := r.Take(uint64(len(magic))); r.err == nil && string(p) != magic {
		r.Fail("bad magic")
	}
	return r.Byte()
}

// Take reads n bytes (aliasing the input).
func (r *Reader) Take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.Fail("truncated")
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	p := r.Take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool() bool {
	switch r.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.Fail("bad flag")
	return false
}

// Uvarint reads a minimally encoded uvarint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || (n > 1 && r.b[n-1] == 0) { // overflow, truncation or non-minimal
		r.Fail("bad integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Intn reads a uvarint that must be at most max.
func (r *Reader) Intn(max uint64) uint64 {
	v := r.Uvarint()
	if v > max {
		r.Fail("integer out of range")
		return 0
	}
	return v
}

// Int64 reads a uvarint that must fit in a non-negative int64.
func (r *Reader) Int64() int64 { return int64(r.Intn(math.MaxInt64)) }

// Float reads little-endian IEEE 754 bits (any value, NaN included).
func (r *Reader) Float() float64 {
	p := r.Take(8)
	if p == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(p))
}

// FiniteFloat reads a float that must be finite.
func (r *Reader) FiniteFloat() float64 {
	v := r.Float()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.Fail("non-finite number")
		return 0
	}
	return v
}

// String reads a string written by Writer.String of length at most max.
func (r *Reader) String(max uint64) string {
	n := r.Intn(max)
	return string(r.Take(n))
}

// Bits reads n bits written by Writer.Bits into ceil(n/64) words; padding
// bits must be zero.
func (r *Reader) Bits(n uint64) []uint64 {
	p := r.Take((n + 7) / 8)
	if p == nil {
		return nil
	}
	words := make([]uint64, (n+63)/64)
	for i, v := range p {
		words[i/8] |= uint64(v) << (8 * (i % 8))
	}
	if n%8 != 0 && p[len(p)-1]>>(n%8) != 0 {
		r.Fail("padding bits set")
	}
	return words
}

// Packed reads n values of width bits written by Writer.Packed, each of
// which must be < limit; padding bits must be zero.
func (r *Reader) Packed(n uint64, width uint, limit uint64) []uint64 {
	if r.err != nil {
		return nil
	}
	if width == 0 {
		if n > uint64(math.MaxInt32) {
			r.Fail("too many values")
			return nil
		}
		return make([]uint64, n)
	}
	hi, lo := bits.Mul64(n, uint64(width))
	if hi != 0 || lo > uint64(len(r.b))*8 {
		r.Fail("truncated")
		return nil
	}
	vals := make([]uint64, n)
	p := r.Take((lo + 7) / 8)
	var acc uint64
	var nacc uint
	pos := 0
	for i := range vals {
		var v uint64
		var got uint
		for got < width {
			if nacc == 0 {
				acc = uint64(p[pos])
				pos++
				nacc = 8
			}
			take := min(width-got, nacc)
			v |= (acc & (1<<take - 1)) << got
			acc >>= take
			nacc -= take
			got += take
		}
		if v >= limit {
			r.Fail("value out of range")
			return vals
		}
		vals[i] = v
	}
	if acc != 0 {
		r.Fail("padding bits set")
	}
	return vals
}

// AppendFloat appends v as little-endian IEEE 754 bits to b.
func AppendFloat(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}
