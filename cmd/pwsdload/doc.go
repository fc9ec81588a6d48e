// Command pwsdload is pwsd's load generator: concurrent clients mixing
// sanitize, estimate and stream-event requests against one pwsd, bounded in
// time and in requests, loopback only. It prints throughput and latency
// percentiles per operation and exits 1 if any request got a 5xx.
//
// It measures a running server as a whole (README.md quotes its figures);
// the speed of single functions is shown by the packages' benchmarks.
package main
