package binenc

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

// TestRoundTrip: every value written is read back bit for bit, and the
// reader ends exactly at the end of the encoding.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	w := NewWriter(nil)
	w.Header("XY", 3)
	w.Byte(7)
	w.Bool(true)
	w.Uvarint(300)
	w.Float(math.Copysign(0, -1))
	w.String("héllo")
	w.Bits([]uint64{0b1011}, 4)
	w.Packed([]uint64{5, 0, 7, 3}, 3)
	r := NewReader(w.Bytes(), nil)
	if v := r.Header("XY"); v != 3 {
		t.Fatalf("version %d", v)
	}
	if r.Byte() != 7 || !r.Bool() || r.Uvarint() != 300 || math.Float64bits(r.Float()) != math.Float64bits(math.Copysign(0, -1)) || r.String(10) != "héllo" {
		t.Fatal("scalar values differ")
	}
	if b := r.Bits(4); len(b) != 1 || b[0] != 0b1011 {
		t.Fatalf("bits %v", b)
	}
	if p := r.Packed(4, 3, 8); len(p) != 4 || p[0] != 5 || p[1] != 0 || p[2] != 7 || p[3] != 3 {
		t.Fatalf("packed %v", p)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStrict: every non-canonical or out-of-range input is an error wrapping
// the reader's base error, never a panic.
func TestStrict(t *testing.T) {
	t.Parallel()
	base := errors.New("base")
	for _, tc := range []struct {
		name string
		data []byte
		read func(r *Reader)
	}{
		{"bad magic", []byte("XZ\x01"), func(r *Reader) { r.Header("XY") }},
		{"truncated header", []byte("X"), func(r *Reader) { r.Header("XY") }},
		{"non-minimal uvarint", []byte{0x80, 0x00}, func(r *Reader) { r.Uvarint() }},
		{"overlong uvarint", bytes.Repeat([]byte{0xff}, 11), func(r *Reader) { r.Uvarint() }},
		{"integer above max", []byte{5}, func(r *Reader) { r.Intn(4) }},
		{"flag not 0 or 1", []byte{2}, func(r *Reader) { r.Bool() }},
		{"NaN where finite", []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, func(r *Reader) { r.FiniteFloat() }},
		{"truncated float", []byte{1, 2, 3}, func(r *Reader) { r.Float() }},
		{"string too long", []byte{3, 'a', 'b', 'c'}, func(r *Reader) { r.String(2) }},
		{"bit padding set", []byte{0x10}, func(r *Reader) { r.Bits(4) }},
		{"packed value out of range", []byte{0x07}, func(r *Reader) { r.Packed(1, 3, 6) }},
		{"packed padding set", []byte{0x0d}, func(r *Reader) { r.Packed(1, 3, 8) }},
		{"packed truncated", []byte{0xff}, func(r *Reader) { r.Packed(3, 3, 8) }},
		{"trailing bytes", []byte{1, 2}, func(r *Reader) { r.Byte() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.data, base)
			tc.read(r)
			if err := r.Close(); !errors.Is(err, base) {
				t.Errorf("% x accepted (%v)", tc.data, err)
			}
		})
	}
}

// TestWidthFor: the width holds every value below limit and no fewer bits
// would.
func TestWidthFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit uint64
		want  uint
	}{{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1 << 20, 20}, {1<<20 + 1, 21}} {
		if got := WidthFor(tc.limit); got != tc.want {
			t.Errorf("WidthFor(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// TestSeal: a sealed encoding unseals to its body; one that is truncated,
// shorter than a checksum, or has any bit flipped is refused.
func TestSeal(t *testing.T) {
	w := NewWriter(nil)
	w.Uvarint(300)
	w.String("body")
	body := slices.Clone(w.Bytes())
	sealed := w.Seal()
	if got, err := Unseal(sealed); err != nil || !slices.Equal(got, body) {
		t.Fatalf("Unseal: %q, %v; want %q", got, err, body)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"short":     sealed[:SumSize-1],
		"truncated": sealed[:len(sealed)-1],
		"body bit":  append([]byte{sealed[0] ^ 1}, sealed[1:]...),
		"sum bit":   append(slices.Clone(sealed[:len(sealed)-1]), sealed[len(sealed)-1]^1),
	} {
		if _, err := Unseal(data); err == nil {
			t.Errorf("%s: unsealed", name)
		}
	}
}
