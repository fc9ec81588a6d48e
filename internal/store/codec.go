package store

import (
	"errors"

	"github.com/pwsd/pwsd/internal/binenc"
)

// chunkSize is how many elements one stored chunk of a sample holds.
const chunkSize = 1 << 16

// ChunkFormat is the version byte every stored sample chunk starts with.
// The previous release wrote chunks without it; migration 0005 prefixes
// them with version 1, whose element layout is unchanged.
const ChunkFormat = 1

// errCorrupt is wrapped by every chunk decoding error.
var errCorrupt = errors.New("store: corrupt sample chunk")

// encodeElements appends the compact binary form of es to dst (package
// binenc): the format version, then per element the key's length (uvarint),
// the key, and the value and estimate as little-endian float64 bits.
func encodeElements(dst []byte, es []Element) []byte {
	w := binenc.NewWriter(dst)
	w.Header("", ChunkFormat)
	for _, e := range es {
		w.String(e.Key)
		w.Float(e.Value)
		w.Float(e.Estimate)
	}
	return w.Bytes()
}

// decodeElements appends the elements of the chunk b to dst. It decodes
// strictly: a wrong version, a truncated element or a non-minimal length is
// an error.
func decodeElements(dst []Element, b []byte) ([]Element, error) {
	r := binenc.NewReader(b, errCorrupt)
	if v := r.Header(""); r.Err() == nil && v != ChunkFormat {
		r.Fail("unknown chunk format %d", v)
	}
	for r.Err() == nil && r.Len() > 0 {
		key := r.String(uint64(r.Len()))
		v, e := r.Float(), r.Float()
		if r.Err() == nil {
			dst = append(dst, Element{Key: key, Value: v, Estimate: e})
		}
	}
	if err := r.Close(); err != nil {
		return dst, err
	}
	return dst, nil
}
