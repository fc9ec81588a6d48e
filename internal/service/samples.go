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
	Spec      SampleSpec
	Elements  []store.Element
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
	table, err := s.tables.get(spec.Privacy, spec.Sampling, spec.Method)
	if err != nil {
		return nil, err
	}
	limit := frequencyLimit(table)
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
			return nil, fieldErr(fmt.Sprintf("elements[%d].frequency", n), "exceeds %d, the largest frequency this sampling scheme can be sanitized at (q_i < 1 beyond it)", limit)
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

	header, err := json.Marshal(sampleHeader{Dataset: spec.Dataset, Privacy: spec.Privacy, Sampling: spec.Sampling, Release: spec.Release, Method: spec.Method})
	if err != nil {
		return nil, fmt.Errorf("encoding sample header: %w", err)
	}
	smp := &store.Sample{ID: newID(), CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Dataset: spec.Dataset, Header: header, Elements: out}
	var charge *store.Charge
	if spec.Dataset != "" {
		charge = &store.Charge{Dataset: spec.Dataset, Kind: "sample", Ref: smp.ID, Epsilon: spec.Privacy.Epsilon, Delta: spec.Privacy.Delta}
	}
	if err := s.store.CreateSample(ctx, smp, charge); err != nil {
		return nil, notFoundAs(storeErr(err, "storing sample"), "dataset", spec.Dataset)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, Spec: spec, Elements: out}, nil
}

// GetSample returns a stored sample.
func (s *Service) GetSample(ctx context.Context, id string) (*Sample, error) {
	smp, err := s.store.GetSample(ctx, id)
	if err != nil {
		return nil, storeErr(err, "reading sample")
	}
	var h sampleHeader
	if err := json.Unmarshal(smp.Header, &h); err != nil {
		return nil, fmt.Errorf("decoding sample header: %w", err)
	}
	spec := SampleSpec{Dataset: h.Dataset, Privacy: h.Privacy, Sampling: h.Sampling, Release: h.Release, Method: h.Method}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, Spec: spec, Elements: smp.Elements}, nil
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
