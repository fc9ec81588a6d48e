package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	// Every runner of Beam's Go SDK under its usual names (dataflow,
	// DataflowRunner, flink, FlinkRunner, spark, SparkRunner, universal,
	// portable, PortableRunner, prism, PrismRunner, direct, DirectRunner,
	// dot) and the gcs and local filesystems; package pipeline adds its
	// own s3 (with --s3-path-style) and memfs.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/pwsd/pwsd/beam/pipeline"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// buildStamp is set by the tests (-ldflags -X) to tell their worker binary
// apart; it has no other use.
var buildStamp string

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pwsd-beam:", err)
		switch {
		case errors.Is(err, pipeline.ErrBudget):
			os.Exit(3)
		case errors.Is(err, pipeline.ErrPreflight):
			os.Exit(4)
		}
		os.Exit(1)
	}
}

func run() error {
	var c pipeline.Config
	var eps, delta, threshold, power float64
	var scheme, method string
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
	flag.StringVar(&c.SeedURI, "seed-uri", "", "location of the secret seed (hex, >= 16 bytes) that the submitter and every worker read: a path on a shared filesystem, gs://BUCKET/OBJ or s3://BUCKET/KEY. Required unless the workers run in this process (prism/direct without --endpoint, or --environment_type=LOOPBACK), where a fresh seed is used")
	flag.BoolVar(&c.S3PathStyle, "s3-path-style", false, "address s3:// buckets by path (ENDPOINT/BUCKET/KEY), as S3-compatible stores behind a DNS name need (MinIO, Ceph: AWS_ENDPOINT_URL=http://minio:9000); default: by host name (BUCKET.ENDPOINT), as AWS prefers. Reaches every worker as a pipeline option")
	flag.StringVar(&c.PwsdURL, "pwsd-url", "", "pwsd base URL: charge the release to --dataset before writing anything")
	flag.StringVar(&c.Dataset, "dataset", "", "pwsd dataset to charge")
	flag.BoolVar(&c.Upload, "upload", false, "with --pwsd-url and --dataset: store the written release in pwsd as a sample (POST /v1/samples:import) so its estimates can be asked there")
	flag.Usage = usage
	flag.Parse()
	if err := refuseRemovedSeedEnv(os.LookupEnv); err != nil {
		return err
	}
	beam.Init()

	c.Runner = *runners.Runner
	c.Token = os.Getenv("PWSD_BEAM_TOKEN")
	c.Privacy = sanitize.Privacy{Epsilon: eps, Delta: delta}
	c.Sampling = sanitize.Sampling{Scheme: sanitize.Scheme(scheme), Threshold: threshold, Power: power}
	if scheme == "none" {
		c.Sampling = sanitize.Sampling{Scheme: sanitize.SchemeNone}
	}
	c.Method = sanitize.Method(method)
	sum, err := pipeline.Run(context.Background(), c)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(sum)
}

// removedSeedEnv is the environment variable that once carried the seed.
const removedSeedEnv = "PWSD_BEAM_SEED"

// refuseRemovedSeedEnv fails when PWSD_BEAM_SEED is set, even empty: the
// pipeline no longer reads it (the seed reaches the workers only through
// --seed-uri), and a run that silently ignored it would draw a sample
// under another seed than the user meant. The value is never echoed.
func refuseRemovedSeedEnv(lookup func(string) (string, bool)) error {
	if _, set := lookup(removedSeedEnv); set {
		return fmt.Errorf("%s is set but no longer read: put the seed (hex, at least 16 bytes) in a file every worker can read and pass its location with --seed-uri (a path, gs://BUCKET/OBJ or s3://BUCKET/KEY), then unset %s", removedSeedEnv, removedSeedEnv)
	}
	return nil
}

// usage prints the flags with what each runner needs.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprint(out, `Usage: pwsd-beam --input PATTERN --epsilon E --delta D --output PREFIX [flags]

Runners (--runner; Beam's own flags, all registered):
  prism (default), PrismRunner   Beam's local runner, in this process; workers in this process
                                 (LOOPBACK) unless --endpoint names a prism job server.
  direct, DirectRunner           Beam's legacy in-process runner (batch only).
  universal, portable, PortableRunner
                                 any Beam job server: --endpoint=HOST:PORT, --environment_type
                                 (DOCKER, PROCESS, EXTERNAL or LOOPBACK), --environment_config
                                 (the SDK harness image apache/beam_go_sdk:2.77.0, or for PROCESS
                                 {"command":"/path/to/boot"}).
  flink, FlinkRunner             the same through a Flink job server (apache/beam_flink1.18_job_server
                                 --flink-master=HOST:8081), --endpoint=HOST:8099.
  spark, SparkRunner             the same through a Spark job server (apache/beam_spark3_job_server
                                 --spark-master-url=spark://HOST:7077), --endpoint=HOST:8099.
  dataflow, DataflowRunner       Google Cloud Dataflow: --project, --region, --staging_location=gs://...,
                                 --temp_location=gs://..., input/output/seed on gs://.
  dot                            writes the pipeline graph (--dot_file) and runs nothing.
Every runner whose workers are not in this process needs --seed-uri on storage the workers read,
and --input/--output on a filesystem they share (gs://, s3:// or a shared mount).
Filesystems: local paths, gs:// (Google credentials; STORAGE_EMULATOR_HOST for an emulator),
s3:// (AWS credentials and region from the environment; AWS_ENDPOINT_URL for an S3-compatible store,
with --s3-path-style when it sits behind a DNS name), memfs:// (this process only).
The seed is never read from the environment: PWSD_BEAM_SEED set is an error (use --seed-uri).

Flags:
`)
	flag.PrintDefaults()
}
