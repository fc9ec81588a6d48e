package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/jsonenc"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
)

// SampleHeader describes a sample release: everything but the elements. It is
// the first line of an NDJSON request.
type SampleHeader struct {
	Dataset  string         `json:"dataset,omitempty" validate:"omitempty,dataset_name" example:"queries-2026-11"`
	Privacy  PrivacyParams  `json:"privacy" validate:"required"`
	Sampling SamplingParams `json:"sampling" validate:"required"`
	Release  string         `json:"release,omitempty" validate:"omitempty,oneof=keys frequencies" enums:"keys,frequencies" default:"frequencies"`
	Method   string         `json:"method,omitempty" validate:"omitempty,oneof=max_separation discrete" enums:"max_separation,discrete" default:"max_separation"`
}

// SampleElement is one raw element: a key and its integer frequency >= 1.
// Raw elements are never stored or logged.
type SampleElement struct {
	Key       string  `json:"key" example:"a"`
	Frequency Integer `json:"frequency" swaggertype:"integer" example:"17"`
}

// SampleRequest is the JSON form of POST /v1/samples.
type SampleRequest struct {
	SampleHeader
	Elements []SampleElement `json:"elements"`
}

// SanitizedElement is one reported key. Value is the sanitized value: an
// ORDINAL token (Algorithm 4: the integer token j; Algorithm 5: a uniform
// draw inside the chosen piece), not a frequency. Frequency is the point
// estimate (MLE) of this key's own frequency, with no inverse-probability
// weighting. Contribution is this key's term in the estimate of a sum of
// frequencies under the sample's estimator (with sampling it includes the
// inverse inclusion probability: it is not a frequency). A keys release has
// none of the three.
type SanitizedElement struct {
	Key          string   `json:"key"`
	Value        *float64 `json:"value,omitempty"`
	Frequency    *float64 `json:"frequency,omitempty"`
	Contribution *float64 `json:"contribution,omitempty"`
}

// PrivacyView echoes a release's guarantee.
type PrivacyView struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// SamplingView echoes a release's sampling scheme.
type SamplingView struct {
	Scheme        string    `json:"scheme"`
	Threshold     float64   `json:"threshold,omitempty"`
	Power         float64   `json:"power,omitempty"`
	Probabilities []float64 `json:"probabilities,omitempty"`
}

// SampleMeta is a stored sample without its elements (the NDJSON header line).
type SampleMeta struct {
	ID        string       `json:"id"`
	CreatedAt time.Time    `json:"created_at"`
	Dataset   string       `json:"dataset,omitempty"`
	Privacy   PrivacyView  `json:"privacy"`
	Sampling  SamplingView `json:"sampling"`
	Release   string       `json:"release"`
	Method    string       `json:"method"`
	// ExpiresAt is when the sample is deleted (PWSD_SAMPLE_TTL); absent:
	// kept until deleted.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Reported is the number of reported keys (elements) the sample holds.
	Reported int `json:"reported"`
	// Estimator names the estimator of the elements' contribution (mle or
	// biased_down); absent for a keys release.
	Estimator string `json:"estimator,omitempty" enums:"mle,biased_down"`
}

// SampleView is a stored sanitized sample.
type SampleView struct {
	SampleMeta
	Elements []SanitizedElement `json:"elements"`
	// NextCursor is the cursor of the next page of elements when the
	// request asked for a page (limit or cursor); absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

func privacyView(p sanitize.Privacy) PrivacyView {
	return PrivacyView{Epsilon: p.Epsilon, Delta: p.Delta}
}

func samplingView(s sanitize.Sampling) SamplingView {
	return SamplingView{Scheme: string(s.Scheme), Threshold: s.Threshold, Power: s.Power, Probabilities: s.Probabilities}
}

func sampleMeta(s *service.Sample) SampleMeta {
	m := SampleMeta{ID: s.ID, CreatedAt: s.CreatedAt, Dataset: s.Spec.Dataset, Privacy: privacyView(s.Spec.Privacy),
		Sampling: samplingView(s.Spec.Sampling), Release: string(s.Spec.Release), Method: string(s.Spec.Method),
		Estimator: string(s.Spec.Estimator), Reported: s.Reported}
	if !s.ExpiresAt.IsZero() {
		t := s.ExpiresAt
		m.ExpiresAt = &t
	}
	return m
}

// spec validates a header into a service.SampleSpec.
func (h *handler) spec(hd SampleHeader) (service.SampleSpec, error) {
	if err := h.validate.Struct(hd); err != nil {
		return service.SampleSpec{}, validationProblem(err, "")
	}
	p, err := hd.Privacy.privacy("privacy.")
	if err != nil {
		return service.SampleSpec{}, err
	}
	s, err := hd.Sampling.sampling(h.limits.MaxCustomQ)
	if err != nil {
		return service.SampleSpec{}, paramProblem("sampling.", err)
	}
	spec, err := service.NewSampleSpec(hd.Dataset, p, s, service.Release(hd.Release), sanitize.Method(hd.Method))
	if err != nil {
		return spec, paramProblem("", err)
	}
	return spec, nil
}

// element validates one raw element; i is its index for error messages,
// which never contain the element itself.
func (h *handler) element(i int, e SampleElement) (string, int64, error) {
	return h.elementFields(i, e.Key, string(e.Frequency))
}

// elementFields validates one raw element given its key and the text of its
// frequency (a JSON number); i is its index for error messages, which never
// contain the element itself.
func (h *handler) elementFields(i int, key, freq string) (string, int64, error) {
	if err := h.elementKey(i, key); err != nil {
		return "", 0, err
	}
	f, err := strconv.ParseInt(freq, 10, 64)
	if freq == "" {
		return "", 0, invalid(fmt.Sprintf("elements[%d].frequency", i), "is required")
	}
	if err != nil || f < 1 {
		return "", 0, invalid(fmt.Sprintf("elements[%d].frequency", i), "must be an integer of at least 1")
	}
	if f > h.limits.MaxFrequency {
		return "", 0, invalid(fmt.Sprintf("elements[%d].frequency", i), fmt.Sprintf("must be at most %d (PWSD_MAX_FREQUENCY)", h.limits.MaxFrequency))
	}
	return key, f, nil
}

// elementKey validates the key of element i: present, at most
// PWSD_MAX_KEY_BYTES, valid UTF-8. Messages never contain the key.
func (h *handler) elementKey(i int, key string) error {
	switch {
	case key == "":
		return invalid(fmt.Sprintf("elements[%d].key", i), "is required")
	case len(key) > h.limits.MaxKeyBytes:
		return invalid(fmt.Sprintf("elements[%d].key", i), fmt.Sprintf("must be at most %d bytes (PWSD_MAX_KEY_BYTES)", h.limits.MaxKeyBytes))
	case !utf8.ValidString(key):
		return invalid(fmt.Sprintf("elements[%d].key", i), "must be valid UTF-8")
	}
	return nil
}

// readHeaderLine decodes line 1 of an NDJSON body into dst; an empty body
// is a 400 saying that line 1 must be what.
func readHeaderLine(lr *lineReader, dst any, what string) error {
	line, err := lr.next()
	if errors.Is(err, io.EOF) {
		return newProblem(http.StatusBadRequest, "the body is empty; line 1 must be "+what)
	}
	if err != nil {
		return err
	}
	return decodeLine(line, dst, lr.n, "")
}

// createSample sanitizes a non-private sample.
//
//	@Summary		Sanitize a non-private weighted sample
//	@ID			createSample
//	@Description	Each sampled key of frequency i is reported with probability pi_i/q_i; in a frequencies release it gets a sanitized ORDINAL value (Algorithm 5 max_separation, default, or Algorithm 4 discrete) and an MLE frequency estimate. Only the sanitized output is stored. The response lists reported keys only, in random order, and reveals neither how many elements came in nor which were dropped.
//	@Description	Batch form: Content-Type application/x-ndjson, line 1 the header (SampleHeader), each further line one SampleElement. With Accept: application/x-ndjson the answer is the SampleMeta line then one SanitizedElement per line.
//	@Description	CSV form: Content-Type text/csv, a header row naming the columns key and frequency, one element per row; the release description is in the query string (dataset, epsilon, delta, scheme, threshold, power, probabilities comma-separated, release, method), which only this form takes. With Accept: text/csv the answer is the elements as CSV (see GET /v1/samples/{id}).
//	@Description	A dataset's remaining budget is checked before the upload is read: a release that would overspend is a 409 saying what it asks, what is spent and what remains, and nothing is sanitized or charged.
//	@Description	Idempotency-Key: a repeat with the same key and the same request gets the first answer again (Idempotent-Replayed: true) and charges nothing; with another request it is a 422.
//	@Tags			samples
//	@Accept			json
//	@Accept			application/x-ndjson
//	@Accept			text/csv
//	@Produce		json
//	@Produce		application/x-ndjson
//	@Produce		text/csv
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: 1 to 255 visible ASCII characters, remembered for PWSD_IDEMPOTENCY_TTL"
//	@Param			dataset		query	string	false	"CSV form only: charge the release to this dataset"
//	@Param			epsilon		query	number	false	"CSV form only (required there): privacy.epsilon"
//	@Param			delta		query	number	false	"CSV form only (required there): privacy.delta"
//	@Param			scheme		query	string	false	"CSV form only (required there): sampling.scheme"	Enums(ppswor, priority, none, custom)
//	@Param			threshold	query	number	false	"CSV form only: sampling.threshold"
//	@Param			power		query	number	false	"CSV form only: sampling.power"
//	@Param			probabilities	query	string	false	"CSV form only: sampling.probabilities, comma-separated"
//	@Param			release		query	string	false	"CSV form only: release"	Enums(keys, frequencies)
//	@Param			method		query	string	false	"CSV form only: method"	Enums(max_separation, discrete)
//	@Param			body		body		SampleRequest	true	"release description and raw elements"
//	@Param			estimator	query		string			false	"estimator of each key's contribution: mle | biased_down"	default(mle)	Enums(mle, biased_down)
//	@Success		201		{object}	SampleView
//	@Header			201		{string}	Location	"/v1/samples/{id}"
//	@Failure		400,404,409,413,415,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples [post]
func (h *handler) createSample(w http.ResponseWriter, r *http.Request) error {
	est, err := sampleEstimator(r)
	if err != nil {
		return err
	}
	if mediaType(r) != csvMediaType {
		if p := csvOnlyParams(r); p != nil {
			return p
		}
	}
	var spec service.SampleSpec
	var src service.ElementSource
	var lines *elementLines // NDJSON and CSV: the line of each element, for errors
	switch mt := mediaType(r); mt {
	case "application/x-ndjson":
		lr := newLineReader(r.Body, h.limits.MaxLineBytes)
		var hd SampleHeader
		if err := readHeaderLine(lr, &hd, "the header object"); err != nil {
			return err
		}
		if spec, err = h.spec(hd); err != nil {
			return atLine(err, lr.n)
		}
		lines = &elementLines{}
		src = h.ndjsonElements(lr, lines)
	case "application/json", "":
		var req SampleRequest
		if err := decodeJSON(r.Body, &req); err != nil {
			return err
		}
		var err error
		if spec, err = h.spec(req.SampleHeader); err != nil {
			return err
		}
		i := 0
		src = func() (string, int64, error) {
			if i >= len(req.Elements) {
				return "", 0, io.EOF
			}
			i++
			return h.element(i-1, req.Elements[i-1])
		}
	case csvMediaType:
		var err error
		lines = &elementLines{csv: true}
		if spec, src, err = h.csvSample(r, lines); err != nil {
			return err
		}
	default:
		return newProblem(http.StatusUnsupportedMediaType, "send application/json, application/x-ndjson or text/csv")
	}
	spec.Estimator = est
	smp, err := h.svc.Samples.Create(r.Context(), spec, h.limits.MaxElements, src)
	if err != nil {
		return lines.annotate(err)
	}
	w.Header().Set("Location", "/v1/samples/"+smp.ID)
	h.writeSample(w, r, http.StatusCreated, smp)
	return nil
}

// getSample returns a stored sanitized sample.
//
//	@Summary		A stored sanitized sample
//	@ID			getSample
//	@Description	Same shapes as the answer of POST /v1/samples; NDJSON with Accept: application/x-ndjson. Values are ordinal tokens, not frequencies.
//	@Description	JSON answers may be paged: with limit and/or cursor the answer holds that page of elements (in stored order) and next_cursor, absent on the last page; without them it holds every element. NDJSON and CSV always stream every element (limit and cursor are a 400 there).
//	@Description	CSV (Accept: text/csv): a header row key,value,estimate and one row per element; a keys release leaves value and estimate empty.
//	@Tags			samples
//	@Produce		json
//	@Produce		application/x-ndjson
//	@Produce		text/csv
//	@Param			id		path		string	true	"sample id"
//	@Param			limit	query		int		false	"elements per page (1 to 1000, default 100 when cursor is given)"	minimum(1)	maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page (opaque)"
//	@Param			estimator	query		string	false	"estimator of each key's contribution: mle | biased_down"	default(mle)	Enums(mle, biased_down)
//	@Success		200		{object}	SampleView
//	@Failure		400,404,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id} [get]
func (h *handler) getSample(w http.ResponseWriter, r *http.Request) error {
	if paged(r) && (wantsNDJSON(r) || wantsCSV(r)) {
		return newProblem(http.StatusBadRequest, "limit and cursor page JSON answers; NDJSON and CSV answers stream every element")
	}
	pg, err := page(r)
	if err != nil {
		return err
	}
	est, err := sampleEstimator(r)
	if err != nil {
		return err
	}
	smp, err := h.svc.Samples.Get(r.Context(), chi.URLParam(r, "id"), est)
	if err != nil {
		return err
	}
	if !paged(r) {
		h.writeSample(w, r, http.StatusOK, smp)
		return nil
	}
	pageOf, next, err := service.PageElements(smp, pg)
	if err != nil {
		return err
	}
	h.writeSamplePage(w, r, http.StatusOK, pageOf, next)
	return nil
}

// sampleEstimator reads the estimator query parameter of a sample release
// view: mle (default) or biased_down.
func sampleEstimator(r *http.Request) (estimate.Estimator, error) {
	q := newQuery(r)
	e := q.estimator()
	if q.problem() == nil && e != estimate.MLE && e != estimate.BiasedDown {
		q.fail("estimator", "must be mle or biased_down")
	}
	return e, q.problem()
}

// writeSample renders a sample as JSON or NDJSON, streaming the elements.
func (h *handler) writeSample(w http.ResponseWriter, r *http.Request, status int, smp *service.Sample) {
	h.writeSamplePage(w, r, status, smp, "")
}

// writeSamplePage renders a sample (or a page of its elements, with the
// next page's cursor in JSON) as JSON, NDJSON or CSV.
func (h *handler) writeSamplePage(w http.ResponseWriter, r *http.Request, status int, smp *service.Sample, next string) {
	if wantsCSV(r) && !wantsNDJSON(r) {
		writeSampleCSV(w, status, smp)
		return
	}
	meta, err := json.Marshal(sampleMeta(smp))
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	nd := wantsNDJSON(r)
	if nd {
		w.Header().Set("Content-Type", "application/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	buf := make([]byte, 0, 256)
	if nd {
		bw.Write(meta)
		bw.WriteByte('\n')
	} else {
		bw.Write(meta[:len(meta)-1]) // reopen the object to append elements
		bw.WriteString(`,"elements":[`)
	}
	for i, e := range smp.Elements {
		var ke *service.KeyEstimate
		if i < len(smp.Keys) {
			ke = &smp.Keys[i]
		}
		buf = appendElement(buf[:0], e, ke)
		if !nd && i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(buf)
		if nd {
			bw.WriteByte('\n')
		}
	}
	if !nd {
		bw.WriteString("]")
		if next != "" {
			bw.WriteString(`,"next_cursor":`)
			bw.Write(appendJSONString(nil, next))
		}
		bw.WriteString("}\n")
	}
}

// appendElement renders one SanitizedElement without reflection.
// ke is nil for a keys release.
func appendElement(b []byte, e service.Element, ke *service.KeyEstimate) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, e.Key)
	if !math.IsNaN(e.Value) {
		b = append(b, `,"value":`...)
		b = jsonenc.AppendFloat(b, e.Value)
	}
	if ke != nil {
		if finite(ke.Frequency) {
			b = append(b, `,"frequency":`...)
			b = jsonenc.AppendFloat(b, ke.Frequency)
		}
		if finite(ke.Contribution) {
			b = append(b, `,"contribution":`...)
			b = jsonenc.AppendFloat(b, ke.Contribution)
		}
	}
	return append(b, '}')
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// appendJSONString appends s as a JSON string literal (jsonenc.AppendString).
func appendJSONString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }
