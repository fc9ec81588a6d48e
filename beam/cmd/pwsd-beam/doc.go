// Command pwsd-beam runs pwsd's sanitizers as an Apache Beam pipeline over
// raw records (NDJSON or CSV): validate, sum per key, threshold-sample with a
// per-key hash keyed by a secret seed, sanitize with pwsd's tables, and write
// sharded NDJSON in the element format of GET /v1/samples/{id}.
//
//	pwsd-beam --input 'logs/*.ndjson' --epsilon 1 --delta 1e-6 --output out/sample
//
// The seed is read from the location --seed-uri names (hex, at least 16
// bytes; a path, gs:// or s3://), by the submitter and by every worker; it
// is never a flag value, an option or part of the pipeline. Without it, only
// in-process workers (prism or direct without --endpoint, or LOOPBACK) run,
// with a fresh seed. Every runner of Beam's Go SDK is registered by its
// usual name (--runner; see --help). Failed pre-flight checks exit 4, a
// refused charge 3; --upload stores the release in pwsd
// (POST /v1/samples:import). See docs/scaleout.md.
package main
