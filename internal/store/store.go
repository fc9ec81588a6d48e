package store

import (
	"context"
	"errors"
	"math"
	"time"
)

// Errors reported by every implementation. Wrapped errors match with errors.Is.
var (
	ErrNotFound = errors.New("store: not found")
	ErrExists   = errors.New("store: already exists")
	// ErrBudget means a charge would overspend its dataset's budget; nothing
	// was written.
	ErrBudget = errors.New("store: privacy budget exceeded")
)

// Store is pwsd's persistence. All methods are safe for concurrent use.
type Store interface {
	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
	// Ready reports whether the store is reachable and its schema is current.
	Ready(ctx context.Context) error
	// Close releases resources.
	Close()

	// GetTable returns the cached table stored under key.
	GetTable(ctx context.Context, key string) ([]byte, bool, error)
	// PutTable stores a table under key. Tables are pure functions of their
	// key, so a second put of the same key is a no-op.
	PutTable(ctx context.Context, key string, data []byte) error

	// CreateSample stores a sanitized sample; when charge is non-nil the
	// charge is recorded in the same transaction, or neither happens
	// (ErrBudget, ErrNotFound for an unknown dataset).
	CreateSample(ctx context.Context, s *Sample, charge *Charge) error
	// GetSample returns a stored sample or ErrNotFound.
	GetSample(ctx context.Context, id string) (*Sample, error)

	// CreateDataset stores a new dataset with nothing spent, or ErrExists.
	CreateDataset(ctx context.Context, d Dataset) error
	// GetDataset returns a dataset and its ledger, oldest release first.
	GetDataset(ctx context.Context, name string) (Dataset, []Release, error)

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

	// Lifecycle lists, deletes and expires resources (lifecycle.go).
	Lifecycle
	// Idempotency keeps the answers of keyed requests (idempotency.go).
	Idempotency
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

// Dataset is a privacy budget and what has been spent of it.
type Dataset struct {
	Name          string
	EpsilonBudget float64
	DeltaBudget   float64
	SpentEpsilon  float64
	SpentDelta    float64
	CreatedAt     time.Time
}

// Charge is one release to be charged to a dataset by basic composition.
type Charge struct {
	Dataset string
	Kind    string // "sample" or "stream"
	Ref     string // sample id or stream id
	Epsilon float64
	Delta   float64
}

// Release is one charged release in a dataset's ledger.
type Release struct {
	Kind      string
	Ref       string
	Epsilon   float64
	Delta     float64
	CreatedAt time.Time
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

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
