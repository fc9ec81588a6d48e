// Command pwsd-gen writes synthetic raw records for pwsd-beam: n records
// over k distinct keys with Zipf-distributed popularity, one NDJSON object
// {"key":"k123"} per line (or CSV with a "key" header), deterministic for a
// given --seed.
//
//	pwsd-gen --records 10000000 --keys 1000000 --zipf 1.1 > raw.ndjson
package main
