package service

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// Release says what a sample release publishes.
type Release string

// The two kinds of sample release.
const (
	ReleaseKeys        Release = "keys"        // reported keys only (Algorithm 3)
	ReleaseFrequencies Release = "frequencies" // keys with sanitized values (Algorithm 4 or 5)
)

// SampleSpec is a validated description of one sample release.
type SampleSpec struct {
	Dataset  string // charge the release to this dataset's budget; empty: none
	Privacy  sanitize.Privacy
	Sampling sanitize.Sampling
	Release  Release
	Method   sanitize.Method
	// Estimator chooses the per-key contribution shown with the release
	// (mle, the default when empty, or biased_down). It is a view, not part
	// of the stored release.
	Estimator estimate.Estimator
}

// NewSampleSpec validates a release description. Empty release and method
// take their defaults (frequencies, max_separation).
func NewSampleSpec(dataset string, p sanitize.Privacy, s sanitize.Sampling, release Release, method sanitize.Method) (SampleSpec, error) {
	if release == "" {
		release = ReleaseFrequencies
	}
	if method == "" {
		method = sanitize.MethodMaxSeparation
	}
	if release != ReleaseKeys && release != ReleaseFrequencies {
		return SampleSpec{}, fieldErr("release", "must be keys or frequencies")
	}
	if err := method.Validate(); err != nil {
		return SampleSpec{}, fieldErr("method", "must be discrete or max_separation")
	}
	if err := p.Validate(); err != nil {
		return SampleSpec{}, paramFieldErr("privacy", err)
	}
	if err := s.Validate(); err != nil {
		return SampleSpec{}, paramFieldErr("sampling", err)
	}
	return SampleSpec{Dataset: dataset, Privacy: p, Sampling: s, Release: release, Method: method}, nil
}

// paramFieldErr prefixes a sanitize.ParamError's field with the JSON object
// holding it.
func paramFieldErr(prefix string, err error) error {
	var pe *sanitize.ParamError
	if errors.As(err, &pe) {
		return &FieldError{Field: prefix + "." + pe.Field, Msg: pe.Msg}
	}
	return &FieldError{Field: prefix, Msg: "is not valid"}
}

// Sample is a stored sanitized sample.
type Sample struct {
	ID        string
	CreatedAt time.Time
	// ExpiresAt is when the sample is deleted (PWSD_SAMPLE_TTL); zero: never.
	ExpiresAt time.Time
	Spec      SampleSpec
	Elements  []store.Element // nil in listings
	Reported  int             // number of elements
	// Keys holds, for a frequencies release read through CreateSample or
	// GetSampleView, each element's MLE frequency and contribution under
	// Spec.Estimator (same order as Elements); nil otherwise.
	Keys []KeyEstimate
}

// ElementSource yields the raw elements of a sample one at a time; it returns
// io.EOF after the last. Errors it returns (e.g. *FieldError for a malformed
// element) abort the release. Raw elements never leave the service's memory.
type ElementSource func() (key string, frequency int64, err error)

// sampleHeader is the stored JSON form of a SampleSpec.
type sampleHeader struct {
	Dataset  string            `json:"dataset,omitempty"`
	Privacy  sanitize.Privacy  `json:"privacy"`
	Sampling sanitize.Sampling `json:"sampling"`
	Release  Release           `json:"release"`
	Method   sanitize.Method   `json:"method"`
}

// CreateSample sanitizes the elements src yields and stores only the
// sanitized output. Each key is reported with probability pi_i/q_i (the client
// already sampled it with q_i), then (frequencies release) gets a sanitized
// value and its MLE frequency estimate. A repeated key or invalid element
// aborts the release; a release that would overspend its dataset's budget is
// refused (ErrBudget). Either way nothing is stored.
//
// The result holds reported keys only, in random order: it reveals neither how
// many elements came in nor which were dropped.
func (s *Service) CreateSample(ctx context.Context, spec SampleSpec, maxElements int, src ElementSource) (*Sample, error) {
	if err := s.checkSampleWork(spec); err != nil {
		return nil, err
	}
	// Refuse an unknown dataset or an overspend before reading the upload;
	// the store charges atomically below, so a concurrent release that
	// spends the rest meanwhile is still refused there.
	if spec.Dataset != "" {
		if err := s.checkBudget(ctx, spec.Dataset, spec.Privacy.Epsilon, spec.Privacy.Delta); err != nil {
			return nil, err
		}
	}
	table, err := s.tables.get(spec.Privacy, spec.Sampling, spec.Method)
	if err != nil {
		return nil, err
	}
	limit := s.sampleFrequencyLimit(spec, table)
	rng := s.newRand()
	seen := newKeySet()
	var out []store.Element
	maxValue := 0.0
	for n := 0; ; n++ {
		key, freq, err := src()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n >= maxElements {
			return nil, &LimitError{Msg: fmt.Sprintf("a sample may hold at most %d elements (PWSD_MAX_ELEMENTS)", maxElements)}
		}
		seen.add(key, n)
		if freq > limit {
			return nil, fieldErr(fmt.Sprintf("elements[%d].frequency", n), "exceeds %d, the largest frequency this release can sanitize: q_i < 1 beyond it, or the table work would pass PWSD_MAX_TABLE_WORK", limit)
		}
		o, err := table.Draw(freq, rng)
		if err != nil {
			return nil, fmt.Errorf("sanitizing element: %w", err)
		}
		if !o.Reported {
			continue
		}
		e := store.Element{Key: key, Value: math.NaN(), Estimate: math.NaN()}
		if spec.Release == ReleaseFrequencies {
			e.Value = o.Value
			maxValue = math.Max(maxValue, o.Value)
		}
		out = append(out, e)
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if i, dup := seen.firstRepeat(); dup {
		return nil, fieldErr(fmt.Sprintf("elements[%d].key", i), "repeats the key of an earlier element; keys must be unique")
	}
	if spec.Release == ReleaseFrequencies && len(out) > 0 {
		if err := s.checkWork(spec.Privacy, spec.Sampling, 0, estimatorSize(table, maxValue), 1, "privacy.epsilon", "elements"); err != nil {
			return nil, err
		}
		et, err := s.estimatorTable(ctx, table, estimate.Spec{MaxFrequency: estimatorSize(table, maxValue), G: identityG, Estimator: estimate.MLE})
		if err != nil {
			return nil, err
		}
		for i := range out {
			if out[i].Estimate, err = et.Estimate(out[i].Value); err != nil {
				return nil, estimateErr(err)
			}
		}
	}
	// Input order could correlate with the data: publish in random order.
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	// Per-key frequencies and contributions, before anything is stored: a
	// failure here must leave no release behind.
	view := &Sample{Spec: spec, Elements: out}
	if err := s.attachKeys(ctx, view); err != nil {
		return nil, err
	}

	header, err := json.Marshal(sampleHeader{Dataset: spec.Dataset, Privacy: spec.Privacy, Sampling: spec.Sampling, Release: spec.Release, Method: spec.Method})
	if err != nil {
		return nil, fmt.Errorf("encoding sample header: %w", err)
	}
	smp := &store.Sample{ID: newID(), CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Dataset: spec.Dataset, Header: header, Elements: out}
	if s.sampleTTL > 0 {
		smp.ExpiresAt = smp.CreatedAt.Add(s.sampleTTL)
	}
	var charge *store.Charge
	if spec.Dataset != "" {
		charge = &store.Charge{Dataset: spec.Dataset, Kind: "sample", Ref: smp.ID, Epsilon: spec.Privacy.Epsilon, Delta: spec.Privacy.Delta}
	}
	if err := s.store.CreateSample(ctx, smp, charge); err != nil {
		return nil, notFoundAs(s.budgetError(ctx, err, "storing sample", spec.Dataset, spec.Privacy.Epsilon, spec.Privacy.Delta), "dataset", spec.Dataset)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, ExpiresAt: smp.ExpiresAt, Spec: view.Spec, Elements: out, Reported: len(out), Keys: view.Keys}, nil
}

// attachKeys fills smp.Keys for a frequencies release under
// smp.Spec.Estimator (empty: mle).
func (s *Service) attachKeys(ctx context.Context, smp *Sample) error {
	if smp.Spec.Estimator == "" {
		smp.Spec.Estimator = estimate.MLE
	}
	if smp.Spec.Release != ReleaseFrequencies {
		smp.Spec.Estimator = ""
		return nil
	}
	keys, err := s.KeyEstimates(ctx, smp, smp.Spec.Estimator)
	if err != nil {
		return err
	}
	smp.Keys = keys
	return nil
}

// GetSampleView returns a stored sample with each reported key's MLE
// frequency and its contribution under estimator e (mle or biased_down).
func (s *Service) GetSampleView(ctx context.Context, id string, e estimate.Estimator) (*Sample, error) {
	if e != "" && e != estimate.MLE && e != estimate.BiasedDown {
		return nil, fieldErr("estimator", "must be mle or biased_down")
	}
	smp, err := s.GetSample(ctx, id)
	if err != nil {
		return nil, err
	}
	smp.Spec.Estimator = e
	if err := s.attachKeys(ctx, smp); err != nil {
		return nil, err
	}
	return smp, nil
}

// GetSample returns a stored sample.
func (s *Service) GetSample(ctx context.Context, id string) (*Sample, error) {
	smp, err := s.store.GetSample(ctx, id)
	if err != nil {
		return nil, storeErr(err, "reading sample")
	}
	return sampleOf(smp)
}

// newID returns a random 128-bit identifier in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keySet detects repeated keys without retaining them: it records two
// independent 64-bit hashes per key (false-positive probability about
// n^2 / 2^129, i.e. never in practice) and finds repeats by sorting once at
// the end, which is several times faster than a hash set for 10^6 keys.
type keySet struct {
	s1, s2 maphash.Seed
	hs     []keyHash
}

type keyHash struct {
	a, b uint64
	idx  int
}

func newKeySet() *keySet { return &keySet{s1: maphash.MakeSeed(), s2: maphash.MakeSeed()} }

// add records the key of element idx.
func (k *keySet) add(key string, idx int) {
	k.hs = append(k.hs, keyHash{maphash.String(k.s1, key), maphash.String(k.s2, key), idx})
}

// firstRepeat returns the smallest index of an element whose key repeats an
// earlier element's key.
func (k *keySet) firstRepeat() (int, bool) {
	slices.SortFunc(k.hs, func(x, y keyHash) int {
		if c := cmp.Compare(x.a, y.a); c != 0 {
			return c
		}
		if c := cmp.Compare(x.b, y.b); c != 0 {
			return c
		}
		return cmp.Compare(x.idx, y.idx)
	})
	best, found := 0, false
	for i := 1; i < len(k.hs); i++ {
		if k.hs[i].a == k.hs[i-1].a && k.hs[i].b == k.hs[i-1].b && (!found || k.hs[i].idx < best) {
			best, found = k.hs[i].idx, true
		}
	}
	return best, found
}
