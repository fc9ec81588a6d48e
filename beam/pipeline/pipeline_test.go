package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	os.Exit(m.Run())
}

// element is one output line, decoded strictly: the fields of the service's
// NDJSON element and nothing else.
type element struct {
	Key          string   `json:"key"`
	Value        *float64 `json:"value"`
	Frequency    *float64 `json:"frequency"`
	Contribution *float64 `json:"contribution"`
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// readOutput returns the element lines of every shard under prefix.
func readOutput(t *testing.T, prefix string) []string {
	t.Helper()
	files, err := filepath.Glob(prefix + "-[0-9]*-of-*.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

func decodeElements(t *testing.T, lines []string) []element {
	t.Helper()
	out := make([]element, len(lines))
	for i, l := range lines {
		d := json.NewDecoder(strings.NewReader(l))
		d.DisallowUnknownFields()
		if err := d.Decode(&out[i]); err != nil {
			t.Fatalf("output line %d is not a service NDJSON element: %v", i, err)
		}
	}
	return out
}

// chi2Quantile999 is the 0.999 quantile of chi-square with df degrees of
// freedom (Wilson-Hilferty; accurate to about 1% for df >= 10).
func chi2Quantile999(df int) float64 {
	k := float64(df)
	z := 3.0902
	a := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * a * a * a
}

// chiSquare compares, for each true frequency f, the observed outcomes of
// its keys (not reported, or the piece of row f holding the value) with row
// f of tb; categories with expected count below 5 are pooled per row.
func chiSquare(t *testing.T, tb *sanitize.Table, keysPer int, obs map[int64][]float64) (chi2 float64, df int) {
	t.Helper()
	for f, values := range obs {
		row, err := tb.Row(f)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]float64, len(row.Pieces)+1) // last: not reported
		for _, v := range values {
			k, ok := slices.BinarySearchFunc(row.Pieces, v, func(p sanitize.Piece, v float64) int {
				switch {
				case v <= p.Lo:
					return 1
				case v > p.Hi:
					return -1
				}
				return 0
			})
			if !ok {
				k = len(row.Pieces) // impossible value: lands in "not reported" and inflates chi2
			}
			counts[k]++
		}
		counts[len(row.Pieces)] += float64(keysPer - len(values))
		n := float64(keysPer)
		var poolO, poolE float64
		cats := 0
		add := func(o, e float64) {
			chi2 += (o - e) * (o - e) / e
			cats++
		}
		for k, pc := range row.Pieces {
			if e := n * pc.P; e >= 5 {
				add(counts[k], e)
			} else {
				poolO += counts[k]
				poolE += n * pc.P
			}
		}
		if e := n * (1 - row.Pi); e >= 5 {
			add(counts[len(row.Pieces)], e)
		} else {
			poolO += counts[len(row.Pieces)]
			poolE += e
		}
		if poolE > 0 {
			add(poolO, poolE)
		}
		df += cats - 1
	}
	return chi2, df
}

// TestPipelineMatchesTable runs the pipeline on prism over 10^5 raw records
// (20 frequencies f = 1..20, 476 keys each, f records per key) plus bad
// records, and checks:
//   - every output line parses strictly as the service's NDJSON element;
//   - per frequency, the outcome counts (not reported, or the piece of row f
//     the value falls in) match the sanitizer table by chi-square below the
//     0.999 quantile (fixed seed: deterministic), and a table for another
//     epsilon is rejected by the same statistic (the test can fail);
//   - frequency is the MLE argmax of eq. 11 found by brute force over rows
//     1..200 (largest density at the value, ties to the smaller frequency)
//     and contribution is frequency / pi_frequency;
//   - each bad record is in the dead letters with its reason, without its
//     content, and the counters say how many records were valid/invalid.
func TestPipelineMatchesTable(t *testing.T) {
	const F, keysPer = 20, 476
	dir := t.TempDir()
	var lines []string
	for f := 1; f <= F; f++ {
		for k := 0; k < keysPer; k++ {
			for r := 0; r < f; r++ {
				lines = append(lines, fmt.Sprintf(`{"key":"f%d-%d"}`, f, k))
			}
		}
	}
	valid := len(lines)
	bad := map[string]string{
		`SECRET-1 not json`:   reasonJSON,
		`["SECRET-2"]`:        reasonJSON,
		`{"user":"SECRET-3"}`: reasonKeyMissing,
		`{"key":12345}`:       reasonKeyType,
		`{"key":""}`:          reasonKeyEmpty,
		`{"key":"SECRET-4` + strings.Repeat("x", 2000) + `"}`: reasonKeyLong,
	}
	for l := range bad {
		lines = append(lines, l)
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	in := filepath.Join(dir, "raw.ndjson")
	writeLines(t, in, lines)

	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-3}
	out := filepath.Join(dir, "out", "sample")
	sum, err := Run(context.Background(), Config{Input: in, Output: out, Privacy: p,
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, Seed: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Valid != int64(valid) || sum.Invalid != int64(len(bad)) {
		t.Fatalf("counters: %d valid, %d invalid; want %d and %d", sum.Valid, sum.Invalid, valid, len(bad))
	}

	elems := decodeElements(t, readOutput(t, out))
	obs := map[int64][]float64{}
	seen := map[string]bool{}
	for _, e := range elems {
		if seen[e.Key] {
			t.Fatalf("key reported twice")
		}
		seen[e.Key] = true
		var f int64
		var k int
		if _, err := fmt.Sscanf(e.Key, "f%d-%d", &f, &k); err != nil || e.Value == nil || e.Frequency == nil || e.Contribution == nil {
			t.Fatalf("unexpected element %+v", e)
		}
		obs[f] = append(obs[f], *e.Value)
	}
	for f := int64(1); f <= F; f++ {
		if _, ok := obs[f]; !ok {
			obs[f] = nil
		}
	}
	tb, err := sanitize.NewTable(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	chi2, df := chiSquare(t, tb, keysPer, obs)
	if q := chi2Quantile999(df); chi2 > q {
		t.Fatalf("chi-square %.1f on %d df exceeds the 0.999 quantile %.1f", chi2, df, q)
	} else {
		t.Logf("chi-square %.1f on %d df (0.999 quantile %.1f), %d keys reported", chi2, df, q, len(elems))
	}
	wrong, err := sanitize.NewTable(sanitize.Privacy{Epsilon: 0.7, Delta: 1e-3}, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	if chi2w, dfw := chiSquare(t, wrong, keysPer, obs); chi2w <= chi2Quantile999(dfw) {
		t.Fatalf("the epsilon = 0.7 table passes too (chi-square %.1f on %d df): the test has no power", chi2w, dfw)
	}

	// MLE by brute force.
	const H = 200
	rows := make([]sanitize.Row, H+1)
	for h := int64(1); h <= H; h++ {
		row, err := tb.Row(h)
		if err != nil {
			t.Fatal(err)
		}
		rows[h] = row.Clone()
	}
	for _, e := range elems[:min(len(elems), 2000)] {
		v := *e.Value
		best, bestD := int64(0), 0.0
		for h := int64(1); h <= H; h++ {
			for _, pc := range rows[h].Pieces {
				if v > pc.Lo && v <= pc.Hi {
					if d := pc.P / (pc.Hi - pc.Lo); d > bestD*(1+1e-10) {
						best, bestD = h, d
					}
				}
			}
		}
		if *e.Frequency != float64(best) {
			t.Fatalf("value %v: frequency %v, brute-force MLE %d", v, *e.Frequency, best)
		}
		if want := float64(best) / rows[best].Pi; math.Abs(*e.Contribution-want) > 1e-9*want {
			t.Fatalf("value %v: contribution %v, want i*/pi_i* = %v", v, *e.Contribution, want)
		}
	}

	// Dead letters: every bad record, with its reason, never its content.
	dl := readOutput(t, out+"-deadletter")
	var reasons []string
	for _, l := range dl {
		if strings.Contains(l, "SECRET") || strings.Contains(l, "12345") {
			t.Fatalf("a dead letter quotes its record")
		}
		var d DeadLetter
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.File != in {
			t.Fatalf("dead letter %q: %v", l, err)
		}
		reasons = append(reasons, d.Reason)
	}
	var want []string
	for _, r := range bad {
		want = append(want, r)
	}
	slices.Sort(reasons)
	slices.Sort(want)
	if !slices.Equal(reasons, want) {
		t.Fatalf("dead-letter reasons %q, want %q", reasons, want)
	}
	var meta api.SampleMeta
	b, err := os.ReadFile(sum.Meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.Privacy.Epsilon != 0.5 || meta.Release != "frequencies" || meta.Method != "max_separation" || meta.Sampling.Scheme != "none" {
		t.Fatalf("header line %s does not decode as the service's SampleMeta: %v", b, err)
	}
	// The header counts the release's elements as the service's SampleMeta
	// does (reported), and the summary says the same.
	if meta.Reported != len(elems) || sum.Reported != int64(len(elems)) {
		t.Fatalf("header reports %d keys, summary %d, output holds %d elements", meta.Reported, sum.Reported, len(elems))
	}
	if bytes.Contains(b, []byte(strings.Repeat("07", 16))) {
		t.Fatal("the header line contains the seed")
	}
}

// TestSameSeedSameSample: two runs with the same seed write byte-identical
// shards; a different seed gives a different sample. With --weight-field and
// --max-weight 3 the clamped weights are counted.
func TestSameSeedSameSample(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	clamped := 0
	for k := 0; k < 400; k++ {
		for r := 0; r < 1+k%7; r++ {
			w := 1 + (k+r)%5
			if w > 3 {
				clamped++
			}
			lines = append(lines, fmt.Sprintf(`{"key":"k%d","w":%d}`, k, w))
		}
	}
	in := filepath.Join(dir, "raw.ndjson")
	writeLines(t, in, lines)
	run := func(name string, seed byte) []byte {
		out := filepath.Join(dir, name, "s")
		sum, err := Run(context.Background(), Config{Input: in, Output: out, WeightField: "w", MaxWeight: 3,
			Privacy: sanitize.Privacy{Epsilon: 3, Delta: 1e-3}, Sampling: sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 0.2, Power: 1},
			Method: sanitize.MethodDiscrete, Shards: 3, Seed: bytes.Repeat([]byte{seed}, 16)})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Clamped != int64(clamped) || sum.Valid != int64(len(lines)) {
			t.Fatalf("%s: %d clamped, %d valid; want %d and %d", name, sum.Clamped, sum.Valid, clamped, len(lines))
		}
		var all []byte
		for i := 0; i < 3; i++ {
			b, _ := os.ReadFile(ShardName(out, i, 3))
			all = append(all, b...)
		}
		if len(all) == 0 {
			t.Fatalf("%s: empty output", name)
		}
		return all
	}
	a, b, c := run("a", 1), run("b", 1), run("c", 2)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different samples")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same sample")
	}
}

// newPwsd runs the real pwsd router over an in-memory store for the test.
func newPwsd(t *testing.T) (*service.Service, *httptest.Server) {
	t.Helper()
	svc, err := service.New(service.Config{Store: store.NewMemory(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.NewRouter(api.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry(), Limits: api.DefaultLimits()}))
	t.Cleanup(ts.Close)
	return svc, ts
}

// TestChargeRefusesOverspend runs against the real pwsd router (in-memory
// store): a run whose (epsilon, delta) fits the dataset's budget is charged
// before it writes (ledger kind "external", ref in the header line); a run
// that would overspend gets ErrBudget and writes no file at all.
func TestChargeRefusesOverspend(t *testing.T) {
	svc, ts := newPwsd(t)
	if _, err := svc.Datasets.Create(context.Background(), "logs", 1, 1e-5); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.csv")
	writeLines(t, in, []string{"user,query", "u1,a", "u2,a", "u3,b", `u4,"c,d"`, "u5"})
	cfg := Config{Input: in, Format: FormatCSV, KeyField: "query", Privacy: sanitize.Privacy{Epsilon: 0.6, Delta: 1e-6},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, PwsdURL: ts.URL, Dataset: "logs"}
	cfg.Output = filepath.Join(dir, "first", "s")
	sum, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Valid != 4 || sum.Invalid != 1 || sum.ChargeRef == "" {
		t.Fatalf("summary %+v: want 4 valid, 1 invalid (wrong column count), a charge ref", sum)
	}
	d, err := svc.Datasets.Get(context.Background(), "logs")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Releases) != 1 || d.Releases[0].Kind != "external" || d.Releases[0].Ref != sum.ChargeRef || d.SpentEpsilon != 0.6 {
		t.Fatalf("ledger %+v", d)
	}
	cfg.Output = filepath.Join(dir, "second", "s")
	if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrBudget) {
		t.Fatalf("overspending run: %v, want ErrBudget", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "second")); !os.IsNotExist(err) {
		t.Fatal("the refused run created output")
	}
	if d, _ := svc.Datasets.Get(context.Background(), "logs"); len(d.Releases) != 1 {
		t.Fatalf("the refused run was charged: %+v", d.Releases)
	}
}

// TestConfigRejects: invalid configurations fail before anything runs.
func TestConfigRejects(t *testing.T) {
	ok := Config{Input: "x", Output: "y", Privacy: sanitize.Privacy{Epsilon: 1, Delta: 1e-6}, Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}}
	cases := []struct {
		name string
		mod  func(*Config)
	}{
		{"no input", func(c *Config) { c.Input = "" }},
		{"no output", func(c *Config) { c.Output = "" }},
		{"bad format", func(c *Config) { c.Format = "xml" }},
		{"bad release", func(c *Config) { c.Release = "all" }},
		{"max weight without field", func(c *Config) { c.MaxWeight = 3 }},
		{"weights on aggregated input", func(c *Config) { c.Aggregated = true; c.WeightField = "w" }},
		{"epsilon zero", func(c *Config) { c.Privacy.Epsilon = 0 }},
		{"ppswor without threshold", func(c *Config) { c.Sampling = sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Power: 1} }},
		{"url without dataset", func(c *Config) { c.PwsdURL = "http://x" }},
		{"bad method", func(c *Config) { c.Method = "exact" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mod(&cfg)
			cfg.defaults()
			if _, err := cfg.validate(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	cfg := ok
	cfg.defaults()
	if _, err := cfg.validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
}

// TestAggregatedKeysRelease: --aggregated input (one record per key with its
// frequency) in a keys release. With delta = 1 every key is reported (pi_i =
// 1 for i >= 1), so the output is exactly the valid keys, each line only
// {"key":...} as the service renders a keys release; a non-integer or zero
// frequency goes to the dead letters.
func TestAggregatedKeysRelease(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "agg.ndjson")
	writeLines(t, in, []string{`{"key":"a","frequency":3}`, `{"key":"b","frequency":"7"}`, `{"key":"c<&>","frequency":1}`,
		`{"key":"d","frequency":0}`, `{"key":"e","frequency":1.5}`, `{"key":"f"}`})
	out := filepath.Join(dir, "o", "s")
	sum, err := Run(context.Background(), Config{Input: in, Output: out, Aggregated: true, Release: ReleaseKeys,
		Privacy: sanitize.Privacy{Epsilon: 1, Delta: 1}, Sampling: sanitize.Sampling{Scheme: sanitize.SchemeNone}, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Valid != 3 || sum.Invalid != 3 {
		t.Fatalf("summary %+v: want 3 valid, 3 invalid", sum)
	}
	got := readOutput(t, out)
	want := []string{`{"key":"a"}`, `{"key":"b"}`, `{"key":"c\u003c\u0026\u003e"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	decodeElements(t, got)
	var reasons []string
	for _, l := range readOutput(t, out+"-deadletter") {
		var d DeadLetter
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, d.Reason)
	}
	slices.Sort(reasons)
	if w := []string{reasonValueMiss, reasonValueBad, reasonValueBad}; !slices.Equal(reasons, slices.Sorted(slices.Values(w))) {
		t.Fatalf("dead letters %q", reasons)
	}
}
