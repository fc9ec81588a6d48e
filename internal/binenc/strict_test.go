package binenc

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// packedRef is the plain reference of Writer.Packed: every bit written one
// at a time, least significant first.
func packedRef(vals []uint64, width uint) []byte {
	var out []byte
	n := 0
	for _, v := range vals {
		for b := uint(0); b < width; b++ {
			if n%8 == 0 {
				out = append(out, 0)
			}
			out[n/8] |= byte(v>>b&1) << (n % 8)
			n++
		}
	}
	return out
}

// TestPackedMatchesRef: Packed writes what the bit-by-bit reference writes,
// for every width 1..64 and lengths that end inside and on byte
// boundaries, and reads it back exactly.
func TestPackedMatchesRef(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for width := uint(1); width <= 64; width++ {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 63, 64, 65} {
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = rng.Uint64()
				if width < 64 {
					vals[i] &= 1<<width - 1
				}
			}
			w := NewWriter(nil)
			w.Packed(vals, width)
			if want := packedRef(vals, width); !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("width %d, n %d: Packed % x, reference % x", width, n, w.Bytes(), want)
			}
			r := NewReader(w.Bytes(), nil)
			got := r.Packed(uint64(n), width, math.MaxUint64)
			if err := r.Close(); err != nil {
				t.Fatalf("width %d, n %d: %v", width, n, err)
			}
			for i := range vals {
				if got[i] != vals[i] {
					t.Fatalf("width %d, n %d: value %d read %d, wrote %d", width, n, i, got[i], vals[i])
				}
			}
		}
	}
}

// TestEveryTruncationFails: no proper prefix of a valid encoding decodes:
// each is an error wrapping the reader's base error, never a panic or a
// value.
func TestEveryTruncationFails(t *testing.T) {
	t.Parallel()
	base := errors.New("test base")
	w := NewWriter(nil)
	w.Header("PW", 2)
	w.Bool(false)
	w.Uvarint(1 << 40)
	w.Float(math.Pi)
	w.String("key")
	w.Bits([]uint64{math.MaxUint64, 5}, 70)
	w.Packed([]uint64{1, 2, 3, 4, 5}, 5)
	enc := w.Bytes()
	read := func(b []byte) error {
		r := NewReader(b, base)
		r.Header("PW")
		r.Bool()
		r.Int64()
		r.FiniteFloat()
		r.String(16)
		r.Bits(70)
		r.Packed(5, 5, 32)
		return r.Close()
	}
	if err := read(enc); err != nil {
		t.Fatalf("the full encoding: %v", err)
	}
	for n := range len(enc) {
		if err := read(enc[:n]); !errors.Is(err, base) {
			t.Errorf("prefix of %d of %d bytes: err = %v, want one wrapping the base error", n, len(enc), err)
		}
	}
	if err := read(append(bytes.Clone(enc), 0)); !errors.Is(err, base) {
		t.Errorf("a trailing byte: err = %v, want one wrapping the base error", err)
	}
}

// TestStrictRefusals: each non-canonical or out-of-range encoding is
// refused with ErrCorrupt (the default base), naming no value.
func TestStrictRefusals(t *testing.T) {
	t.Parallel()
	nan := AppendFloat(nil, math.NaN())
	inf := AppendFloat(nil, math.Inf(-1))
	for _, tc := range []struct {
		name string
		data []byte
		read func(r *Reader)
	}{
		{"wrong magic", []byte("XX\x01"), func(r *Reader) { r.Header("PW") }},
		{"flag 2", []byte{2}, func(r *Reader) { r.Bool() }},
		{"non-minimal uvarint", []byte{0x80, 0x00}, func(r *Reader) { r.Uvarint() }},
		{"uvarint overflow", bytes.Repeat([]byte{0xff}, 11), func(r *Reader) { r.Uvarint() }},
		{"integer above max", []byte{11}, func(r *Reader) { r.Intn(10) }},
		{"int64 overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(r *Reader) { r.Int64() }},
		{"NaN", nan, func(r *Reader) { r.FiniteFloat() }},
		{"infinity", inf, func(r *Reader) { r.FiniteFloat() }},
		{"string too long", []byte{4, 'a', 'b', 'c', 'd'}, func(r *Reader) { r.String(3) }},
		{"bits padding set", []byte{0x10}, func(r *Reader) { r.Bits(4) }},
		{"packed value out of range", []byte{0x07}, func(r *Reader) { r.Packed(1, 3, 7) }},
		{"packed padding set", []byte{0x80}, func(r *Reader) { r.Packed(1, 3, 8) }},
		{"packed length overflow", []byte{0}, func(r *Reader) { r.Packed(math.MaxUint64, 2, 4) }},
		{"zero-width count too large", nil, func(r *Reader) { r.Packed(math.MaxInt32+1, 0, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.data, nil)
			tc.read(r)
			if err := r.Err(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			// Once failed, every later read returns zero values and the
			// first error stays.
			first := r.Err()
			if r.Byte() != 0 || r.Uvarint() != 0 || r.Rest() != nil || r.Close() != first {
				t.Fatal("a failed reader went on reading")
			}
		})
	}
}

// TestWidthForIsLeast: WidthFor(limit) is the least width whose values 0..limit-1
// all fit, checked against the definition.
func TestWidthForIsLeast(t *testing.T) {
	t.Parallel()
	for _, limit := range []uint64{0, 1, 2, 3, 4, 5, 255, 256, 257, 1 << 32, 1<<32 + 1, math.MaxUint64} {
		w := WidthFor(limit)
		if limit <= 1 {
			if w != 0 {
				t.Errorf("WidthFor(%d) = %d, want 0", limit, w)
			}
			continue
		}
		if w > 64 || (w < 64 && limit-1 >= 1<<w) {
			t.Errorf("WidthFor(%d) = %d: %d does not fit", limit, w, limit-1)
		}
		if w > 0 && limit-1 < 1<<(w-1) {
			t.Errorf("WidthFor(%d) = %d is not the least width", limit, w)
		}
	}
}
