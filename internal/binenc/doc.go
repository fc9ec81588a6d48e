// Package binenc is pwsd's one binary codec for stored state: a Writer and a
// strict Reader over encoding/binary (uvarints, little-endian IEEE 754
// floats, bit-packed tables). Every stored encoding starts with a magic and a
// format version byte (Header, Reader.Header) and is decoded strictly: an
// integer must be minimally encoded, padding bits must be zero, and the
// input must be consumed exactly (Reader.Close). A Reader never panics; its
// first error sticks and later reads return zero values.
//
// The pan-private estimators, the continual density and the counters encode
// their whole state with it, so the service can keep that state in the store
// between requests; a version byte lets a later format read (or a migration
// rewrite) what an earlier release stored, and strictness means a damaged or
// forged blob is refused instead of being half-read.
package binenc
