// Package workload generates the realistic request pwsd is measured by
// (issue 22, "The real workload"): a client's ppswor sample of a
// heavy-tailed key log, such as a day of search queries.
//
// The key log has Keys keys; the key of rank r (1-based) has frequency
// floor(Top / r^Exponent), so the default log (300,000 keys, Top 10^7,
// Exponent 1) runs from 10^7 down to 33. Keys look like search queries and
// are deterministic: "q-<rank>-<8 hex digits of a hash of the rank>".
//
// The client samples the log with ppswor at threshold tau: each key is kept
// independently with probability 1 - exp(-tau f), drawn from a math/rand/v2
// generator seeded by the caller, so a sample is reproducible from its seed.
// This is the client's non-private sampling, the input pwsd sanitizes; it
// has nothing to do with pwsd's own (crypto-seeded) randomness.
//
// Body and NDJSON render a sample as the JSON and NDJSON bodies of
// POST /v1/samples (see /v1 in the OpenAPI document): privacy {epsilon,
// delta}, sampling {scheme: ppswor, threshold}, release, method, elements.
// The package knows nothing about HTTP; api's BenchmarkZipfWorkload and
// scripts/bench_http.sh (through the zipfbody command) send the bodies.
package workload
