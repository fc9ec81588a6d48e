package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
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
// io.EOF after the last. The key it returns need only stay valid until its
// next call (it may alias the source's line buffer): CreateSample copies
// the keys it keeps (reported ones only). Errors it returns (e.g. *FieldError for a malformed
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
	seen := s.newKeySet(maxElements)
	defer s.releaseKeySet(seen)
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
		seen.add(key)
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
		key = strings.Clone(key) // the source's key is valid only until its next call
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
		return nil, storeErr(err, "storing sample")
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

// keySet detects repeated keys without retaining them. Per element it keeps
// two independent 64-bit hashes of the key bytes: the first, with its low
// idxBits bits replaced by the element's index, goes to one of 256 buckets
// by its top 8 bits; the second is kept in input order. At the end each
// bucket is sorted as plain uint64s and only entries whose first hashes
// agree (on their 64 - idxBits high bits) have their second hashes
// compared. Keys are equal, up to a false positive of probability about
// n^2 / 2^(129 - idxBits) (never in practice), exactly when both agree.
// The buffers are reused across requests (Service.keySets).
type keySet struct {
	s1, s2  maphash.Seed
	idxBits uint
	buckets [256][]uint64
	h2      [][]uint64 // chunks of keyChunk second hashes, input order
	n       int
}

const keyChunk = 1 << 16

// newKeySet returns an empty key set for at most maxElements keys, with
// fresh hash seeds, reusing a pooled one's buffers when there is one.
func (s *Service) newKeySet(maxElements int) *keySet {
	k, _ := s.keySets.Get().(*keySet)
	if k == nil {
		k = &keySet{}
	}
	k.s1, k.s2 = maphash.MakeSeed(), maphash.MakeSeed()
	k.idxBits = uint(min(max(bits.Len(uint(maxElements)), 1), 40))
	for b := range k.buckets {
		k.buckets[b] = k.buckets[b][:0]
	}
	k.n = 0
	return k
}

// release returns k's buffers to the pool.
func (s *Service) releaseKeySet(k *keySet) { s.keySets.Put(k) }

// add records the key of the next element (index k.n). The key is hashed,
// not kept: it may alias a buffer the caller reuses.
func (k *keySet) add(key string) {
	idx := k.n
	k.n++
	h1 := maphash.String(k.s1, key)
	mask := uint64(1)<<k.idxBits - 1
	b := &k.buckets[h1>>56]
	*b = append(*b, h1&^mask|uint64(idx))
	c := idx / keyChunk
	if c == len(k.h2) {
		k.h2 = append(k.h2, make([]uint64, keyChunk))
	}
	k.h2[c][idx%keyChunk] = maphash.String(k.s2, key)
}

// firstRepeat returns the smallest index of an element whose key repeats an
// earlier element's key.
func (k *keySet) firstRepeat() (int, bool) {
	mask := uint64(1)<<k.idxBits - 1
	best, found := 0, false
	for b := range k.buckets {
		hs := k.buckets[b]
		slices.Sort(hs)
		for i := 1; i < len(hs); i++ {
			if hs[i]&^mask != hs[i-1]&^mask {
				continue
			}
			// A run of equal first hashes (sorted by index within it):
			// element hs[i] repeats an earlier key when an earlier member
			// of the run has the same second hash.
			j := int(hs[i] & mask)
			hj := k.h2[j/keyChunk][j%keyChunk]
			for r := i - 1; r >= 0 && hs[r]&^mask == hs[i]&^mask; r-- {
				e := int(hs[r] & mask)
				if k.h2[e/keyChunk][e%keyChunk] == hj && (!found || j < best) {
					best, found = j, true
					break
				}
			}
		}
	}
	return best, found
}
