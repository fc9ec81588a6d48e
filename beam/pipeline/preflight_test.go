package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"google.golang.org/protobuf/proto"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// treeOf lists every path under dir.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPreflightRefuses: each failure the workers would meet after the charge
// is caught before it, against the real pwsd router: the run returns
// ErrPreflight, the dataset's ledger stays empty and not a file or
// directory is added anywhere under the test's directory. A control run
// with the same configuration but valid parts is charged and writes.
func TestPreflightRefuses(t *testing.T) {
	svc, ts := newPwsd(t)
	if _, err := svc.Datasets.Create(context.Background(), "logs", 10, 1e-3); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.ndjson")
	writeLines(t, in, []string{`{"key":"a"}`, `{"key":"b"}`})
	seed := filepath.Join(dir, "seed.hex")
	if err := os.WriteFile(seed, []byte(hex.EncodeToString(bytes.Repeat([]byte{9}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shortSeed := write("short.hex", "00112233")
	notHex := write("nothex.hex", "this is not a seed at all, not even hex digits")
	aFile := write("a-file", "x")
	ok := Config{Input: in, Output: filepath.Join(dir, "out", "s"), SeedURI: seed, Privacy: sanitize.Privacy{Epsilon: 1, Delta: 1e-6},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, PwsdURL: ts.URL, Dataset: "logs", Shards: 1}
	cases := []struct {
		name string
		mod  func(*Config)
	}{
		{"input matches no file", func(c *Config) { c.Input = filepath.Join(dir, "missing-*.ndjson") }},
		{"input scheme not registered", func(c *Config) { c.Input = "hdfs://cluster/logs/*.ndjson" }},
		{"seed location missing", func(c *Config) { c.SeedURI = filepath.Join(dir, "no-seed.hex") }},
		{"seed too short", func(c *Config) { c.SeedURI = shortSeed }},
		{"seed not hex", func(c *Config) { c.SeedURI = notHex }},
		{"seed scheme not registered", func(c *Config) { c.SeedURI = "vault://secret/seed" }},
		{"remote workers without a seed location", func(c *Config) {
			// Beam's flags are process-wide, and prism's first run sets
			// them to its in-process endpoint with LOOPBACK: name remote
			// workers explicitly (restored below).
			c.SeedURI, c.Runner = "", "universal"
			*jobopts.Endpoint, *jobopts.EnvironmentType = "localhost:1", "PROCESS"
		}},
		{"output scheme not registered", func(c *Config) { c.Output = "hdfs://cluster/out/s" }},
		{"output not writable", func(c *Config) { c.Output = filepath.Join(aFile, "out", "s") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := treeOf(t, dir)
			endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
			defer func() { *jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, env }()
			cfg := ok
			tc.mod(&cfg)
			_, err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrPreflight) {
				t.Fatalf("got %v, want ErrPreflight", err)
			}
			if bytes.Contains([]byte(err.Error()), []byte("0909090909")) {
				t.Fatal("the error quotes the seed")
			}
			if d, _ := svc.Datasets.Get(context.Background(), "logs"); len(d.Releases) != 0 {
				t.Fatalf("charged: %+v", d.Releases)
			}
			if after := treeOf(t, dir); !slices.Equal(before, after) {
				t.Fatalf("files changed: before %q, after %q", before, after)
			}
		})
	}
	// Control: the same configuration runs, is charged once and writes.
	if _, err := Run(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	if d, _ := svc.Datasets.Get(context.Background(), "logs"); len(d.Releases) != 1 {
		t.Fatalf("control run: ledger %+v", d.Releases)
	}
	if _, err := os.Stat(ok.Output + "-meta.json"); err != nil {
		t.Fatalf("control run wrote no header line: %v", err)
	}
}

// TestSeedNotSerialised builds the pipeline with a seed location and
// marshals it as every runner receives it (graphx.Marshal, the pipeline
// proto, encoded): neither the seed's bytes, nor its hex or base64 forms
// appear in it, nor in the job options. The location does appear (the test
// sees the DoFns' fields: it can fail).
func TestSeedNotSerialised(t *testing.T) {
	seed := bytes.Repeat([]byte{0x5a, 0xc3, 0x17, 0x88}, 8)
	dir := t.TempDir()
	seedURI := filepath.Join(dir, "seed.hex")
	if err := os.WriteFile(seedURI, []byte(hex.EncodeToString(seed)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, placed := range []bool{false, true} {
		uri := seedURI
		if placed { // the in-process path: memfs
			var remove func()
			uri, remove = placeSeed(context.Background(), seed)
			defer remove()
		}
		c := Config{Input: filepath.Join(dir, "*.ndjson"), Output: filepath.Join(dir, "o"), Privacy: sanitize.Privacy{Epsilon: 1, Delta: 1e-6},
			Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}}
		c.defaults()
		p, err := c.validate()
		if err != nil {
			t.Fatal(err)
		}
		pipe, scope := beam.NewPipelineWithRoot()
		Build(scope, c, p, nil, uri)
		edges, _, err := pipe.Build()
		if err != nil {
			t.Fatal(err)
		}
		pb, err := graphx.Marshal(edges, &graphx.Options{Environment: &pipepb.Environment{Urn: graphx.URNEnvProcess}})
		if err != nil {
			t.Fatal(err)
		}
		wire, err := proto.Marshal(pb)
		if err != nil {
			t.Fatal(err)
		}
		// Beam stores each DoFn (and CombineFn) with its fields as a
		// base64-encoded proto inside the transform's payload: decode them
		// into the haystack too.
		hay := slices.Clone(wire)
		for _, tr := range pb.GetComponents().GetTransforms() {
			var fn []byte
			switch tr.GetSpec().GetUrn() {
			case graphx.URNParDo:
				var pp pipepb.ParDoPayload
				if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &pp); err != nil {
					t.Fatal(err)
				}
				fn = pp.GetDoFn().GetPayload()
			case graphx.URNCombinePerKey:
				var cp pipepb.CombinePayload
				if err := proto.Unmarshal(tr.GetSpec().GetPayload(), &cp); err != nil {
					t.Fatal(err)
				}
				fn = cp.GetCombineFn().GetPayload()
			}
			if raw, err := base64.StdEncoding.DecodeString(string(fn)); err == nil {
				hay = append(hay, raw...)
			}
		}
		if !bytes.Contains(hay, []byte(uri)) {
			t.Fatalf("the pipeline proto does not hold the seed location %s: the check below cannot see DoFn fields", uri)
		}
		opts, err := json.Marshal(beam.PipelineOptions.Export())
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range [][]byte{seed, []byte(hex.EncodeToString(seed)), []byte(base64.StdEncoding.EncodeToString(seed)), []byte(base64.RawURLEncoding.EncodeToString(seed))} {
			if bytes.Contains(hay, form) || bytes.Contains(opts, form) {
				t.Fatalf("the serialised pipeline or the job options contain the seed (%q)", form[:8])
			}
		}
	}
}

// TestUpload: a run with Upload against the real pwsd router (in-memory
// store) charges, writes, and stores the release as a sample through POST
// /v1/samples:import: the sample holds exactly the written elements, its
// estimate answers, and the dataset's ledger holds the one charge. The
// pipeline's frequency and contribution columns pass the import's check
// that they equal pwsd's own MLE.
func TestUpload(t *testing.T) {
	svc, ts := newPwsd(t)
	if _, err := svc.Datasets.Create(context.Background(), "logs", 10, 1e-2); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var lines []string
	for k := 0; k < 2000; k++ {
		for r := 0; r <= k%25; r++ {
			lines = append(lines, fmt.Sprintf(`{"key":"k%d"}`, k))
		}
	}
	in := filepath.Join(dir, "raw.ndjson")
	writeLines(t, in, lines)
	out := filepath.Join(dir, "out", "s")
	sum, err := Run(context.Background(), Config{Input: in, Output: out, Privacy: sanitize.Privacy{Epsilon: 1, Delta: 1e-3},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 0.3, Power: 1}, Shards: 3,
		PwsdURL: ts.URL, Dataset: "logs", Upload: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.SampleID == "" || sum.Reported == 0 {
		t.Fatalf("summary %+v: want a sample id and reported keys", sum)
	}
	smp, err := svc.Samples.Get(context.Background(), sum.SampleID, "")
	if err != nil {
		t.Fatal(err)
	}
	written := readOutput(t, out)
	if smp.Reported != len(written) || int64(smp.Reported) != sum.Reported || smp.Spec.Dataset != "logs" {
		t.Fatalf("stored sample: %d elements, dataset %q; written %d, summary %d", smp.Reported, smp.Spec.Dataset, len(written), sum.Reported)
	}
	keys := map[string]bool{}
	for _, e := range smp.Elements {
		keys[e.Key] = true
	}
	for _, e := range decodeElements(t, written) {
		if !keys[e.Key] {
			t.Fatal("a written key is missing from the stored sample")
		}
	}
	res, err := http.Get(ts.URL + "/v1/samples/" + sum.SampleID + "/estimate")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("estimate of the uploaded sample: %d", res.StatusCode)
	}
	if d, _ := svc.Datasets.Get(context.Background(), "logs"); len(d.Releases) != 1 || d.Releases[0].Ref != sum.ChargeRef {
		t.Fatalf("ledger %+v, want the run's one charge", d.Releases)
	}
}

// TestWorkersInProcess: which runs may use the in-process (memfs) seed.
func TestWorkersInProcess(t *testing.T) {
	endpoint, env := *jobopts.Endpoint, *jobopts.EnvironmentType
	defer func() { *jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, env }()
	cases := []struct {
		runner, endpoint, env string
		want                  bool
	}{
		{"prism", "", "", true},
		{"PrismRunner", "", "LOOPBACK", true},
		{"prism", "localhost:8073", "", false},
		{"prism", "", "PROCESS", false},
		{"direct", "", "", true},
		{"universal", "localhost:8099", "LOOPBACK", true},
		{"universal", "localhost:8099", "PROCESS", false},
		{"flink", "localhost:8099", "DOCKER", false},
		{"spark", "localhost:8099", "", false},
		{"dataflow", "", "", false},
	}
	for _, c := range cases {
		*jobopts.Endpoint, *jobopts.EnvironmentType = c.endpoint, c.env
		if got := WorkersInProcess(c.runner); got != c.want {
			t.Errorf("runner %s, endpoint %q, environment %q: %v, want %v", c.runner, c.endpoint, c.env, got, c.want)
		}
	}
}
