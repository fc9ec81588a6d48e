// Command pwsd-beam runs pwsd's sanitizers as an Apache Beam pipeline over
// raw records (NDJSON or CSV): validate, sum per key, threshold-sample with a
// per-key hash keyed by a secret seed, sanitize with pwsd's tables, and write
// sharded NDJSON in the element format of GET /v1/samples/{id}.
//
//	pwsd-beam --input 'logs/*.ndjson' --epsilon 1 --delta 1e-6 --output out/sample
//
// The seed comes from the file named by --seed-file or from $PWSD_BEAM_SEED
// (hex, at least 16 bytes); without either a fresh one is drawn from
// crypto/rand. It is never a flag value: Beam copies every flag into the
// job's stored options. Beam's own flags (--runner, --endpoint,
// --environment_type, ...) work as usual; the default runner is prism.
package main
