package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	records := flag.Int64("records", 100000, "number of records")
	keys := flag.Uint64("keys", 10000, "number of distinct keys (the Zipf support)")
	s := flag.Float64("zipf", 1.1, "Zipf exponent s > 1")
	seed := flag.Uint64("seed", 1, "generator seed")
	format := flag.String("format", "ndjson", "ndjson or csv")
	aggregate := flag.Bool("aggregate", false, "write the same records aggregated: one NDJSON {\"key\",\"frequency\"} per distinct key (the input POST /v1/samples takes)")
	flag.Parse()
	if *keys < 1 || *s <= 1 || *records < 0 || (*format != "ndjson" && *format != "csv") {
		fmt.Fprintln(os.Stderr, "pwsd-gen: need --keys >= 1, --zipf > 1, --records >= 0, --format ndjson|csv")
		os.Exit(2)
	}
	r := rand.New(rand.NewPCG(*seed, 0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, *s, 1, *keys-1)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	if *format == "csv" {
		w.WriteString("key\n")
	}
	b := make([]byte, 0, 32)
	if *aggregate {
		counts := map[uint64]int64{}
		for i := int64(0); i < *records; i++ {
			counts[z.Uint64()]++
		}
		for k, n := range counts {
			b = append(b[:0], `{"key":"k`...)
			b = strconv.AppendUint(b, k, 10)
			b = append(b, `","frequency":`...)
			b = strconv.AppendInt(b, n, 10)
			b = append(b, "}\n"...)
			w.Write(b)
		}
		return
	}
	for i := int64(0); i < *records; i++ {
		b = b[:0]
		if *format == "ndjson" {
			b = append(b, `{"key":"k`...)
			b = strconv.AppendUint(b, z.Uint64(), 10)
			b = append(b, "\"}\n"...)
		} else {
			b = append(b, 'k')
			b = strconv.AppendUint(b, z.Uint64(), 10)
			b = append(b, '\n')
		}
		w.Write(b)
	}
}
