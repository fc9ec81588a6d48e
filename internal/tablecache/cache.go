package tablecache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/jsonenc"
	"github.com/pwsd/pwsd/internal/lru"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// Store is what the cache needs of the service's store: a key-value table
// of public, data-independent entries (store.Store's table cache). A put of
// an existing key leaves it unchanged.
type Store interface {
	GetTable(ctx context.Context, key string) (data []byte, ok bool, err error)
	PutTable(ctx context.Context, key string, data []byte) error
}

// Config holds a Cache's dependencies and bounds.
type Config struct {
	// Store keeps entries across restarts; required.
	Store Store
	// Logger receives the warnings of undecodable stored entries and of
	// failed background work (keys only: public parameters).
	Logger *slog.Logger
	// Sanitizers bounds the sanitizer tables kept in memory (default
	// DefaultSanitizers).
	Sanitizers int
	// Bytes bounds the memory of the estimator tables, and that of the MLE
	// chunks, kept in memory (default DefaultBytes each).
	Bytes int64
	// KeptRowsSteps bounds the rows of the public warm-up whose kept
	// sanitizer rows are stored per parameter set (kept.go); 0 stores and
	// reads none. It is part of the stored rows' key.
	KeptRowsSteps int64
	// KeptRowsBytes bounds the stored kept rows of one parameter set
	// (default DefaultKeptRowsBytes).
	KeptRowsBytes int
}

// DefaultBytes is the default bound of each in-memory cache of Config.Bytes.
const DefaultBytes = 256 << 20

// maxStats bounds the statistics at single frequencies kept in memory
// (Read.StatsAt): two per key of a release (identity and count), so the
// last few dozen releases of 5,000 keys, about 250 bytes each (30 MB).
const maxStats = 1 << 17

// Cache keeps the tables derived from public parameters in memory and in
// the store. It is safe for concurrent use; Wait waits for its background
// work (writes to the store, chunk builds ahead of reads).
type Cache struct {
	store Store
	log   *slog.Logger
	// sanitizers keeps the most recently used sanitizer tables, so that
	// their checkpoints and stationary rows are reused across requests.
	sanitizers *lru.Cache[string, *sanitize.Table]
	// estimators and chunks keep recently built estimator tables and MLE
	// chunks, bounded in bytes; supported each table's supported frequency.
	estimators *lru.Cache[string, *estimate.Table]
	chunks     *lru.Cache[string, *estimate.Chunk]
	// chunkBytes is the chunks' bound (Config.Bytes), which bounds what the
	// warm start reads (WarmStart).
	chunkBytes int64
	supported  *lru.Cache[string, int64]
	// stats keeps the statistics a release's chunk runs collected at its
	// MLE frequencies (Read.StatsAt), at most maxStats of them.
	stats *lru.Cache[string, estimate.FrequencyStats]
	// flight holds the computations and chunk builds under way.
	flight flight
	// chunkBatch is the most chunk keys one store read asks for
	// (storedChunkBatch; tests lower it).
	chunkBatch int
	// writeQueue holds the entries waiting to be written to the store
	// (writeBehind), writeBytes their size, writing whether drainWrites
	// runs; under writeMu.
	writeMu    sync.Mutex
	writeQueue []store.TableEntry
	writeBytes int64
	writing    bool
	// prefetchers bounds the background chunk builds (Prefetch) to one.
	prefetchers chan struct{}
	// optional is the context of background work that may be abandoned
	// (Prefetch); StopOptional cancels it.
	optional     context.Context
	stopOptional context.CancelFunc
	background   sync.WaitGroup
	// version prefixes keys (AlgorithmVersion; tests change it).
	version string
	// computed counts computations (cache misses); Computed reads it.
	computed atomic.Int64
	// busy counts the requests under way (Busy), idleSince is when the
	// last one ended (UnixNano); background builds start no run while busy
	// is positive or for quietPeriod after that.
	busy      atomic.Int64
	idleSince atomic.Int64
	// kept holds the kept sanitizer rows' settings, queue and counters
	// (kept.go); keptMu guards its queue.
	keptMu sync.Mutex
	kept   keptRows
	// warm counts the warm start's work (WarmStartStats).
	warm warmStart
}

// DefaultSanitizers is Config.Sanitizers' default: the sanitizer tables
// kept in memory.
const DefaultSanitizers = 64

// New returns a Cache over cfg.Store.
func New(cfg Config) (*Cache, error) {
	if cfg.Store == nil {
		return nil, errors.New("tablecache: a store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sanitizers <= 0 {
		cfg.Sanitizers = DefaultSanitizers
	}
	if cfg.Bytes <= 0 {
		cfg.Bytes = DefaultBytes
	}
	if cfg.KeptRowsSteps < 0 || cfg.KeptRowsBytes < 0 {
		return nil, errors.New("tablecache: KeptRowsSteps and KeptRowsBytes must not be negative")
	}
	if cfg.KeptRowsBytes == 0 {
		cfg.KeptRowsBytes = DefaultKeptRowsBytes
	}
	optional, stop := context.WithCancel(context.Background())
	return &Cache{
		store: cfg.Store, log: cfg.Logger,
		sanitizers:  lru.New[string, *sanitize.Table](int64(cfg.Sanitizers), nil),
		estimators:  lru.New[string, *estimate.Table](cfg.Bytes, (*estimate.Table).SizeBytes),
		chunks:      lru.New[string, *estimate.Chunk](cfg.Bytes, (*estimate.Chunk).SizeBytes),
		chunkBytes:  cfg.Bytes,
		supported:   lru.New[string, int64](1024, nil),
		stats:       lru.New[string, estimate.FrequencyStats](maxStats, nil),
		prefetchers: make(chan struct{}, 1),
		optional:    optional, stopOptional: stop,
		version: AlgorithmVersion, chunkBatch: storedChunkBatch,
		kept: keptRows{steps: cfg.KeptRowsSteps, bytes: cfg.KeptRowsBytes, done: lru.New[string, bool](keptDoneKeys, nil),
			touched: lru.New[string, int64](keptDoneKeys, nil)},
	}, nil
}

// Busy marks a request under way until the returned function is called:
// the background builds (Prefetch) start no new run meanwhile, nor for
// quietPeriod after the last request ended (the estimate GET that follows
// a release comes a moment after its answer), so that a release or an
// estimate waits for at most the one run already started, never for a
// queue of them, and shares the cores with none. Reads (ChunkSets) mark
// themselves.
func (c *Cache) Busy() (done func()) {
	c.busy.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			c.idleSince.Store(time.Now().UnixNano())
			c.busy.Add(-1)
		})
	}
}

// yield waits, for a background build, until no request is under way
// (Busy) and none ended within quietPeriod, polling every yieldPoll; it
// returns ctx's error if ctx ends first.
func (c *Cache) yield(ctx context.Context) error {
	for c.busy.Load() > 0 || time.Since(time.Unix(0, c.idleSince.Load())) < quietPeriod {
		select {
		case <-time.After(yieldPoll):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// yieldPoll is how often a background build waiting for the requests
// looks again; quietPeriod is how long no request must have run before
// it starts a run.
const (
	yieldPoll   = 5 * time.Millisecond
	quietPeriod = 200 * time.Millisecond
)

// Wait waits for the background work (writes of computed tables to the
// store, builds of chunks ahead of reads) to finish; call it before
// closing the store.
func (c *Cache) Wait() { c.background.Wait() }

// StopOptional cancels the background work that only saves later requests
// time (Prefetch), so that a shutdown's Wait waits for the store writes
// alone.
func (c *Cache) StopOptional() { c.stopOptional() }

// Computed returns how many tables and chunk runs the cache has computed
// (its misses); tests read it to prove a table was served, not recomputed.
func (c *Cache) Computed() int64 { return c.computed.Load() }

// Sanitizer returns the sanitizer table of (p, s, m), kept in memory across
// requests (cheap to create: rows are computed on demand). With kept rows
// on (Config.KeptRowsSteps), a table it makes starts from the kept rows an
// earlier process stored, when they pass every check; when there are none
// (or they fail), a warm-up over the public parameters stores them in the
// background (kept.go).
func (c *Cache) Sanitizer(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) (*sanitize.Table, error) {
	key := sanitize.Key("table", p, s, m)
	if t, ok := c.sanitizers.Get(key); ok {
		c.touchKept(key, p, s, m)
		return t, nil
	}
	t, err := sanitize.NewTable(p, s, m)
	if err != nil {
		return nil, fmt.Errorf("building sanitizer table: %w", err)
	}
	if c.kept.steps > 0 && !c.restoreKept(t) {
		c.keepRowsBehind(t)
	}
	return c.sanitizers.Add(key, t), nil
}

// JSON returns the entry under key (built by Key) from the store, decoded
// strictly as JSON into into() (a pointer), or computes it, stores its
// JSON encoding and returns it. Concurrent first requests compute once;
// compute receives a context cancelled only when every request waiting for
// it has gone. An entry that does not decode is recomputed. compute should
// return a pointer of the type into returns, so that both paths give one
// type.
func (c *Cache) JSON(ctx context.Context, key string, into func() any, compute func(context.Context) (any, error)) (any, error) {
	return c.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		if data, ok, err := c.store.GetTable(ctx, key); err != nil {
			return nil, fmt.Errorf("reading table cache: %w", err)
		} else if ok {
			v := into()
			if err := jsonenc.DecodeStrict(data, v); err == nil {
				return v, nil
			}
			c.log.Warn("ignoring undecodable cached table", "key", key)
		}
		c.computed.Add(1)
		v, err := compute(ctx)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding table: %w", err)
		}
		if err := c.store.PutTable(ctx, key, data); err != nil {
			return nil, fmt.Errorf("caching table: %w", err)
		}
		return v, nil
	})
}

// jsonCache is what JSONOf needs: a *Cache, or an interface its caller
// holds it by.
type jsonCache interface {
	JSON(ctx context.Context, key string, into func() any, compute func(context.Context) (any, error)) (any, error)
}

// JSONOf is JSON for values of type T: the entry under key decoded into a
// T, or compute's value, stored.
func JSONOf[T any](ctx context.Context, c jsonCache, key string, compute func(context.Context) (T, error)) (T, error) {
	v, err := c.JSON(ctx, key, func() any { return new(T) }, func(ctx context.Context) (any, error) {
		t, err := compute(ctx)
		if err != nil {
			return nil, err
		}
		return &t, nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return *(v.(*T)), nil
}

// persistEstimatorsUpTo bounds the estimator tables written to the store:
// beyond it a table is tens of megabytes and cheaper to rebuild (O(n L)).
const persistEstimatorsUpTo = 1 << 16

// estimatorKey is the key of the estimator table of spec over t. It names
// the table's binary format (estimate.TableFormat), so a table stored in
// another format is never looked up.
func (c *Cache) estimatorKey(t *sanitize.Table, spec estimate.Spec) string {
	return c.Key("estimator", t.Privacy(), t.Sampling(), t.Method(), Int("format", estimate.TableFormat),
		Str("g", spec.G.String()), Str("est", string(spec.Estimator)), Int("n", spec.MaxFrequency))
}

// Estimator returns the estimator table of spec over t: from memory, else
// from the store (tables up to 2^16 frequencies are stored), else built
// (once under concurrency) and cached. A stored table that does not decode
// (UnmarshalBinary is strict) is rebuilt and served from memory; the stored
// row stays (a put of an existing key does nothing) until the store's
// eviction. Errors of the build are estimate's, unwrapped for the caller
// to map.
func (c *Cache) Estimator(ctx context.Context, t *sanitize.Table, spec estimate.Spec) (*estimate.Table, error) {
	key := c.estimatorKey(t, spec)
	if et, ok := c.estimators.Get(key); ok {
		return et, nil
	}
	v, err := c.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		if et, ok := c.estimators.Get(key); ok {
			return et, nil
		}
		if spec.MaxFrequency <= persistEstimatorsUpTo {
			if data, ok, err := c.store.GetTable(ctx, key); err != nil {
				return nil, fmt.Errorf("reading table cache: %w", err)
			} else if ok {
				et := &estimate.Table{}
				if err := et.UnmarshalBinary(data); err == nil {
					return c.estimators.Add(key, et), nil
				}
				c.log.Warn("ignoring undecodable cached estimator table", "key", key)
			}
		}
		c.computed.Add(1)
		built, err := estimate.Open(ctx, t, estimate.Ask{Table: &spec})
		if err != nil {
			return nil, err
		}
		et := built.Table
		if spec.MaxFrequency <= persistEstimatorsUpTo {
			data, err := et.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("encoding estimator table: %w", err)
			}
			if err := c.store.PutTable(ctx, key, data); err != nil {
				return nil, fmt.Errorf("caching estimator table: %w", err)
			}
		}
		return c.estimators.Add(key, et), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*estimate.Table), nil
}

// EstimatorBytes returns the memory the estimator tables held in memory
// take, and how many there are.
func (c *Cache) EstimatorBytes() (bytes int64, tables int) {
	return c.estimators.Cost(), c.estimators.Len()
}
