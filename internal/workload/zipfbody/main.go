// Command zipfbody writes the issue-22 workload as a POST /v1/samples body
// on standard output: the client's ppswor sample of a Zipf key log, as JSON
// or NDJSON. scripts/bench_http.sh sends it with curl:
//
//	go run ./internal/workload/zipfbody -tau 1e-5 -epsilon 0.5 -method discrete > body.json
//
// The sample count goes to standard error.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/pwsd/pwsd/internal/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "zipfbody:", err)
		os.Exit(1)
	}
}

func run() error {
	z := workload.DefaultZipf()
	var h workload.Header
	flag.IntVar(&z.Keys, "keys", z.Keys, "distinct keys in the log")
	flag.Int64Var(&z.Top, "top", z.Top, "frequency of the most frequent key")
	flag.Float64Var(&z.Exponent, "exponent", z.Exponent, "Zipf exponent s of f_r = floor(top / r^s)")
	flag.Float64Var(&h.Threshold, "tau", 1e-5, "the client's ppswor threshold")
	flag.Float64Var(&h.Epsilon, "epsilon", 1, "privacy epsilon of the release")
	flag.Float64Var(&h.Delta, "delta", 1e-6, "privacy delta of the release")
	flag.StringVar(&h.Method, "method", "max_separation", "max_separation or discrete")
	flag.StringVar(&h.Release, "release", "frequencies", "frequencies or keys")
	seed := flag.Uint64("seed", 1, "seed of the client's sampling")
	ndjson := flag.Bool("ndjson", false, "write the NDJSON body (header line, then one element per line)")
	flag.Parse()

	elems, err := z.SamplePPSWOR(h.Threshold, *seed)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	if *ndjson {
		err = h.WriteNDJSON(w, elems)
	} else {
		err = h.WriteJSON(w, elems)
	}
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing standard output: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%d keys sampled of %d (tau %g, seed %d)\n", len(elems), z.Keys, h.Threshold, *seed)
	return nil
}
