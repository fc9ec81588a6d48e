package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// Config holds the service's dependencies.
type Config struct {
	Store  store.Store
	Logger *slog.Logger
	// Noise draws Laplace noise; production uses dprand.SecureLaplace.
	Noise dprand.Laplacer
	// NewRand returns a fresh generator per request; production uses
	// dprand.New (ChaCha8 seeded from crypto/rand).
	NewRand func() *rand.Rand
	// TableCacheSize bounds the sanitizer tables kept in memory (default
	// DefaultTableCacheSize).
	TableCacheSize int
	// SampleTTL is how long a sample is kept (PWSD_SAMPLE_TTL); 0 keeps
	// samples forever.
	SampleTTL time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered
	// (PWSD_IDEMPOTENCY_TTL; default 24h), at most SampleTTL when that is
	// set, so that a recorded sample answer never outlives the sample.
	IdempotencyTTL time.Duration
	// IdempotencyWait bounds how long a duplicate waits for the first
	// request with its key (default 60s, the request timeout).
	IdempotencyWait time.Duration
	// IdempotencyHold is the longest a request can run: a reservation is
	// kept at least this long, whatever IdempotencyTTL (and so
	// SampleTTL) is, so that a key never expires under its own request.
	// pwsd sets PWSD_READ_TIMEOUT + PWSD_REQUEST_TIMEOUT + a minute; the
	// default is IdempotencyWait + 3 minutes.
	IdempotencyHold time.Duration
	// IdempotencyLease is the lease of a reservation, renewed every third
	// of it while its request runs (default DefaultIdempotencyLease): a
	// repeat of a request whose server died is answered within it.
	IdempotencyLease time.Duration
	// MaxTableWork bounds one request's table work, estimated up front by
	// tableWork (422 above it); 0 means DefaultMaxTableWork, negative none.
	MaxTableWork int64
	// MaxReleaseWork bounds the total table work of one sample release,
	// counted per stretch of frequencies (releaseCost; 422 above it, naming
	// the elements); 0 means DefaultMaxReleaseWork, negative none.
	MaxReleaseWork int64
	// CacheBytes bounds the memory of the estimator tables kept in memory
	// (default DefaultCacheBytes); least recently used ones are dropped.
	CacheBytes int64
	// KeptRowsSteps bounds the rows of the public warm-up whose kept
	// sanitizer rows are stored per parameter set, so that a new process
	// starts a parameter set's sanitizer from them (tablecache, kept.go;
	// docs/store.md); 0 means DefaultKeptRowsSteps, or none with the
	// in-memory store (whose tables do not outlive the process); negative
	// stores and reads none.
	KeptRowsSteps int64
	// KeptRowsBytes bounds the stored kept rows of one parameter set; 0
	// means DefaultKeptRowsBytes; negative is refused.
	KeptRowsBytes int
	// WarmStartSets is how many of the parameter sets used last the new
	// service warms in the background when it starts: their Tables restored
	// from the stored kept rows and their most recently used MLE chunks read
	// into memory (tablecache.Cache.WarmStart; docs/store.md, "The warm
	// start"). 0 warms none (pwsd sets PWSD_WARM_START_SETS, default
	// DefaultWarmStartSets); it needs kept rows on (KeptRowsSteps) and is
	// at most the sanitizer tables kept in memory (TableCacheSize);
	// negative is refused.
	WarmStartSets int
}

// DefaultWarmStartSets is pwsd's default of Config.WarmStartSets
// (PWSD_WARM_START_SETS).
const DefaultWarmStartSets = 4

// Defaults of Config.KeptRowsSteps and Config.KeptRowsBytes.
const (
	DefaultKeptRowsSteps = tablecache.DefaultKeptRowsSteps
	DefaultKeptRowsBytes = tablecache.DefaultKeptRowsBytes
)

// DefaultTableCacheSize is Config.TableCacheSize's default, and so the most
// parameter sets pwsd's warm start may warm (PWSD_WARM_START_SETS).
const DefaultTableCacheSize = tablecache.DefaultSanitizers

// DefaultCacheBytes is the default bound of the in-memory estimator cache.
const DefaultCacheBytes = tablecache.DefaultBytes

// Service implements pwsd's use cases, one type per resource over shared
// dependencies: Samples (releases and imports), Estimates (answers over
// stored samples), Streams
// and Counters (pan-private state), Datasets (budgets and the ledger),
// Tables (the data-independent tables, plans and prebuilds) and
// Idempotency (retried requests). The table cache is package tablecache.
// It is safe for concurrent use.
type Service struct {
	*deps
	Samples     *Samples
	Estimates   *Estimates
	Streams     *Streams
	Counters    *Counters
	Datasets    *Datasets
	Tables      *Tables
	Idempotency *Idempotency
}

// deps are the dependencies and settings every part of the service shares.
type deps struct {
	store   store.Store
	log     *slog.Logger
	noise   dprand.Laplacer
	newRand func() *rand.Rand
	// cache keeps the tables derived from public parameters (tablecache).
	cache tableCache
	// sampleTTL, idemTTL, idemWait, idemHold and idemLease: see Config.
	sampleTTL, idemTTL, idemWait, idemHold, idemLease time.Duration
	// maxWork bounds one request's table work (see checkWork);
	// maxReleaseWork a release's in total (releaseCost).
	maxWork, maxReleaseWork int64
}

// Samples releases sanitized samples (from frequencies or imported) and
// keeps them; Estimates answers over them.
type Samples struct {
	*deps
	datasets *Datasets
	// keySets keeps the duplicate-key detectors' buffers across samples.
	keySets keySetPool
}

// Estimates answers estimates over stored samples: sums with error bars,
// top keys, ranks and quantiles.
type Estimates struct{ *deps }

// Streams runs the pan-private streaming estimators.
type Streams struct {
	*deps
	datasets *Datasets
}

// Counters runs the counters under continual observation.
type Counters struct{ *deps }

// Datasets keeps privacy budgets and the ledger of what each release spent.
type Datasets struct{ *deps }

// Tables answers the data-independent tables: reporting probabilities,
// sanitizer rows, estimator rows, audits, plans and prebuilds.
type Tables struct{ *deps }

// Idempotency remembers the answers of requests sent with an
// Idempotency-Key, so that a retried request never charges twice.
type Idempotency struct{ *deps }

// New returns a Service; nil Noise and NewRand default to the secure ones.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("service: a store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Noise == nil {
		cfg.Noise = dprand.SecureLaplace{}
	}
	if cfg.NewRand == nil {
		cfg.NewRand = dprand.New
	}
	if cfg.MaxTableWork == 0 {
		cfg.MaxTableWork = DefaultMaxTableWork
	}
	if cfg.MaxReleaseWork == 0 {
		cfg.MaxReleaseWork = DefaultMaxReleaseWork
	}
	if cfg.SampleTTL < 0 {
		return nil, errors.New("service: SampleTTL must not be negative")
	}
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if cfg.SampleTTL > 0 && cfg.IdempotencyTTL > cfg.SampleTTL {
		// A sample's answer must not outlive the sample's retention.
		cfg.IdempotencyTTL = cfg.SampleTTL
	}
	if cfg.IdempotencyWait <= 0 {
		cfg.IdempotencyWait = time.Minute
	}
	if cfg.IdempotencyHold <= 0 {
		cfg.IdempotencyHold = cfg.IdempotencyWait + 3*time.Minute
	}
	if cfg.IdempotencyLease <= 0 {
		cfg.IdempotencyLease = DefaultIdempotencyLease
	}
	switch _, mem := cfg.Store.(*store.Memory); {
	case cfg.KeptRowsSteps < 0, cfg.KeptRowsSteps == 0 && mem:
		// Off; over the in-memory store nothing outlives the process, so
		// the warm-ups would only cost CPU.
		cfg.KeptRowsSteps = 0
	case cfg.KeptRowsSteps == 0:
		cfg.KeptRowsSteps = DefaultKeptRowsSteps
	}
	if cfg.KeptRowsBytes < 0 {
		return nil, errors.New("service: KeptRowsBytes must not be negative")
	}
	if cfg.TableCacheSize <= 0 {
		cfg.TableCacheSize = DefaultTableCacheSize
	}
	if cfg.WarmStartSets < 0 || cfg.WarmStartSets > cfg.TableCacheSize {
		return nil, fmt.Errorf("service: WarmStartSets must be between 0 and TableCacheSize (%d)", cfg.TableCacheSize)
	}
	cache, err := tablecache.New(tablecache.Config{Store: cfg.Store, Logger: cfg.Logger, Sanitizers: cfg.TableCacheSize, Bytes: cfg.CacheBytes,
		KeptRowsSteps: cfg.KeptRowsSteps, KeptRowsBytes: cfg.KeptRowsBytes})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	cache.WarmStart(cfg.WarmStartSets, []estimate.G{identityG, countG})
	d := &deps{store: cfg.Store, log: cfg.Logger, noise: cfg.Noise, newRand: cfg.NewRand, cache: cache,
		sampleTTL: cfg.SampleTTL, idemTTL: cfg.IdempotencyTTL, idemWait: cfg.IdempotencyWait,
		idemHold: cfg.IdempotencyHold, idemLease: cfg.IdempotencyLease, maxWork: cfg.MaxTableWork, maxReleaseWork: cfg.MaxReleaseWork}
	datasets := &Datasets{d}
	samples := &Samples{deps: d, datasets: datasets}
	return &Service{deps: d,
		Samples: samples, Estimates: &Estimates{d}, Streams: &Streams{deps: d, datasets: datasets},
		Counters: &Counters{d}, Datasets: datasets, Tables: &Tables{d}, Idempotency: &Idempotency{d}}, nil
}

// Wait waits for the service's background work (writes of computed tables
// to the store, builds of the chunks a release's estimates will read) to
// finish; call it before closing the store.
func (s *Service) Wait() { s.cache.Wait() }

// StopOptional cancels the background work that only saves later requests
// time (the builds of the chunks a release's estimates will read, the
// warm-ups of kept sanitizer rows), so that
// a shutdown's Wait waits for the store writes alone.
func (s *Service) StopOptional() { s.cache.StopOptional() }

// IsUnverifiedRows reports whether err is a refusal because the sanitizer
// rows a request needs meet a restart junction that failed its check
// (sanitize.JunctionError; docs/algorithms.md, "Rows by verified restart"):
// nothing was released. Its message names no frequency.
func IsUnverifiedRows(err error) bool { return errors.Is(err, sanitize.ErrJunction) }

// Ready reports whether the store is reachable and migrated.
func (s *Service) Ready(ctx context.Context) error { return s.store.Ready(ctx) }

// Errors the API maps to statuses (with the field errors of package checks,
// 422). Field errors and LimitError carry no request data in their messages.
var (
	// ErrNotFound: the named resource does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrBudget: the release would overspend its dataset's budget (409).
	ErrBudget = errors.New("the release would exceed the dataset's privacy budget")
	// ErrExists: a resource with that name already exists (409).
	ErrExists = errors.New("already exists")
	// ErrLimit: a per-stream limit is reached, e.g. releases (409).
	ErrLimit = errors.New("limit reached")
	// ErrUnavailable: the store cannot be reached; retry later (503).
	ErrUnavailable = errors.New("the store is unavailable")
	// ErrInvalidValue: a value of the request cannot be stored or looked
	// up as it is (text with NUL or invalid UTF-8, a value past a size
	// limit of the database); the request is at fault (422).
	ErrInvalidValue = errors.New("a value of the request cannot be stored")
)

// IsInvalidValue reports whether err means a value of the request could not
// be stored or compared (ErrInvalidValue, or the store's equivalent when
// err did not pass through storeErr). Such errors never carry the value.
func IsInvalidValue(err error) bool {
	return errors.Is(err, ErrInvalidValue) || store.IsInvalidValue(err)
}

// IsUnavailable reports whether err means the store was unreachable, whether
// or not it passed through storeErr: such a request may succeed later and is
// no fault of the request or of pwsd's logic.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || store.IsUnavailable(err)
}

// NotFoundError names what does not exist (404): Kind is "dataset",
// "sample", "key"...; Name is the client's own name or id for it.
type NotFoundError struct {
	Kind, Name string
}

func (e *NotFoundError) Error() string {
	if e.Kind == "key" {
		return fmt.Sprintf("key %q is not in this sample", e.Name)
	}
	return fmt.Sprintf("%s %q does not exist", e.Kind, e.Name)
}

// Is makes a *NotFoundError match ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// notFoundAs names a not-found err as (kind, name); other errors pass.
func notFoundAs(err error, kind, name string) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{Kind: kind, Name: name}
	}
	return err
}

// LimitError is an input over a configured size limit (413).
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// fieldErr builds a *checks.FieldError naming a request field (422).
func fieldErr(field, format string, args ...any) error {
	return checks.Errorf(field, format, args...)
}

// storeErr maps store errors to service errors, keeping others wrapped.
func storeErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case errors.Is(err, store.ErrBudget):
		return ErrBudget
	case errors.Is(err, store.ErrExists):
		return fmt.Errorf("%s: %w", what, ErrExists)
	case store.IsUnavailable(err):
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	case store.IsInvalidValue(err):
		return fmt.Errorf("%s: %w", what, ErrInvalidValue) // the driver's text may quote the value
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}
