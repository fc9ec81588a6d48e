package store

import (
	"bytes"
	"math"
	"testing"
)

// TestChunkRoundTrip checks that a chunk decodes to the elements encoded,
// NaN bits (keys-only releases) included, and that it starts with its
// format version.
func TestChunkRoundTrip(t *testing.T) {
	t.Parallel()
	es := []Element{{Key: "a", Value: 1.5, Estimate: 2}, {Key: "", Value: math.NaN(), Estimate: math.NaN()}, {Key: string(make([]byte, 200)), Value: -3, Estimate: 0}}
	data := encodeElements(nil, es)
	if data[0] != ChunkFormat {
		t.Fatalf("chunk starts with %d, want format %d", data[0], ChunkFormat)
	}
	got, err := decodeElements(nil, data)
	if err != nil || len(got) != len(es) {
		t.Fatalf("decoded %d elements, %v", len(got), err)
	}
	for i := range es {
		if got[i].Key != es[i].Key || math.Float64bits(got[i].Value) != math.Float64bits(es[i].Value) ||
			math.Float64bits(got[i].Estimate) != math.Float64bits(es[i].Estimate) {
			t.Errorf("element %d decoded as %+v, want %+v", i, got[i], es[i])
		}
	}
	for _, bad := range [][]byte{nil, {2}, data[:len(data)-1], append(append([]byte(nil), data...), 0)} {
		if _, err := decodeElements(nil, bad); err == nil {
			t.Errorf("corrupt chunk % x accepted", bad)
		}
	}
}

// FuzzDecodeElements checks that arbitrary bytes never panic the chunk
// decoder and that every accepted chunk re-encodes to exactly its own bytes
// (the encoding is canonical: decode-encode is the identity on accepted
// input).
func FuzzDecodeElements(f *testing.F) {
	f.Add(encodeElements(nil, []Element{{Key: "k", Value: 1, Estimate: 2}}))
	f.Add(encodeElements(nil, nil))
	f.Add([]byte{1, 0x80, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := decodeElements(nil, data)
		if err != nil {
			return
		}
		if again := encodeElements(nil, es); !bytes.Equal(again, data) {
			t.Fatalf("accepted chunk % x re-encodes to % x", data, again)
		}
	})
}
