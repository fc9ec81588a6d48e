// Package pipeline is pwsd's sanitizers as an Apache Beam pipeline: read raw
// records, validate them (bad ones go to a dead-letter output with a reason),
// sum per key, threshold-sample with a per-key hash keyed by a secret seed,
// sanitize with internal/sanitize (the service's tables), and write sharded
// NDJSON in the element format of GET /v1/samples/{id}.
//
// The pipeline gives the same privacy guarantee as the service's POST
// /v1/samples: the sampling decision of a key depends only on its summed
// frequency and the seeded hash, and its sanitized value is drawn from the
// same data-independent table (Algorithm 4 or 5, see docs/algorithms.md).
// Elements are written with package jsonenc, byte for byte as the service
// writes them, and the sample's header is built by the same code.
package pipeline
