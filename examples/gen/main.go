// Command gen writes examples/sample.json, the input of the README's worked
// example: 2000 keys i = 1..2000 of frequency floor(20000/i) + 1, named
// a/query-i (i odd) or b/query-i (i even), ppswor-sampled at tau = 0.01
// (key kept with probability 1 - exp(-0.01 w)) by a fixed-seed generator,
// wrapped in the release description (0.5, 1e-6)-DP, ppswor, tau 0.01.
// It prints the truth of the prefix sum over a/ to stderr.
//
//	go run ./examples/gen > examples/sample.json
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// Population, sampling and seed of the worked example.
const (
	keys  = 2000
	tau   = 0.01
	seed1 = 2026
	seed2 = 26
)

type element struct {
	Key       string `json:"key"`
	Frequency int    `json:"frequency"`
}

type release struct {
	Privacy  map[string]float64 `json:"privacy"`
	Sampling map[string]any     `json:"sampling"`
	Elements []element          `json:"elements"`
}

func main() {
	r := rand.New(rand.NewPCG(seed1, seed2))
	rel := release{
		Privacy:  map[string]float64{"epsilon": 0.5, "delta": 1e-6},
		Sampling: map[string]any{"scheme": "ppswor", "threshold": tau},
	}
	truth := 0
	for i := 1; i <= keys; i++ {
		w := 20000/i + 1
		prefix := "b"
		if i%2 == 1 {
			prefix = "a"
			truth += w
		}
		if r.Float64() < 1-math.Exp(-tau*float64(w)) {
			rel.Elements = append(rel.Elements, element{Key: fmt.Sprintf("%s/query-%d", prefix, i), Frequency: w})
		}
	}
	b, err := json.Marshal(rel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(b, '\n'))
	fmt.Fprintf(os.Stderr, "%d of %d keys sampled; truth of the a/ prefix sum: %d\n", len(rel.Elements), keys, truth)
}
