package pipeline

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	// The filesystems the pipeline reads and writes through, registered
	// here so that every worker binary has them: local paths (and shared
	// mounts), Google Cloud Storage (gs://) and memory (memfs://, the
	// in-process seed); Amazon S3 and compatible stores (s3://) are
	// s3fs.go's.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Input formats.
const (
	FormatNDJSON = "ndjson"
	FormatCSV    = "csv"
)

// Releases (as in the service).
const (
	ReleaseKeys        = "keys"
	ReleaseFrequencies = "frequencies"
)

// Counter names (namespace "pwsd").
const (
	metricsNamespace = "pwsd"
	CounterValid     = "records_valid"      // records that passed validation
	CounterInvalid   = "records_invalid"    // records sent to the dead letters
	CounterClamped   = "weights_clamped"    // weights above --max-weight, clamped to it
	CounterCapped    = "frequencies_capped" // per-key sums above sanitize.MaxFrequency, capped
	CounterReported  = "keys_reported"      // reported keys: the elements of the release
)

func init() {
	register.DoFn5x1[context.Context, string, string, func(string, int64), func(string), error](&parseFn{})
	register.DoFn4x1[context.Context, string, int64, func(string, float64), error](&sampleFn{})
	register.DoFn4x1[string, float64, func(*float64) bool, func(int, string), error](&formatFn{})
	register.DoFn2x0[string, func(int, string)](&deadShardFn{})
	register.DoFn3x1[context.Context, int, func(*string) bool, error](&writeFn{})
	register.Emitter1[string]()
	register.Emitter2[string, int64]()
	register.Emitter2[string, float64]()
	register.Emitter2[int, string]()
	register.Iter1[float64]()
	register.Iter1[string]()
}

// Config describes one run.
type Config struct {
	Input          string // file pattern
	Format         string // ndjson (default) or csv
	KeyField       string // default "key"
	Aggregated     bool   // one record per key with FrequencyField
	FrequencyField string // default "frequency"
	WeightField    string // integer weights, clamped to MaxWeight
	MaxWeight      int64  // default 1
	MaxKeyBytes    int    // default 1024 (the service's PWSD_MAX_KEY_BYTES default)

	Privacy  sanitize.Privacy // the per-record guarantee
	Sampling sanitize.Sampling
	Release  string          // keys or frequencies (default)
	Method   sanitize.Method // max_separation (default) or discrete

	Output string // prefix of the output files
	Shards int    // output shards (default 4)
	Runner string // Beam runner (default prism)

	// SeedURI is where every worker reads the secret seed (hex) from: a
	// path or URL on a filesystem registered with Beam (see seed.go).
	// Empty: Seed (or a fresh one from crypto/rand) is handed to in-process
	// workers through memfs://, which only runners whose workers run in
	// this process allow.
	SeedURI string
	Seed    []byte // secret seed when SeedURI is empty; nil: a fresh one

	// S3PathStyle makes s3:// address buckets by path
	// (ENDPOINT/BUCKET/KEY), as S3-compatible stores behind a DNS name
	// (MinIO, Ceph) need; false: by host name (BUCKET.ENDPOINT), as AWS
	// prefers. Run hands it to the workers as the pipeline option
	// S3PathStyleOption (s3fs.go).
	S3PathStyle bool

	PwsdURL string // charge the release to Dataset on this pwsd before writing
	Dataset string
	Token   string // bearer token for pwsd, if it needs one
	Upload  bool   // store the release in pwsd (POST /v1/samples:import) once written
}

// Summary is what a run reports: counts of records, never their content.
type Summary struct {
	ID        string `json:"id"`
	Valid     int64  `json:"records_valid"`
	Invalid   int64  `json:"records_invalid"`
	Clamped   int64  `json:"weights_clamped"`
	Capped    int64  `json:"frequencies_capped"`
	Reported  int64  `json:"keys_reported"`
	ChargeRef string `json:"charge_ref,omitempty"`
	Meta      string `json:"meta"`
	SampleID  string `json:"sample_id,omitempty"` // the pwsd sample holding the release (--upload)
}

// ErrBudget is returned when pwsd refuses the charge (409): nothing was
// written.
var ErrBudget = errors.New("pwsd refused the charge: the release would exceed the dataset's privacy budget; nothing was written")

func (c *Config) defaults() {
	if c.Format == "" {
		c.Format = FormatNDJSON
	}
	if c.KeyField == "" {
		c.KeyField = "key"
	}
	if c.FrequencyField == "" {
		c.FrequencyField = "frequency"
	}
	if c.MaxWeight == 0 {
		c.MaxWeight = 1
	}
	if c.MaxKeyBytes == 0 {
		c.MaxKeyBytes = 1024
	}
	if c.Release == "" {
		c.Release = ReleaseFrequencies
	}
	if c.Method == "" {
		c.Method = sanitize.MethodMaxSeparation
	}
	if c.Shards == 0 {
		c.Shards = 4
	}
	if c.Runner == "" {
		c.Runner = "prism"
	}
}

// validate checks c (after defaults) and returns the DoFn parameters.
func (c *Config) validate() (Params, error) {
	switch {
	case c.Input == "":
		return Params{}, errors.New("--input is required")
	case c.Output == "":
		return Params{}, errors.New("--output is required")
	case c.Format != FormatNDJSON && c.Format != FormatCSV:
		return Params{}, errors.New("--format must be ndjson or csv")
	case c.Release != ReleaseKeys && c.Release != ReleaseFrequencies:
		return Params{}, errors.New("--release must be keys or frequencies")
	case c.Aggregated && c.WeightField != "":
		return Params{}, errors.New("--weight-field applies to raw records, not to --aggregated input")
	case c.MaxWeight < 1 || c.MaxWeight > 1<<20:
		return Params{}, errors.New("--max-weight must be between 1 and 2^20")
	case c.MaxWeight > 1 && c.WeightField == "":
		return Params{}, errors.New("--max-weight needs --weight-field")
	case c.Shards < 1 || c.Shards > 10000:
		return Params{}, errors.New("--shards must be between 1 and 10000")
	case c.Sampling.Scheme == sanitize.SchemeCustom:
		return Params{}, errors.New("--scheme must be none, ppswor or priority")
	case (c.PwsdURL == "") != (c.Dataset == ""):
		return Params{}, errors.New("--pwsd-url and --dataset go together")
	case c.Upload && c.PwsdURL == "":
		return Params{}, errors.New("--upload needs --pwsd-url and --dataset: pwsd imports a release only against its charge")
	case c.Upload && c.MaxWeight > 1:
		return Params{}, errors.New("--upload takes releases with --max-weight 1: a weighted release's tables are built at other parameters than its guarantee")
	}
	if err := c.Privacy.Validate(); err != nil {
		return Params{}, fmt.Errorf("--%w", err)
	}
	if err := c.Sampling.Validate(); err != nil {
		return Params{}, fmt.Errorf("--%w", err)
	}
	if err := c.Method.Validate(); err != nil {
		return Params{}, errors.New("--method must be max_separation or discrete")
	}
	unit, err := UnitPrivacy(c.Privacy, c.MaxWeight)
	if err != nil {
		return Params{}, err
	}
	return Params{Epsilon: unit.Epsilon, Delta: unit.Delta, Scheme: string(c.Sampling.Scheme),
		Threshold: c.Sampling.Threshold, Power: c.Sampling.Power, Method: string(c.Method), Release: c.Release}, nil
}

// Build adds the pipeline's stages to s: read, validate (dead letters to
// <output>-deadletter), per-key sum, sample and sanitize, format, write
// (<output>-SSSSS-of-NNNNN.ndjson). columns is the CSV header; seedURI is
// where the sampling stage's workers read the seed.
func Build(s beam.Scope, c Config, p Params, columns []string, seedURI string) {
	pf := &parseFn{Format: c.Format, KeyField: c.KeyField, MaxWeight: c.MaxWeight, MaxKeyBytes: c.MaxKeyBytes,
		MaxValue: sanitize.MaxFrequency, Aggregated: c.Aggregated, Columns: columns}
	if c.Format == FormatCSV {
		pf.HeaderLine = csvLine(columns)
	}
	switch {
	case c.Aggregated:
		pf.ValueField = c.FrequencyField
	case c.WeightField != "":
		pf.ValueField = c.WeightField
	}
	lines := textio.ReadWithFilename(s.Scope("read"), c.Input)
	amounts, dead := beam.ParDo2(s.Scope("validate"), pf, lines)
	freqs := stats.SumPerKey(s.Scope("sum per key"), amounts)
	reported := beam.ParDo(s.Scope("sample and sanitize"), &sampleFn{P: p, SeedURI: seedURI}, freqs)
	maxValue := stats.Max(s.Scope("largest value"), beam.DropKey(s, reported))
	out := beam.ParDo(s.Scope("format"), &formatFn{P: p, Shards: c.Shards}, reported, beam.SideInput{Input: maxValue})
	beam.ParDo0(s.Scope("write"), &writeFn{Prefix: c.Output, Shards: c.Shards}, beam.GroupByKey(s, out))
	deadKeyed := beam.ParDo(s.Scope("dead letters"), &deadShardFn{Shards: c.Shards}, dead)
	beam.ParDo0(s.Scope("write dead letters"), &writeFn{Prefix: c.Output + "-deadletter", Shards: c.Shards}, beam.GroupByKey(s, deadKeyed))
}

// csvLine renders a CSV header the way it appears in the files.
func csvLine(cols []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(cols)
	w.Flush()
	return strings.TrimRight(b.String(), "\r\n")
}

// NewSeed returns a fresh 32-byte seed from crypto/rand.
func NewSeed() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// Run checks the run before anything is spent (preflight: input matched,
// seed readable where the workers read it, output writable), charges (when
// configured), runs the pipeline and writes the header line
// <output>-meta.json. The seed reaches the workers only through its
// location (seed.go): it is never a pipeline option, a DoFn field or
// written out.
func Run(ctx context.Context, c Config) (Summary, error) {
	c.defaults()
	p, err := c.validate()
	if err != nil {
		return Summary{}, err
	}
	// Beam's options are the only channel to every worker's filesystems;
	// set before the first s3:// access (preflight, on this process).
	beam.PipelineOptions.Set(S3PathStyleOption, strconv.FormatBool(c.S3PathStyle))
	seedURI := c.SeedURI
	switch {
	case seedURI != "" && c.Seed != nil:
		return Summary{}, errors.New("give the seed either by its location or by value, not both")
	case seedURI == "" && !WorkersInProcess(c.Runner):
		return Summary{}, fmt.Errorf("%w: --seed-uri is required with runner %s: its workers run outside this process and read the seed from a location they share (a file on gs://, s3:// or a shared path)", ErrPreflight, c.Runner)
	case seedURI == "":
		if c.Seed == nil {
			c.Seed = NewSeed()
		}
		if len(c.Seed) < minSeedBytes {
			return Summary{}, fmt.Errorf("the seed must hold at least %d bytes", minSeedBytes)
		}
		var remove func()
		seedURI, remove = placeSeed(ctx, c.Seed)
		defer remove()
	}
	files, err := preflight(ctx, c.Input, seedURI, c.Output)
	if err != nil {
		return Summary{}, err
	}
	var columns []string
	if c.Format == FormatCSV {
		if columns, err = readHeader(ctx, files[0]); err != nil {
			return Summary{}, err
		}
		if !slices.Contains(columns, c.KeyField) {
			return Summary{}, fmt.Errorf("--key-field %q is not a column of the CSV header", c.KeyField)
		}
		if f := c.WeightField; f != "" && !slices.Contains(columns, f) {
			return Summary{}, fmt.Errorf("--weight-field %q is not a column of the CSV header", f)
		}
		if c.Aggregated && !slices.Contains(columns, c.FrequencyField) {
			return Summary{}, fmt.Errorf("--frequency-field %q is not a column of the CSV header", c.FrequencyField)
		}
	}
	sum := Summary{ID: newID()}
	if c.PwsdURL != "" {
		desc := fmt.Sprintf("pwsd-beam %s release %s", c.Release, sum.ID)
		if sum.ChargeRef, err = Charge(ctx, c.PwsdURL, c.Token, c.Dataset, c.Privacy, desc); err != nil {
			return Summary{}, err
		}
	}
	pipe, scope := beam.NewPipelineWithRoot()
	Build(scope, c, p, columns, seedURI)
	res, err := beam.Run(ctx, c.Runner, pipe)
	if err != nil {
		return Summary{}, fmt.Errorf("running the pipeline: %w", err)
	}
	if res != nil {
		for _, cr := range res.Metrics().AllMetrics().Counters() {
			if cr.Namespace() != metricsNamespace {
				continue
			}
			switch cr.Name() {
			case CounterValid:
				sum.Valid += cr.Result()
			case CounterInvalid:
				sum.Invalid += cr.Result()
			case CounterClamped:
				sum.Clamped += cr.Result()
			case CounterCapped:
				sum.Capped += cr.Result()
			case CounterReported:
				sum.Reported += cr.Result()
			}
		}
	}
	sum.Meta = c.Output + "-meta.json"
	if err := writeMeta(ctx, sum.Meta, c, p, sum); err != nil {
		return Summary{}, err
	}
	if c.Upload {
		if sum.SampleID, err = Upload(ctx, c.PwsdURL, c.Token, sum.Meta, c.Output, c.Shards); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// Meta is the header line of a pipeline release: the service's own
// api.SampleMeta (GET /v1/samples/{id}, NDJSON line 1), so that both write
// the same fields from the same type, plus what a batch release adds.
type Meta struct {
	api.SampleMeta
	Unit      UnitView `json:"privacy_unit"`
	Shards    int      `json:"shards"`
	ChargeRef string   `json:"charge_ref,omitempty"`
}

// UnitView says what one record may change and the parameters the tables
// were built with to give the per-record guarantee.
type UnitView struct {
	Record       string  `json:"record"`
	MaxWeight    int64   `json:"max_weight"`
	TableEpsilon float64 `json:"table_epsilon"`
	TableDelta   float64 `json:"table_delta"`
}

func writeMeta(ctx context.Context, name string, c Config, p Params, sum Summary) error {
	m := Meta{SampleMeta: api.SampleMeta{ID: sum.ID, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Dataset: c.Dataset,
		Privacy:  api.PrivacyView{Epsilon: c.Privacy.Epsilon, Delta: c.Privacy.Delta},
		Sampling: api.SamplingView{Scheme: string(c.Sampling.Scheme), Threshold: c.Sampling.Threshold, Power: c.Sampling.Power},
		Release:  c.Release, Method: string(c.Method), Reported: int(sum.Reported)},
		Shards: c.Shards, ChargeRef: sum.ChargeRef,
		Unit: UnitView{Record: "one record adds 1 to its key's frequency", MaxWeight: c.MaxWeight, TableEpsilon: p.Epsilon, TableDelta: p.Delta}}
	if c.Release == ReleaseFrequencies {
		m.Estimator = "mle"
	}
	switch {
	case c.Aggregated:
		m.Unit.Record = "one unit of a key's frequency (input already aggregated)"
	case c.WeightField != "":
		m.Unit.Record = fmt.Sprintf("one record adds its weight, clamped to [1, %d], to its key's frequency; tables built at the group-privacy unit parameters", c.MaxWeight)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding the header line: %w", err)
	}
	return writeOutput(ctx, name, "the header line", func(w *bufio.Writer) {
		w.Write(b)
		w.WriteByte('\n')
	})
}

// readHeader returns the CSV header of file.
func readHeader(ctx context.Context, file string) ([]string, error) {
	fs, err := filesystem.New(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("opening input filesystem: %w", err)
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, file)
	if err != nil {
		return nil, fmt.Errorf("reading the CSV header: %w", err)
	}
	defer r.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the CSV header: %w", err)
	}
	cols, err := csv.NewReader(strings.NewReader(line)).Read()
	if err != nil {
		return nil, errors.New("the first line of the first input file is not a CSV header")
	}
	return cols, nil
}

// newID returns a random 128-bit identifier in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
