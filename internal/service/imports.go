package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// ErrAlreadyImported: the charge a release names already covers an
// imported release (409). One charge pays for one release.
var ErrAlreadyImported = errors.New("the charge already covers an imported release; a charge pays for one release")

// ImportSpec describes a release sanitized outside pwsd (by the Beam
// pipeline, with pwsd's tables) and charged to Dataset beforehand: the
// ledger's external charge ChargeRef, of exactly Spec.Privacy.
type ImportSpec struct {
	SampleSpec
	ChargeRef string
}

// ImportedElement is one element of an imported release: a reported key,
// its sanitized value (NaN in a keys release) and, when the release
// carries them, the MLE frequency and contribution it computed from the
// value (NaN when absent); those must agree with the service's own.
type ImportedElement struct {
	Key          string
	Value        float64
	Frequency    float64
	Contribution float64
}

// ImportSource yields the elements of an imported release one at a time;
// io.EOF after the last. The keys are kept as they are: they must not
// alias a buffer the source reuses.
type ImportSource func() (ImportedElement, error)

// importClaim is the state of an external charge once a release is
// imported against it.
type importClaim struct {
	ImportedSample string `json:"imported_sample"`
}

// Import stores an already-sanitized release as a sample, so that its
// estimates, top-k, ranks and quantiles can be asked like those of a sample
// pwsd sanitized. The service cannot re-check the draws (a sanitized value
// and a raw one can look alike), so it trusts the writer that sends it for
// them, and checks everything else:
//   - the release names an external charge in its dataset's ledger, of the
//     same (epsilon, delta), not yet used by another import (a charge pays
//     for one release; the claim survives the sample's deletion);
//   - every element is one the release's sanitizer can output: unique
//     valid keys; no value in a keys release; in a frequencies release a
//     value > 0 with a finite MLE under the release's table (an integer
//     token for Algorithm 4), and any frequency or contribution it carries
//     equal to the one the service computes from the value (so raw
//     frequencies are refused);
//   - the element count is at most maxElements.
//
// Nothing is charged (the charge was made before the release was
// computed). On any error nothing is stored and the charge stays unused.
func (s *Samples) Import(ctx context.Context, spec ImportSpec, maxElements int, src ImportSource) (*Sample, error) {
	if err := inScope(ctx, "dataset", spec.Dataset); err != nil {
		return nil, err
	}
	if spec.Dataset == "" {
		return nil, fieldErr("dataset", "is required: an imported release names the dataset it was charged to")
	}
	if spec.ChargeRef == "" {
		return nil, fieldErr("charge_ref", "is required: the ref of the external charge that paid for the release")
	}
	if err := s.checkSampleWork(ctx, spec.SampleSpec); err != nil {
		return nil, err
	}
	if err := s.checkImportCharge(ctx, spec); err != nil {
		return nil, err
	}
	table, err := s.cache.Sanitizer(spec.Privacy, spec.Sampling, spec.Method)
	if err != nil {
		return nil, err
	}
	seen := s.newKeySet(maxElements)
	defer s.releaseKeySet(seen)
	var out []store.Element
	var given [][2]float64 // the release's frequency and contribution per element
	// The values' chunks are what the import computes: the release work
	// bound applies as to a release (issue 31: it did not, and an import of
	// 2,000 values 10^6 apart ran for 36 s where the same release was a 422).
	stretches := newReleaseStretches(spec.Privacy)
	stretches.field = "value"
	limit := FrequencyLimit(spec.Privacy)
	for n := 0; ; n++ {
		e, err := src()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n >= maxElements {
			return nil, &LimitError{Msg: fmt.Sprintf("a sample may hold at most %d elements (PWSD_MAX_ELEMENTS)", maxElements)}
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		seen.add([]byte(e.Key))
		if err := checkImported(n, e, spec, limit); err != nil {
			return nil, err
		}
		out = append(out, store.Element{Key: e.Key, Value: e.Value, Estimate: math.NaN()})
		if spec.Release == ReleaseFrequencies {
			stretches.add(n, e.Value)
		}
		given = append(given, [2]float64{e.Frequency, e.Contribution})
	}
	if i, dup := seen.firstRepeat(); dup {
		return nil, fieldErr(fmt.Sprintf("elements[%d].key", i), "repeats the key of an earlier element; keys must be unique")
	}
	if err := s.releaseCost(spec.SampleSpec, stretches); err != nil {
		return nil, err
	}
	if err := s.estimateElements(ctx, spec.SampleSpec, table, out); err != nil {
		return nil, err
	}
	for i, e := range out {
		if spec.Release == ReleaseFrequencies && !(e.Estimate > 0 && !math.IsInf(e.Estimate, 0)) {
			return nil, fieldErr(fmt.Sprintf("elements[%d].value", i), "is not a value the release's sanitizer outputs: no frequency reports it")
		}
	}
	view := &Sample{Spec: spec.SampleSpec, Elements: out}
	if err := s.attachKeys(ctx, view); err != nil {
		return nil, err
	}
	for i, k := range view.Keys {
		if f := given[i][0]; !math.IsNaN(f) && !sameNumber(f, k.Frequency) {
			return nil, fieldErr(fmt.Sprintf("elements[%d].frequency", i), "is not the MLE frequency of the element's value under the release's table: an import holds sanitized values and what pwsd derives from them, never raw frequencies")
		}
		if c := given[i][1]; !math.IsNaN(c) && !sameNumber(c, k.Contribution) {
			return nil, fieldErr(fmt.Sprintf("elements[%d].contribution", i), "is not the MLE contribution of the element's value under the release's table")
		}
	}
	smp, err := s.newStoredSample(spec.SampleSpec, out)
	if err != nil {
		return nil, err
	}
	if err := s.claimCharge(ctx, spec.ChargeRef, smp.ID); err != nil {
		return nil, err
	}
	if err := s.store.CreateSample(ctx, smp, nil); err != nil {
		s.unclaimCharge(ctx, spec.ChargeRef)
		return nil, notFoundAs(storeErr(err, "storing imported sample"), "dataset", spec.Dataset)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, ExpiresAt: smp.ExpiresAt, Spec: view.Spec, Elements: out, Reported: len(out), Keys: view.Keys}, nil
}

// sameNumber reports whether a release's number equals the service's, up to the
// rounding of a decimal rendering.
func sameNumber(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// checkImported checks element n's shape against the release kind, and its
// value against limit (FrequencyLimit, computed once per import).
func checkImported(n int, e ImportedElement, spec ImportSpec, limit int64) error {
	at := func(f string) string { return fmt.Sprintf("elements[%d].%s", n, f) }
	if spec.Release == ReleaseKeys {
		switch {
		case !math.IsNaN(e.Value):
			return fieldErr(at("value"), "must be absent in a keys release")
		case !math.IsNaN(e.Frequency):
			return fieldErr(at("frequency"), "must be absent in a keys release")
		case !math.IsNaN(e.Contribution):
			return fieldErr(at("contribution"), "must be absent in a keys release")
		}
		return nil
	}
	v := e.Value
	switch {
	case math.IsNaN(v):
		return fieldErr(at("value"), "is required in a frequencies release")
	case !(v > 0) || math.IsInf(v, 0):
		return fieldErr(at("value"), "must be a sanitized value: finite and greater than 0")
	case spec.Method == sanitize.MethodDiscrete && v != math.Trunc(v):
		return fieldErr(at("value"), "must be an integer token in a discrete (Algorithm 4) release")
	case v > float64(limit):
		return fieldErr(at("value"), "exceeds %d, the largest value a release at this epsilon and delta holds (2^33 less a margin of a few windows L + 1; docs/api.md)", limit)
	}
	return nil
}

// checkImportCharge finds the release's charge in its dataset's ledger.
func (s *Samples) checkImportCharge(ctx context.Context, spec ImportSpec) error {
	d, err := s.datasets.Get(ctx, spec.Dataset)
	if err != nil {
		return notFoundAs(err, "dataset", spec.Dataset)
	}
	for _, r := range d.Releases {
		if r.Kind != "external" || r.Ref != spec.ChargeRef {
			continue
		}
		if r.Epsilon != spec.Privacy.Epsilon || r.Delta != spec.Privacy.Delta {
			return fieldErr("charge_ref", "was charged epsilon %g, delta %g; the release says epsilon %g, delta %g", r.Epsilon, r.Delta, spec.Privacy.Epsilon, spec.Privacy.Delta)
		}
		return nil
	}
	return fieldErr("charge_ref", "names no external charge (POST /v1/datasets/{name}/charges) in the ledger of dataset %q", spec.Dataset)
}

// claimCharge marks the external charge ref as paying for sample id, or
// returns ErrAlreadyImported.
func (s *Samples) claimCharge(ctx context.Context, ref, id string) error {
	claim, err := json.Marshal(importClaim{ImportedSample: id})
	if err != nil {
		return fmt.Errorf("encoding import claim: %w", err)
	}
	err = s.store.UpdateState(ctx, "charge", ref, func(rec *store.StateRecord) (*store.Charge, error) {
		if len(rec.State) > 0 {
			return nil, ErrAlreadyImported
		}
		rec.State = claim
		rec.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
		return nil, nil
	})
	if errors.Is(err, ErrAlreadyImported) {
		return err
	}
	return storeErr(err, "claiming the charge")
}

// unclaimCharge frees a charge whose sample could not be stored. Should it
// fail, the charge stays claimed: the release cannot be imported, which
// is the safe side.
func (s *Samples) unclaimCharge(ctx context.Context, ref string) {
	_ = s.store.UpdateState(context.WithoutCancel(ctx), "charge", ref, func(rec *store.StateRecord) (*store.Charge, error) {
		rec.State = []byte{}
		return nil, nil
	})
}
