package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/pwsd/pwsd/beam/pipeline"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// The portable runners (Flink, Spark, any job server) run through the
// universal runner; register their names on it.
func init() {
	beam.RegisterRunner("flink", universal.Execute)
	beam.RegisterRunner("spark", universal.Execute)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pwsd-beam:", err)
		if errors.Is(err, pipeline.ErrBudget) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

func run() error {
	var c pipeline.Config
	var eps, delta, threshold, power float64
	var scheme, method, seedFile string
	flag.StringVar(&c.Input, "input", "", "input file pattern (required)")
	flag.StringVar(&c.Format, "format", "ndjson", "input format: ndjson (one object per line) or csv (with a header line)")
	flag.StringVar(&c.KeyField, "key-field", "key", "field or column holding the key")
	flag.BoolVar(&c.Aggregated, "aggregated", false, "records are already one per key with an integer frequency")
	flag.StringVar(&c.FrequencyField, "frequency-field", "frequency", "with --aggregated: the frequency field or column")
	flag.StringVar(&c.WeightField, "weight-field", "", "integer weight field; each record adds its weight clamped to --max-weight")
	flag.Int64Var(&c.MaxWeight, "max-weight", 1, "clamp for weights; the tables are built at group-privacy unit parameters so the guarantee holds per record")
	flag.IntVar(&c.MaxKeyBytes, "max-key-bytes", 1024, "longer keys go to the dead letters")
	flag.Float64Var(&eps, "epsilon", 0, "per-record epsilon (required)")
	flag.Float64Var(&delta, "delta", 0, "per-record delta (required)")
	flag.StringVar(&scheme, "scheme", "none", "threshold sampling: none, ppswor or priority")
	flag.Float64Var(&threshold, "threshold", 0, "sampling threshold tau (ppswor, priority)")
	flag.Float64Var(&power, "power", 1, "sampling power p (ppswor, priority)")
	flag.StringVar(&c.Release, "release", "frequencies", "keys or frequencies")
	flag.StringVar(&method, "method", "max_separation", "max_separation (Algorithm 5) or discrete (Algorithm 4)")
	flag.StringVar(&c.Output, "output", "", "output prefix: PREFIX-SSSSS-of-NNNNN.ndjson, PREFIX-deadletter-*.ndjson, PREFIX-meta.json (required)")
	flag.IntVar(&c.Shards, "shards", 4, "output shards")
	flag.StringVar(&seedFile, "seed-file", "", "file holding the secret seed in hex (else $"+pipeline.SeedEnv+", else a fresh one)")
	flag.StringVar(&c.PwsdURL, "pwsd-url", "", "pwsd base URL: charge the release to --dataset before writing anything")
	flag.StringVar(&c.Dataset, "dataset", "", "pwsd dataset to charge")
	flag.Parse()
	beam.Init()

	c.Runner = *runners.Runner
	c.Token = os.Getenv("PWSD_BEAM_TOKEN")
	c.Privacy = sanitize.Privacy{Epsilon: eps, Delta: delta}
	c.Sampling = sanitize.Sampling{Scheme: sanitize.Scheme(scheme), Threshold: threshold, Power: power}
	if scheme == "none" {
		c.Sampling = sanitize.Sampling{Scheme: sanitize.SchemeNone}
	}
	c.Method = sanitize.Method(method)
	switch {
	case seedFile != "":
		b, err := os.ReadFile(seedFile)
		if err != nil {
			return fmt.Errorf("reading --seed-file: %w", err)
		}
		if c.Seed, err = pipeline.ParseSeed(strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("--seed-file: %w", err)
		}
	case os.Getenv(pipeline.SeedEnv) != "":
		var err error
		if c.Seed, err = pipeline.ParseSeed(os.Getenv(pipeline.SeedEnv)); err != nil {
			return fmt.Errorf("%s: %w", pipeline.SeedEnv, err)
		}
	}
	sum, err := pipeline.Run(context.Background(), c)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(sum)
}
