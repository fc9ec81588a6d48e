package tablecache

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestAnchorPlaces: the places lie at round(f) - k L/8 for the offsets,
// ascending, distinct, at least 1, bounded; non-finite or out-of-range
// estimates give none.
func TestAnchorPlaces(t *testing.T) {
	p, err := sanitize.NewPrivacy(0.1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	off := func(k float64) int64 { return int64(math.Round(k * sanitize.L(p) / 8)) }
	step := off(1)
	if step < 4 {
		t.Fatalf("L/8 is %d: the case assumes more than 3", step)
	}
	got := AnchorPlaces(p, []float64{1000.4, 1000.4, 3, -1, 0.5, 1e300})
	if want := []int64{3, 1000 - off(2), 1000 - step, 1000}; !slices.Equal(got, want) {
		t.Fatalf("places %v, want %v", got, want)
	}
	many := make([]float64, maxAnchorPlaces)
	for i := range many {
		many[i] = float64(1000 + 1000*i)
	}
	if n := len(AnchorPlaces(p, many)); n != maxAnchorPlaces {
		t.Fatalf("%d places, want the bound %d", n, maxAnchorPlaces)
	}
}

// TestAnchorsEncoding: places round-trip; a truncated, corrupted, foreign
// or outdated encoding, or one whose places are not ascending and in
// range, is refused.
func TestAnchorsEncoding(t *testing.T) {
	places := []int64{1, 2, 77, 1 << 20, sanitize.MaxFrequency}
	data := encodeAnchors(places)
	got, err := decodeAnchors(data)
	if err != nil || !slices.Equal(got, places) {
		t.Fatalf("decoded %v (%v), want %v", got, err, places)
	}
	resum := func(body []byte) []byte { return binenc.NewWriter(body).Seal() }
	bad := map[string][]byte{
		"empty":     nil,
		"truncated": data[:len(data)-1],
		"corrupted": append(append([]byte{}, data[:10]...), append([]byte{data[10] ^ 1}, data[11:]...)...),
		"format":    resum(append([]byte(anchorsMagic), AnchorsFormat+1, 0)),
		"magic":     resum(append([]byte("PWSKEPT"), AnchorsFormat, 0)),
		"repeated":  resum(append([]byte(anchorsMagic), AnchorsFormat, 2, 5, 0)),
		"too high":  resum(binary.AppendUvarint(binary.AppendUvarint(append([]byte(anchorsMagic), AnchorsFormat, 2), uint64(sanitize.MaxFrequency)), 1)),
		"trailing":  resum(append([]byte(anchorsMagic), AnchorsFormat, 1, 5, 9)),
		"short":     resum(append([]byte(anchorsMagic), AnchorsFormat, 3, 5)),
	}
	for name, b := range bad {
		if _, err := decodeAnchors(b); !errors.Is(err, errAnchors) {
			t.Errorf("%s: decoded (%v), want an error wrapping errAnchors", name, err)
		}
	}
}
