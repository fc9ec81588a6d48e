package api

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pwsd/pwsd/internal/service"
)

// ImportHeader is line 1 of POST /v1/samples:import: the header line of a
// pwsd-beam release (PREFIX-meta.json) as the pipeline writes it. id,
// created_at, estimator and shards describe the pipeline's run and are
// not kept; the stored sample gets its own id.
type ImportHeader struct {
	// ID is the pipeline's release id (not kept).
	ID string `json:"id,omitempty" example:"5f0c1e2d3b4a69788796a5b4c3d2e1f0"`
	// CreatedAt is when the pipeline wrote the release (not kept).
	CreatedAt *time.Time `json:"created_at,omitempty"`
	// Dataset is the dataset the release was charged to.
	Dataset string `json:"dataset" validate:"required,dataset_name" example:"queries-2026-11"`
	// Privacy is the release's per-record guarantee, the one charged.
	Privacy PrivacyParams `json:"privacy" validate:"required"`
	// Sampling is the threshold sampling the pipeline applied.
	Sampling SamplingParams `json:"sampling" validate:"required"`
	// Release is keys or frequencies.
	Release string `json:"release" validate:"required,oneof=keys frequencies" enums:"keys,frequencies"`
	// Method is the sanitizer: max_separation (Algorithm 5) or discrete (Algorithm 4).
	Method string `json:"method" validate:"required,oneof=max_separation discrete" enums:"max_separation,discrete"`
	// Reported is the number of element lines that follow.
	Reported *int `json:"reported" validate:"required,min=0"`
	// Estimator names the estimator of the elements' frequency and contribution (mle; absent in a keys release).
	Estimator string `json:"estimator,omitempty" validate:"omitempty,oneof=mle" enums:"mle"`
	// Unit is the release's privacy unit.
	Unit ImportUnit `json:"privacy_unit" validate:"required"`
	// Shards is the number of shard files the pipeline wrote (not kept).
	Shards int `json:"shards,omitempty"`
	// ChargeRef is the ref of the external charge (POST
	// /v1/datasets/{name}/charges) that paid for the release.
	ChargeRef string `json:"charge_ref" validate:"required" example:"9a8b7c6d5e4f30211203f4e5d6c7b8a9"`
}

// ImportUnit is the release's privacy unit. Only releases whose tables
// were built at the release's own (epsilon, delta), max_weight 1, can be
// imported: a weighted release's values come from tables at other
// parameters than the guarantee it states.
type ImportUnit struct {
	// Record says what one record may change.
	Record string `json:"record,omitempty"`
	// MaxWeight is the clamp of record weights; must be 1.
	MaxWeight int64 `json:"max_weight" validate:"required,eq=1"`
	// TableEpsilon is the epsilon the sanitizer tables were built at; must equal privacy.epsilon.
	TableEpsilon *float64 `json:"table_epsilon" validate:"required"`
	// TableDelta is the delta the sanitizer tables were built at; must equal privacy.delta.
	TableDelta *float64 `json:"table_delta" validate:"required"`
}

// ImportElement is one element line of an import: a line of the
// pipeline's shards (the service's SanitizedElement). frequency and
// contribution, when present, must be what pwsd computes from value.
type ImportElement struct {
	// Key is the reported key.
	Key string `json:"key"`
	// Value is the sanitized value (an ordinal token); absent in a keys release.
	Value *float64 `json:"value,omitempty"`
	// Frequency is the pipeline's MLE frequency of the value; must equal pwsd's.
	Frequency *float64 `json:"frequency,omitempty"`
	// Contribution is the pipeline's MLE contribution of the value; must equal pwsd's.
	Contribution *float64 `json:"contribution,omitempty"`
}

// importSample stores a release sanitized by the Beam pipeline.
//
//	@Summary		Import a release sanitized outside pwsd (pwsd-beam) as a sample
//	@ID			importSample
//	@Description	Body (application/x-ndjson): line 1 the pipeline's header line (ImportHeader, PREFIX-meta.json), then the element lines of its shards (ImportElement). The release must name, by charge_ref, an external charge of the same (epsilon, delta) in its dataset's ledger that no other import has used; nothing is charged again. Every element must be one the release's sanitizer can output: unique keys; no value in a keys release; in a frequencies release a value > 0 that some frequency reports (an integer token for discrete), with frequency and contribution, if present, equal to the MLE pwsd derives from the value (raw frequencies are refused). pwsd cannot re-check the draws themselves: it trusts the writer token that sends the release, as it trusts the writer that charged it. The stored sample answers GET /v1/samples/{id} and its estimate, top, rank and quantiles like a sample pwsd sanitized.
//	@Tags			samples
//	@Accept			application/x-ndjson
//	@Produce		json
//	@Produce		application/x-ndjson
//	@Param			body	body		string	true	"line 1: the header (the pipeline's PREFIX-meta.json line: version, privacy, sampling, method, release, dataset, charge_ref); then one element per line (key, value, frequency, contribution)"
//	@Success		201		{object}	SampleView
//	@Header			201		{string}	Location	"/v1/samples/{id}"
//	@Failure		400,403,404,409,413,415,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples:import [post]
func (h *handler) importSample(w http.ResponseWriter, r *http.Request) error {
	if mediaType(r) != "application/x-ndjson" {
		return newProblem(http.StatusUnsupportedMediaType, "send application/x-ndjson: the pipeline's header line, then its element lines")
	}
	lr := newLineReader(r.Body, h.limits.MaxLineBytes)
	var hd ImportHeader
	if err := readHeaderLine(lr, &hd, "the release's header line"); err != nil {
		return err
	}
	if err := h.validate.Struct(hd); err != nil {
		return atLine(validationProblem(err, ""), lr.n)
	}
	spec, err := h.spec(SampleHeader{Dataset: hd.Dataset, Privacy: hd.Privacy, Sampling: hd.Sampling, Release: hd.Release, Method: hd.Method})
	if err != nil {
		return atLine(err, lr.n)
	}
	if *hd.Unit.TableEpsilon != spec.Privacy.Epsilon || *hd.Unit.TableDelta != spec.Privacy.Delta {
		return atLine(invalid("privacy_unit.table_epsilon", "must equal privacy.epsilon (and table_delta privacy.delta): only releases built at their own parameters can be imported"), lr.n)
	}
	want := *hd.Reported
	i := 0
	src := func() (service.ImportedElement, error) {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			if i != want {
				return service.ImportedElement{}, invalid("reported", fmt.Sprintf("says %d elements; the body holds %d", want, i))
			}
			return service.ImportedElement{}, io.EOF
		}
		if err != nil {
			return service.ImportedElement{}, err
		}
		var e ImportElement
		if err := decodeLine(line, &e, lr.n, "elements["+strconv.Itoa(i)+"]"); err != nil {
			return service.ImportedElement{}, err
		}
		if err := h.elementKey(i, e.Key); err != nil {
			return service.ImportedElement{}, atLine(err, lr.n)
		}
		i++
		return service.ImportedElement{Key: e.Key, Value: orNaN(e.Value), Frequency: orNaN(e.Frequency), Contribution: orNaN(e.Contribution)}, nil
	}
	smp, err := h.svc.Samples.Import(r.Context(), service.ImportSpec{SampleSpec: spec, ChargeRef: hd.ChargeRef}, h.limits.MaxElements, src)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/samples/"+smp.ID)
	h.writeSample(w, r, http.StatusCreated, smp)
	return nil
}

// orNaN is *p, or NaN when absent.
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
