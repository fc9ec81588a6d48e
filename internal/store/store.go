package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
)

// This file declares what a store is, domain by domain: each domain's
// interface, the records it keeps and the rules both implementations share.
// Each domain's code lives in one file per store (docs/store.md):
//
//	domain                  interface     PostgreSQL                memory
//	tables (and chunks)     Tables        postgres_tablecache.go    memory_tablecache.go
//	samples                 Samples       postgres_samples.go       memory_samples.go
//	datasets and ledger     Datasets      postgres_datasets.go      memory_datasets.go
//	streams and counters    States        postgres_streams.go       memory_streams.go
//	idempotency keys        Idempotency   postgres_idempotency.go   memory_idempotency.go
//
// postgres.go and memory.go hold what is not a domain: connection,
// migration, health, shared SQL helpers, and PurgeExpired, which asks each
// expiring domain to purge.

// Store is pwsd's persistence: the union of the domain interfaces below.
// All methods are safe for concurrent use.
type Store interface {
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	// Ready reports whether the store is reachable and its schema is current.
	Ready(ctx context.Context) error
	// Close releases resources.
	Close()

	Tables
	Samples
	Datasets
	States
	Idempotency
	Purger
}

// Both stores implement every interface of the package.
var (
	_ Store             = (*Memory)(nil)
	_ FormatRewriter    = (*Memory)(nil)
	_ TableCacheLimiter = (*Memory)(nil)
	_ TableDeleter      = (*Memory)(nil)
	_ TableBatcher      = (*Memory)(nil)
	_ TableLister       = (*Memory)(nil)
	_ TableToucher      = (*Memory)(nil)
	_ Store             = (*Postgres)(nil)
	_ FormatRewriter    = (*Postgres)(nil)
	_ TableCacheLimiter = (*Postgres)(nil)
	_ TableDeleter      = (*Postgres)(nil)
	_ TableBatcher      = (*Postgres)(nil)
	_ TableLister       = (*Postgres)(nil)
	_ TableToucher      = (*Postgres)(nil)
)

// Cursor is a position in a listing ordered by (CreatedAt, ID): a page holds
// the items strictly after it. The zero Cursor starts at the beginning. For
// datasets ID is the name. Listings (ListSamples, ListDatasets, ListStates)
// are in (created_at, id) order, which is stable under inserts (new
// resources sort last, up to clock resolution) and deletions.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// IsZero reports whether c is the start of a listing.
func (c Cursor) IsZero() bool { return c.CreatedAt.IsZero() && c.ID == "" }

// after reports whether (t, id) comes strictly after c in listing order.
func (c Cursor) after(t time.Time, id string) bool {
	if c.IsZero() {
		return true
	}
	if d := t.Compare(c.CreatedAt); d != 0 {
		return d > 0
	}
	return id > c.ID
}

// Purger deletes what has expired, in every domain that expires.
type Purger interface {
	// PurgeExpired deletes the samples and idempotency keys expired at now.
	PurgeExpired(ctx context.Context, now time.Time) (PurgeCount, error)
}

// PurgeCount says what PurgeExpired deleted.
type PurgeCount struct {
	Samples         int64
	IdempotencyKeys int64
}

// FormatRewriter rewrites rows stored in an older shape. A row is in an
// older shape when its JSON (a sample's header, a state's config) has no
// "format" key or one below the format asked for; its rewrite function
// returns the new shape, and each row is rewritten in its own transaction
// with the row locked, so the rewrite can run beside live traffic and be
// resumed after a crash. Both stores implement it, each method in its
// domain's file.
type FormatRewriter interface {
	// RewriteSampleHeaders replaces the header h of every sample whose
	// header format is below format by fn(h) and returns how many it
	// rewrote.
	RewriteSampleHeaders(ctx context.Context, format int, fn func(header []byte) ([]byte, error)) (int, error)
	// RewriteStates runs fn on every record of kind whose config format is
	// below format and writes back its config, state and events; it returns
	// how many it rewrote.
	RewriteStates(ctx context.Context, kind string, format int, fn func(rec *StateRecord) error) (int, error)
}

// jsonFormat returns the "format" member of a JSON object, 0 when absent.
func jsonFormat(data []byte) int {
	var v struct {
		Format int `json:"format"`
	}
	_ = json.Unmarshal(data, &v)
	return v.Format
}

// --- Tables: the cache of data-independent tables (and the service's grid
// chunks, stored as tables). ---

// Tables caches data-independent tables by key.
type Tables interface {
	// GetTable returns the cached table stored under key.
	GetTable(ctx context.Context, key string) ([]byte, bool, error)
	// PutTable stores a table under key. Tables are pure functions of their
	// key, so a second put of the same key is a no-op.
	PutTable(ctx context.Context, key string, data []byte) error
}

// TableDeleter is implemented by stores that can drop one cached table
// (both stores): the service drops a stored table that fails its checks on
// read, so that the next write stores a sound one in its place (PutTable
// leaves a present key as it is).
type TableDeleter interface {
	// DeleteTable removes the table stored under key, if any.
	DeleteTable(ctx context.Context, key string) error
}

// TableEntry is one table of a PutTables batch.
type TableEntry struct {
	Key  string
	Data []byte
}

// TableBatcher is implemented by stores that read and store many tables at
// once (both stores): PostgreSQL in one statement or transaction, where
// GetTable and PutTable take a round trip (and PutTable an eviction pass)
// per table. The service reads and writes a release's chunks through it (a
// release reads and builds thousands).
type TableBatcher interface {
	// GetTables returns, for each key, what GetTable returns for it: the
	// table, or nil when none is stored under that key.
	GetTables(ctx context.Context, keys []string) ([][]byte, error)
	// PutTables stores each table as PutTable does.
	PutTables(ctx context.Context, entries []TableEntry) error
}

// TableUse is one cached table as RecentTables lists it: its key and its
// size as the cache counts it (key and data).
type TableUse struct {
	Key  string
	Size int64
}

// TableToucher is implemented by stores that mark cached tables used
// without reading them (both stores). A process that holds a parameter
// set's sanitizer table in memory reads its stored kept rows only once; it
// marks them used as it serves the set (at most once a minute), so that
// the table cache's eviction (least recently used) and the warm start (most
// recently used, TableLister) see every use, not only reads.
type TableToucher interface {
	// TouchTables marks the tables stored under keys used now; a key that
	// holds no table is ignored.
	TouchTables(ctx context.Context, keys []string) error
}

// TableLister is implemented by stores that list their cached tables by
// last use (both stores): a service that starts reads the kept sanitizer
// rows and chunks of the parameter sets used last (the warm start). The
// keys are public parameters; listing marks nothing used.
type TableLister interface {
	// RecentTables returns the cached tables whose keys begin with prefix,
	// most recently used (read or stored) first, at most limit of them.
	RecentTables(ctx context.Context, prefix string, limit int) ([]TableUse, error)
}

// DefaultTableCacheBytes bounds the cached tables (PWSD_TABLE_CACHE_BYTES)
// when nothing else is configured: the least recently used tables are
// evicted until the sum of their sizes is within it. Tables are pure
// functions of their keys, so eviction costs only recomputation.
const DefaultTableCacheBytes = 256 << 20

// TableCacheLimiter is implemented by stores whose table cache can be
// bounded; pwsd sets PWSD_TABLE_CACHE_BYTES through it.
type TableCacheLimiter interface {
	// LimitTableCache bounds the table cache to bytes (> 0).
	LimitTableCache(bytes int64)
}

// tableDigest is the key of a cached table in both stores: the SHA-256
// digest of its canonical parameters (the key the service builds), 32 bytes
// however long the parameters are (a custom scheme lists up to
// PWSD_MAX_CUSTOM_Q probabilities). The parameters are stored beside the
// digest and compared on every read, so that a collision could only cost a
// recomputation, never serve one table for another.
func tableDigest(key string) [sha256.Size]byte { return sha256.Sum256([]byte(key)) }

// tableSize is what a cached table counts against the cache's bound: its
// data and its stored parameters.
func tableSize(key string, data []byte) int64 { return int64(len(key) + len(data)) }

// --- Samples: sanitized samples and their elements. ---

// Samples keeps sanitized samples.
type Samples interface {
	// CreateSample stores a sanitized sample; when charge is non-nil the
	// charge is recorded in the same transaction, or neither happens
	// (ErrBudget, ErrNotFound for an unknown dataset).
	CreateSample(ctx context.Context, s *Sample, charge *Charge) error
	// GetSample returns a stored sample or ErrNotFound.
	GetSample(ctx context.Context, id string) (*Sample, error)
	// ListSamples returns up to limit unexpired samples after c, without
	// their elements (Elements nil, Reported set).
	ListSamples(ctx context.Context, c Cursor, limit int) ([]*Sample, error)
	// DeleteSample deletes a sample and its elements, or returns
	// ErrNotFound. The ledger entry charged for it stays.
	DeleteSample(ctx context.Context, id string) error
}

// Element is one reported key of a sanitized sample.
type Element struct {
	Key      string
	Value    float64 // sanitized value (ordinal); NaN in a keys-only release
	Estimate float64 // MLE per-key estimate of the frequency; NaN in a keys-only release
}

// Sample is a stored sanitized sample. Header is the service's JSON
// description of the release (privacy, sampling, release, method), a JSON
// object whose "format" member versions it (FormatRewriter); the store reads
// nothing else of it. Elements are stored in chunks of ChunkFormat.
type Sample struct {
	ID        string
	CreatedAt time.Time
	Dataset   string // empty when not charged to a dataset
	Header    []byte
	Elements  []Element
	// ExpiresAt is when the sample stops existing (retention); zero keeps
	// it forever. An expired sample is not found and is purged.
	ExpiresAt time.Time
	// Reported is the number of elements; set by ListSamples, which
	// returns no elements.
	Reported int
}

// expired reports whether a sample expiring at exp is gone at now.
func expired(exp, now time.Time) bool { return !exp.IsZero() && !now.Before(exp) }

// --- Datasets: privacy budgets and their ledgers. ---

// Datasets keeps privacy budgets and the ledger of what was charged to
// them. Charges are made by the other domains' writes (a *Charge argument),
// in the same transaction as the release they pay for.
type Datasets interface {
	// CreateDataset stores a new dataset with nothing spent, or ErrExists.
	CreateDataset(ctx context.Context, d Dataset) error
	// GetDataset returns a dataset and its ledger, oldest release first.
	GetDataset(ctx context.Context, name string) (Dataset, []Release, error)
	// ListDatasets returns up to limit datasets after c (Cursor.ID is the
	// name), each with its ledger, oldest release first.
	ListDatasets(ctx context.Context, c Cursor, limit int) ([]Dataset, [][]Release, error)
	// ComposedLedger returns the PLD of every release charged to a dataset
	// (from the store's cache of composed ledgers, extended by the releases
	// recorded since), or ErrNotFound.
	ComposedLedger(ctx context.Context, name string) (*accounting.PLD, error)
}

// How a dataset composes its releases (Dataset.Accounting).
const (
	// AccountingBasic adds epsilons and deltas: the budget check of every
	// dataset created before migration 7.
	AccountingBasic = "basic"
	// AccountingPLD composes releases by privacy loss distributions
	// (internal/accounting): a charge fits when the composed epsilon at the
	// dataset's delta budget stays within its epsilon budget.
	AccountingPLD = "pld"
)

// Dataset is a privacy budget and what has been spent of it.
type Dataset struct {
	Name          string
	EpsilonBudget float64
	DeltaBudget   float64
	// SpentEpsilon and SpentDelta are the sums of the charges (basic
	// composition), whatever the dataset's accounting.
	SpentEpsilon float64
	SpentDelta   float64
	CreatedAt    time.Time
	// Accounting is AccountingBasic or AccountingPLD; empty is taken as
	// AccountingBasic (what every dataset stored before it existed has).
	Accounting string
}

// accounting returns d's accounting, AccountingBasic when empty.
func (d Dataset) accounting() string {
	if d.Accounting == "" {
		return AccountingBasic
	}
	return d.Accounting
}

// Charge is one release to be charged to a dataset.
type Charge struct {
	Dataset string
	Kind    string // "sample", "stream", "external"...
	Ref     string // sample id or stream id
	// Mechanism is how the release is composed: accounting.MechanismGeneric
	// (also when empty) or accounting.MechanismLaplace.
	Mechanism string
	Epsilon   float64
	Delta     float64
}

// mechanism returns c's mechanism, MechanismGeneric when empty.
func (c *Charge) mechanism() string {
	if c.Mechanism == "" {
		return accounting.MechanismGeneric
	}
	return c.Mechanism
}

// Release is one charged release in a dataset's ledger.
type Release struct {
	Kind      string
	Ref       string
	Epsilon   float64
	Delta     float64
	CreatedAt time.Time
	// Mechanism is the kind of mechanism it was charged as (see Charge).
	Mechanism string
}

// budgetSlack absorbs floating-point rounding in sums of charges, so that ten
// charges of 0.1 fit a budget of 1.
const budgetSlack = 1e-9

// fits reports whether charging (eps, delta) to d stays within its budget.
// A charge whose sums are not finite never fits (nothing non-finite is ever
// written to the ledger).
func fits(d Dataset, eps, delta float64) bool {
	se, sd := d.SpentEpsilon+eps, d.SpentDelta+delta
	if !finite(se) || !finite(sd) || !finite(eps) || !finite(delta) || eps < 0 || delta < 0 {
		return false
	}
	return se <= d.EpsilonBudget+d.EpsilonBudget*budgetSlack &&
		sd <= d.DeltaBudget+d.DeltaBudget*budgetSlack
}

// ledgerCachePoints bounds each store's cache of composed ledgers: 2^22
// grid points, 32 MiB. A ledger of generic releases needs a few thousand
// points, one of 365 Laplace releases at epsilon 0.1 about 475,000 (3.6 MiB).
const ledgerCachePoints = 1 << 22

// admit decides a charge c against d whose ledger composes to composed()
// (called only when needed): it fits when basic composition fits, or when
// d composes by PLD and the ledger composed with c spends at most the
// epsilon budget at the delta budget. When the PLD decided, admit returns
// the ledger composed with c, for the caller to cache once the charge is
// committed (so that the next charge composes one release, not two).
func admit(d Dataset, c *Charge, composed func() (*accounting.PLD, error)) (*accounting.PLD, error) {
	if !finite(c.Epsilon) || !finite(c.Delta) || c.Epsilon < 0 || c.Delta < 0 {
		return nil, ErrBudget
	}
	if fits(d, c.Epsilon, c.Delta) {
		return nil, nil
	}
	if d.accounting() != AccountingPLD {
		return nil, ErrBudget
	}
	ac := accounting.Charge{Mechanism: c.mechanism(), Epsilon: c.Epsilon, Delta: c.Delta}
	if ac.Validate() != nil {
		// e.g. an epsilon above 50: only basic composition can charge it.
		return nil, ErrBudget
	}
	before, err := composed()
	if err != nil {
		return nil, err
	}
	after, err := accounting.ComposeCharges(before, []accounting.Charge{ac})
	if err != nil {
		return nil, fmt.Errorf("composing the ledger: %w", err)
	}
	spent := accounting.Spent(after, d.SpentEpsilon+c.Epsilon, d.SpentDelta+c.Delta, d.DeltaBudget)
	if spent > d.EpsilonBudget*(1+budgetSlack) {
		return nil, ErrBudget
	}
	return after, nil
}

// Admit returns nil when charging c to d fits its budget and ErrBudget when
// not, by the rule the stores apply when they charge; composed returns the
// PLD of d's ledger and is called only for a PLD dataset that basic
// composition would refuse. It lets a caller refuse early what the store
// would refuse; the charge itself stays atomic in the store.
func Admit(d Dataset, c *Charge, composed func() (*accounting.PLD, error)) error {
	_, err := admit(d, c, composed)
	return err
}

// composeReleases extends the composed PLD of a ledger (nil: nothing yet)
// by rel.
func composeReleases(base *accounting.PLD, rel []Release) (*accounting.PLD, error) {
	if base == nil {
		var err error
		if base, err = accounting.Identity(accounting.DefaultGrid()); err != nil {
			return nil, err
		}
	}
	cs := make([]accounting.Charge, len(rel))
	for i, r := range rel {
		m := r.Mechanism
		if m == "" {
			m = accounting.MechanismGeneric
		}
		cs[i] = accounting.Charge{Mechanism: m, Epsilon: r.Epsilon, Delta: r.Delta}
		if cs[i].Validate() != nil {
			// A release the accountant cannot compose (epsilon above 50,
			// admitted by basic composition) counts as all mass at
			// +infinity: the PLD then says nothing and Spent falls back to
			// basic composition.
			cs[i] = accounting.Charge{Mechanism: accounting.MechanismGeneric, Delta: 1}
		}
	}
	p, err := accounting.ComposeCharges(base, cs)
	if err != nil {
		return nil, fmt.Errorf("composing the ledger: %w", err)
	}
	return p, nil
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// Fits reports whether charging (eps, delta) to d stays within its budget,
// with the same rounding slack the stores apply when they charge.
func Fits(d Dataset, eps, delta float64) bool { return fits(d, eps, delta) }

// --- States: pan-private streams and counters. ---

// States keeps the state of pan-private streams and counters.
type States interface {
	// CreateState stores new stream or counter state, or ErrExists; a
	// non-nil charge is recorded in the same transaction, or neither happens.
	CreateState(ctx context.Context, rec *StateRecord, charge *Charge) error
	// GetState returns stored state or ErrNotFound.
	GetState(ctx context.Context, kind, id string) (*StateRecord, error)
	// UpdateState runs fn on the record with the record locked against
	// concurrent updates, then durably writes the record fn left behind
	// (and the charge fn returned, if any) in one transaction. If fn fails,
	// or the charge would overspend, nothing is written.
	UpdateState(ctx context.Context, kind, id string, fn func(rec *StateRecord) (*Charge, error)) error
	// ListStates returns up to limit records of kind after c.
	ListStates(ctx context.Context, kind string, c Cursor, limit int) ([]*StateRecord, error)
	// DeleteState deletes a stream or counter, or returns ErrNotFound. The
	// ledger entries charged for it stay.
	DeleteState(ctx context.Context, kind, id string) error
}

// StateRecord is the stored state of a pan-private stream or a counter.
// State is the estimator's marshalled internal state: exactly what
// pan-privacy protects, never raw events.
type StateRecord struct {
	Kind      string // "stream" or "counter"
	ID        string
	Dataset   string
	Config    []byte // JSON configuration, versioned by its "format" member (FormatRewriter)
	State     []byte
	Events    int64 // events or steps applied
	Releases  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// --- Idempotency: the answers of keyed requests. ---

// Idempotency keeps the answers of keyed requests.
type Idempotency interface {
	// ReserveIdempotency claims key for a first request: when no unexpired
	// record holds key it stores rec (Done false) and returns (nil, true);
	// otherwise it returns the existing record and false. Exactly one of
	// concurrent callers reserves.
	ReserveIdempotency(ctx context.Context, rec *IdempotencyRecord) (*IdempotencyRecord, bool, error)
	// GetIdempotency returns the unexpired record of key or ErrNotFound.
	GetIdempotency(ctx context.Context, key string) (*IdempotencyRecord, error)
	// CompleteIdempotency stores the request digest and answer of a
	// reserved key and marks it Done; a non-zero rec.ExpiresAt replaces the
	// reservation's.
	CompleteIdempotency(ctx context.Context, rec *IdempotencyRecord) error
	// RenewIdempotency extends the lease of a reservation that is not Done
	// to lockedUntil (the request holding it still runs); a Done or absent
	// record is left alone.
	RenewIdempotency(ctx context.Context, key string, lockedUntil time.Time) error
	// ReleaseIdempotency deletes a reservation that is not Done, so that the
	// key may be used again (the first request changed nothing).
	ReleaseIdempotency(ctx context.Context, key string) error
	// RedactIdempotency replaces the answers recorded with ref (the
	// resource was deleted) by status, header and body, so that the deleted
	// resource's content does not outlive it while repeats still run nothing.
	RedactIdempotency(ctx context.Context, ref string, status int, header map[string]string, body []byte) error
}

// IdempotencyRecord is what is kept for one Idempotency-Key: while the first
// request runs only the reservation (Done false), then a digest of the
// request and the answer it got. Request bodies are never kept.
type IdempotencyRecord struct {
	Key         string // digest of the caller and its key; never the raw key
	Done        bool
	RequestHash []byte
	Status      int
	Header      map[string]string // the answer's headers that matter (Location, Content-Type)
	Body        []byte
	// Ref names the resource the first request created (its Location), so
	// that its answer can be redacted when the resource is deleted.
	Ref       string
	CreatedAt time.Time
	// LockedUntil is the lease of a record not Done: the request holding
	// it renews it while it runs (RenewIdempotency), so a record still not
	// Done after it was abandoned by a server that stopped mid-request.
	LockedUntil time.Time
	// ExpiresAt is when the record is forgotten; a reservation whose lease
	// is still renewed is never forgotten, whatever ExpiresAt says.
	ExpiresAt time.Time
}

// live reports whether r still holds its key at now: unexpired, or a
// reservation whose lease is still renewed (its request still runs).
// postgres_idempotency.go spells the same rule in SQL (idemLive).
func (r *IdempotencyRecord) live(now time.Time) bool {
	return now.Before(r.ExpiresAt) || (!r.Done && now.Before(r.LockedUntil))
}
