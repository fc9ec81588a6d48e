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

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
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
	Key       string      `json:"key" example:"a"`
	Frequency json.Number `json:"frequency" swaggertype:"integer" example:"17"`
}

// SampleRequest is the JSON form of POST /v1/samples.
type SampleRequest struct {
	SampleHeader
	Elements []SampleElement `json:"elements"`
}

// SanitizedElement is one reported key. Value is the sanitized value: an
// ORDINAL token (Algorithm 4: the integer token j; Algorithm 5: a uniform
// draw inside the chosen piece), not a frequency. Estimate is the MLE
// estimate of the key's frequency. A keys release has neither.
type SanitizedElement struct {
	Key      string   `json:"key"`
	Value    *float64 `json:"value,omitempty"`
	Estimate *float64 `json:"estimate,omitempty"`
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
}

// SampleView is a stored sanitized sample.
type SampleView struct {
	SampleMeta
	Elements []SanitizedElement `json:"elements"`
}

func privacyView(p sanitize.Privacy) PrivacyView {
	return PrivacyView{Epsilon: p.Epsilon, Delta: p.Delta}
}

func samplingView(s sanitize.Sampling) SamplingView {
	return SamplingView{Scheme: string(s.Scheme), Threshold: s.Threshold, Power: s.Power, Probabilities: s.Probabilities}
}

func sampleMeta(s *service.Sample) SampleMeta {
	return SampleMeta{ID: s.ID, CreatedAt: s.CreatedAt, Dataset: s.Spec.Dataset, Privacy: privacyView(s.Spec.Privacy),
		Sampling: samplingView(s.Spec.Sampling), Release: string(s.Spec.Release), Method: string(s.Spec.Method)}
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
	s, err := hd.Sampling.sampling("sampling.", h.limits.MaxCustomQ)
	if err != nil {
		return service.SampleSpec{}, err
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
	if key == "" {
		return "", 0, invalid(fmt.Sprintf("elements[%d].key", i), "is required")
	}
	if len(key) > h.limits.MaxKeyBytes {
		return "", 0, invalid(fmt.Sprintf("elements[%d].key", i), fmt.Sprintf("must be at most %d bytes (PWSD_MAX_KEY_BYTES)", h.limits.MaxKeyBytes))
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

// createSample sanitizes a non-private sample.
//
//	@Summary		Sanitize a non-private weighted sample
//	@Description	Each sampled key of frequency i is reported with probability pi_i/q_i; in a frequencies release it gets a sanitized ORDINAL value (Algorithm 5 max_separation, default, or Algorithm 4 discrete) and an MLE frequency estimate. Only the sanitized output is stored. The response lists reported keys only, in random order, and reveals neither how many elements came in nor which were dropped.
//	@Description	Batch form: Content-Type application/x-ndjson, line 1 the header (SampleHeader), each further line one SampleElement. With Accept: application/x-ndjson the answer is the SampleMeta line then one SanitizedElement per line.
//	@Tags			samples
//	@Accept			json
//	@Accept			application/x-ndjson
//	@Produce		json
//	@Produce		application/x-ndjson
//	@Param			body	body		SampleRequest	true	"release description and raw elements"
//	@Success		201		{object}	SampleView
//	@Header			201		{string}	Location	"/v1/samples/{id}"
//	@Failure		400,404,409,413,415,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples [post]
func (h *handler) createSample(w http.ResponseWriter, r *http.Request) {
	var spec service.SampleSpec
	var src service.ElementSource
	switch mt := mediaType(r); mt {
	case "application/x-ndjson":
		lr := newLineReader(r.Body, h.limits.MaxLineBytes)
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			writeProblem(w, newProblem(http.StatusBadRequest, "the body is empty; line 1 must be the header object"))
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		var hd SampleHeader
		if err := decodeLine(line, &hd, "line 1"); err != nil {
			writeError(w, err)
			return
		}
		if spec, err = h.spec(hd); err != nil {
			writeError(w, err)
			return
		}
		i := 0
		src = func() (string, int64, error) {
			line, err := lr.next()
			if err != nil {
				return "", 0, err
			}
			i++
			if k, f, ok := parseElementFast(line); ok {
				return h.elementFields(i-1, k, aliasString(f)) // no copies: see ElementSource
			}
			var e SampleElement
			if err := decodeLine(line, &e, "line "+strconv.Itoa(lr.n)); err != nil {
				return "", 0, err
			}
			return h.element(i-1, e)
		}
	case "application/json", "":
		var req SampleRequest
		if err := decodeJSON(r.Body, &req); err != nil {
			writeError(w, err)
			return
		}
		var err error
		if spec, err = h.spec(req.SampleHeader); err != nil {
			writeError(w, err)
			return
		}
		i := 0
		src = func() (string, int64, error) {
			if i >= len(req.Elements) {
				return "", 0, io.EOF
			}
			i++
			return h.element(i-1, req.Elements[i-1])
		}
	default:
		writeProblem(w, newProblem(http.StatusUnsupportedMediaType, "send application/json or application/x-ndjson"))
		return
	}
	smp, err := h.svc.CreateSample(r.Context(), spec, h.limits.MaxElements, src)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/samples/"+smp.ID)
	h.writeSample(w, r, http.StatusCreated, smp)
}

// getSample returns a stored sanitized sample.
//
//	@Summary		A stored sanitized sample
//	@Description	Same shapes as the answer of POST /v1/samples; NDJSON with Accept: application/x-ndjson. Values are ordinal tokens, not frequencies.
//	@Tags			samples
//	@Produce		json
//	@Produce		application/x-ndjson
//	@Param			id	path		string	true	"sample id"
//	@Success		200	{object}	SampleView
//	@Failure		404	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id} [get]
func (h *handler) getSample(w http.ResponseWriter, r *http.Request) {
	smp, err := h.svc.GetSample(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	h.writeSample(w, r, http.StatusOK, smp)
}

// writeSample renders a sample as JSON or NDJSON, streaming the elements.
func (h *handler) writeSample(w http.ResponseWriter, r *http.Request, status int, smp *service.Sample) {
	meta, err := json.Marshal(sampleMeta(smp))
	if err != nil {
		writeError(w, err)
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
		buf = appendElement(buf[:0], e)
		if !nd && i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(buf)
		if nd {
			bw.WriteByte('\n')
		}
	}
	if !nd {
		bw.WriteString("]}\n")
	}
}

// appendElement renders one SanitizedElement without reflection.
func appendElement(b []byte, e store.Element) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, e.Key)
	if !math.IsNaN(e.Value) {
		b = append(b, `,"value":`...)
		b = strconv.AppendFloat(b, e.Value, 'g', -1, 64)
	}
	if !math.IsNaN(e.Estimate) && !math.IsInf(e.Estimate, 0) {
		b = append(b, `,"estimate":`...)
		b = strconv.AppendFloat(b, e.Estimate, 'g', -1, 64)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
