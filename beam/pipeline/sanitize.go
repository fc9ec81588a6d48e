package pipeline

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/jsonenc"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Params are the sanitizer parameters the DoFns carry (JSON-serialisable).
// Epsilon and Delta are the per-unit parameters the tables are built with
// (see UnitPrivacy), not the per-record guarantee.
type Params struct {
	Epsilon   float64 `json:"epsilon"`
	Delta     float64 `json:"delta"`
	Scheme    string  `json:"scheme"`
	Threshold float64 `json:"threshold"`
	Power     float64 `json:"power"`
	Method    string  `json:"method"`
	Release   string  `json:"release"`
}

func (p Params) parts() (sanitize.Privacy, sanitize.Sampling, sanitize.Method) {
	return sanitize.Privacy{Epsilon: p.Epsilon, Delta: p.Delta},
		sanitize.Sampling{Scheme: sanitize.Scheme(p.Scheme), Threshold: p.Threshold, Power: p.Power},
		sanitize.Method(p.Method)
}

// tableCache holds the tables of this worker process: each is built once per
// process (sync.Once per key) and shared by every DoFn instance and bundle.
// It is the package's one piece of process-wide state; tables are pure
// functions of their key, so sharing them cannot leak between runs.
type tableCache struct {
	mu sync.Mutex
	m  map[string]*cacheEntry
}

type cacheEntry struct {
	once sync.Once
	v    any
	err  error
}

var tables = &tableCache{m: map[string]*cacheEntry{}}

func (c *tableCache) get(key string, build func() (any, error)) (any, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		e = &cacheEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v, e.err = build() })
	return e.v, e.err
}

// sanitizer returns the cached Algorithm 4/5 table of p.
func (p Params) sanitizer() (*sanitize.Table, error) {
	pr, s, m := p.parts()
	v, err := tables.get(sanitize.Key("sanitizer", pr, s, m), func() (any, error) { return sanitize.NewTable(pr, s, m) })
	if err != nil {
		return nil, fmt.Errorf("building sanitizer table: %w", err)
	}
	return v.(*sanitize.Table), nil
}

// estimators returns the cached MLE estimator tables for g = identity and
// g = count, of size n.
func (p Params) estimators(n int64) (id, count *estimate.Table, err error) {
	t, err := p.sanitizer()
	if err != nil {
		return nil, nil, err
	}
	pr, s, m := p.parts()
	build := func(g estimate.GKind) (*estimate.Table, error) {
		spec := estimate.Spec{MaxFrequency: n, G: estimate.G{Kind: g}, Estimator: estimate.MLE}
		key := fmt.Sprintf("%s|g=%s|est=%s|n=%d", sanitize.Key("estimator", pr, s, m), spec.G, spec.Estimator, spec.MaxFrequency)
		v, err := tables.get(key, func() (any, error) {
			built, err := estimate.Open(context.Background(), t, estimate.Ask{Table: &spec})
			if err != nil {
				return nil, err
			}
			return built.Table, nil
		})
		if err != nil {
			return nil, fmt.Errorf("building estimator table: %w", err)
		}
		return v.(*estimate.Table), nil
	}
	if id, err = build(estimate.GIdentity); err != nil {
		return nil, nil, err
	}
	if count, err = build(estimate.GCount); err != nil {
		return nil, nil, err
	}
	return id, count, nil
}

// keyRand is the key's private random stream: ChaCha8 seeded with
// HMAC-SHA256(seed, key). The same seed and key give the same stream on every
// worker and rerun; without the seed the stream is unpredictable.
func keyRand(mac func(string) [32]byte, key string) *rand.Rand {
	return rand.New(rand.NewChaCha8(mac(key)))
}

// sampleFn is threshold sampling and sanitization of one aggregated key: the
// key is sampled when its keyed uniform u < q_i (a key's decision is the same
// on every worker), and a sampled key is sanitized by the table's Draw, which
// reports it with probability pi_i/q_i. Unreported keys are dropped here and
// never leave the worker.
type sampleFn struct {
	P Params `json:"p"`
	// SeedURI is where the seed is read from: its location, never the
	// seed itself (a DoFn's fields are serialised into the pipeline).
	SeedURI string `json:"seed_uri"`

	table    *sanitize.Table
	mac      func(string) [32]byte
	capped   beam.Counter
	reported beam.Counter
}

// Setup reads the seed from its location and builds (or reuses) the table.
func (f *sampleFn) Setup(ctx context.Context) error {
	seed, err := ReadSeed(ctx, f.SeedURI)
	if err != nil {
		return err
	}
	if f.table, err = f.P.sanitizer(); err != nil {
		return err
	}
	f.mac = func(key string) [32]byte {
		h := hmac.New(sha256.New, seed)
		h.Write([]byte(key))
		var out [32]byte
		copy(out[:], h.Sum(nil))
		return out
	}
	f.capped = beam.NewCounter(metricsNamespace, CounterCapped)
	f.reported = beam.NewCounter(metricsNamespace, CounterReported)
	return nil
}

// ProcessElement samples and sanitizes one key of frequency freq.
func (f *sampleFn) ProcessElement(ctx context.Context, key string, freq int64, emit func(string, float64)) error {
	if freq > sanitize.MaxFrequency {
		// min(freq, C) is 1-Lipschitz: capping keeps neighbours neighbours.
		f.capped.Inc(ctx, 1)
		freq = sanitize.MaxFrequency
	}
	rng := keyRand(f.mac, key)
	if rng.Float64() >= f.table.Sampling().Q(freq) {
		return nil
	}
	o, err := f.table.Draw(freq, rng)
	if err != nil {
		return fmt.Errorf("sanitizing a key: %w", err)
	}
	if o.Reported {
		f.reported.Inc(ctx, 1)
		emit(key, o.Value)
	}
	return nil
}

// formatFn renders one reported key as the service's NDJSON element line
// (GET /v1/samples/{id} with Accept: application/x-ndjson) and picks its
// output shard from the key. In a frequencies release it adds the MLE
// frequency (the argmax frequency i* of the key's token) and contribution
// (the key's term a_j = i*/pi_{i*} of the MLE estimate of a sum), read from
// estimator tables sized by the largest sanitized value (side input).
type formatFn struct {
	P      Params `json:"p"`
	Shards int    `json:"shards"`

	id, count *estimate.Table
}

// ProcessElement formats one element.
func (f *formatFn) ProcessElement(key string, v float64, maxValue func(*float64) bool, emit func(int, string)) error {
	b := make([]byte, 0, 64+len(key))
	b = append(b, `{"key":`...)
	b = appendJSONString(b, key)
	if f.P.Release == ReleaseFrequencies {
		if f.id == nil {
			mv := 0.0
			var x float64
			for maxValue(&x) {
				mv = math.Max(mv, x)
			}
			t, err := f.P.sanitizer()
			if err != nil {
				return err
			}
			n, err := estimate.TableSize(context.Background(), t, mv)
			if err != nil {
				return err
			}
			if f.id, f.count, err = f.P.estimators(n); err != nil {
				return err
			}
		}
		contribution, err := f.id.Estimate(v)
		if err != nil {
			return fmt.Errorf("estimating: %w", err)
		}
		freq, err := estimate.MLEFrequency(f.id, f.count, v) // i* = (i*/pi_{i*}) / (1/pi_{i*})
		if err != nil {
			return fmt.Errorf("estimating: %w", err)
		}
		b = append(b, `,"value":`...)
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		b = append(b, `,"frequency":`...)
		b = strconv.AppendInt(b, int64(freq), 10)
		b = append(b, `,"contribution":`...)
		b = strconv.AppendFloat(b, contribution, 'g', -1, 64)
	}
	b = append(b, '}')
	emit(shardOf(key, f.Shards), string(b))
	return nil
}

// shardOf spreads keys over n shards by FNV-1a.
func shardOf(s string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int(h.Sum64() % uint64(n))
}

// deadShardFn assigns dead letters to shards.
type deadShardFn struct {
	Shards int `json:"shards"`
}

// ProcessElement keys one dead letter by its shard.
func (f *deadShardFn) ProcessElement(line string, emit func(int, string)) {
	emit(shardOf(line, f.Shards), line)
}

// appendJSONString appends s as a JSON string literal exactly as the
// service's NDJSON writer does: both call jsonenc.AppendString.
func appendJSONString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }
