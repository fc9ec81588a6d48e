package api

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/service"
)

// CounterRequest creates a counter under continual observation. Its
// numeric bounds are checked by panprivate.NewCounter alone.
type CounterRequest struct {
	Epsilon   *float64 `json:"epsilon" validate:"required" example:"1"`
	Horizon   *int64   `json:"horizon" minimum:"1" validate:"required" example:"1000000"`
	Algorithm string   `json:"algorithm,omitempty" validate:"omitempty,oneof=simple randomized_response cascading tree" enums:"simple,randomized_response,cascading,tree"`
	D         int      `json:"d,omitempty" minimum:"1"`
	L         float64  `json:"l,omitempty"`
	Kappa     float64  `json:"kappa,omitempty"`
	// Postprocess "monotone" publishes, beside each raw output, the count
	// clamped to [0, t] and made non-decreasing (isotonic regression by
	// PAVA, given the counts already published): post-processing, free of
	// privacy cost.
	Postprocess string `json:"postprocess,omitempty" validate:"omitempty,oneof=monotone" enums:"monotone"`
}

// CounterView is a counter's public view.
type CounterView struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Algorithm string    `json:"algorithm"`
	Epsilon   float64   `json:"epsilon"`
	Horizon   int64     `json:"horizon"`
	Steps     int64     `json:"steps"`
	Count     float64   `json:"count"`
	Guarantee string    `json:"guarantee"`
	// Postprocess echoes the post-processing; MonotoneCount is its latest
	// output (beside count, the raw one).
	Postprocess   string   `json:"postprocess,omitempty"`
	MonotoneCount *float64 `json:"monotone_count,omitempty"`
	// CountStandardError is the standard error of count (bound: an upper
	// bound on its root mean squared error, cascading).
	CountStandardError StandardErrorView `json:"count_standard_error"`
	// StandardErrorFormula states the standard error of the output at step
	// t for this counter's algorithm.
	StandardErrorFormula string `json:"standard_error_formula"`
}

// counterErrorFormulas states each algorithm's standard error at step t
// (panprivate.Counter.StandardError; docs/errorbars-streams.md).
var counterErrorFormulas = map[panprivate.CounterAlgorithm]string{
	panprivate.CounterSimple:             "sqrt(2t)/epsilon (t Laplace(1/epsilon) draws)",
	panprivate.CounterRandomizedResponse: "sqrt(t e^epsilon/(e^epsilon-1)^2)",
	panprivate.CounterTree:               "2 (L/epsilon) sqrt(nodes(t)), nodes(t) = floor(t/2^(L-1)) + popcount(t mod 2^(L-1)), L the tree's levels",
	panprivate.CounterCascading:          "bound on the root mean squared error: sqrt(((2d+1) l)^2 + 4F/epsilon'^2), F = t/u^d + 2t/u + 1 (the output lags the count by at most (2d+1) l, Claims 6.1-6.2)",
}

func counterView(c service.Counter) CounterView {
	v := CounterView{ID: c.ID, CreatedAt: c.CreatedAt, Algorithm: string(c.State.Algorithm), Epsilon: c.State.Epsilon,
		Horizon: c.State.Horizon, Steps: c.State.Steps, Count: c.State.Count, Guarantee: c.Level, Postprocess: string(c.Postprocess),
		CountStandardError:   StandardErrorView{Value: c.CountError.Value, Bound: c.CountError.Bound},
		StandardErrorFormula: counterErrorFormulas[c.State.Algorithm]}
	if c.Postprocess == panprivate.PostprocessMonotone {
		m := c.Monotone
		v.MonotoneCount = &m
	}
	return v
}

// StepsRequest is a batch of input bits.
type StepsRequest struct {
	Bits []int `json:"bits" example:"0,1,1,0"`
}

// StepsView holds one output per step and its standard error; with
// postprocess monotone also the post-processed output per step, beside the
// raw ones (a least-squares projection onto the counts' constraints given
// what was published; no standard error of its own is claimed).
type StepsView struct {
	Outputs []float64 `json:"outputs"`
	// StandardErrors[i] is the standard error of outputs[i] as an estimate
	// of the number of 1s so far (bound: upper bounds on the root mean
	// squared error, cascading).
	StandardErrors []float64 `json:"standard_errors"`
	// Bound is true when standard_errors are upper bounds (cascading).
	Bound bool `json:"bound"`
	// Monotone is the post-processed output per step (postprocess monotone).
	Monotone []float64 `json:"monotone,omitempty"`
}

// createCounter creates a counter.
//
//	@Summary		Create a counter under continual observation
//	@ID			createCounter
//	@Description	algorithm: simple (Laplace per step), randomized_response, cascading (buffers, Fig. 2; d, l, kappa optional, else Corollary 6.1), tree (binary-tree counter, noised from initialisation). Without algorithm pwsd picks the lowest-error one for the horizon. postprocess: monotone adds, beside each raw output, a count clamped to [0, t] and non-decreasing (PAVA isotonic regression given what was published; free post-processing).
//	@Tags			counters
//	@Accept			json
//	@Produce		json
//	@Param			body	body		CounterRequest	true	"counter configuration"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		201		{object}	CounterView
//	@Failure		400,409,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/counters [post]
func (h *handler) createCounter(w http.ResponseWriter, r *http.Request) error {
	var req CounterRequest
	if err := h.decodeValid(r, &req); err != nil {
		return err
	}
	c, err := h.svc.Counters.Create(r.Context(), panprivate.CounterConfig{Algorithm: panprivate.CounterAlgorithm(req.Algorithm),
		Epsilon: *req.Epsilon, Horizon: *req.Horizon, D: req.D, L: req.L, Kappa: req.Kappa, Postprocess: panprivate.CounterPostprocess(req.Postprocess)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/counters/"+c.ID)
	writeJSON(w, http.StatusCreated, counterView(c))
	return nil
}

// getCounter returns a counter's steps and latest output.
//
//	@Summary	A counter's steps and latest output
//	@ID			getCounter
//	@Description	The counter's configuration, the number of steps fed and its latest noisy output (with postprocess monotone, also the post-processed one).
//	@Tags		counters
//	@Produce	json
//	@Param		id	path		string	true	"counter id"
//	@Success	200	{object}	CounterView
//	@Failure	404	{object}	Problem
//	@Security	bearer
//	@Router		/v1/counters/{id} [get]
func (h *handler) getCounter(w http.ResponseWriter, r *http.Request) error {
	c, err := h.svc.Counters.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, counterView(c))
	return nil
}

// postSteps feeds bits to a counter.
//
//	@Summary		Feed bits, one output per step
//	@ID			addCounterSteps
//	@Description	JSON {"bits":[0,1,1,0]} or NDJSON with one bit (0 or 1) per line. Answers after the new state is durable; a batch past the horizon changes nothing.
//	@Tags			counters
//	@Accept			json
//	@Accept			application/x-ndjson
//	@Produce		json
//	@Param			id		path		string			true	"counter id"
//	@Param			body	body		StepsRequest	true	"bits"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		200		{object}	StepsView
//	@Failure		400,404,409,413,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/counters/{id}/steps [post]
func (h *handler) postSteps(w http.ResponseWriter, r *http.Request) error {
	bits, err := readBatch(r, h.limits, h.limits.MaxEvents, "bits",
		func(b []byte, i int) (int, error) {
			switch strings.TrimSpace(string(b)) {
			case "0":
				return 0, nil
			case "1":
				return 1, nil
			}
			return 0, invalid(fmt.Sprintf("bits[%d]", i), "must be 0 or 1")
		},
		func(body io.Reader) ([]int, error) {
			var req StepsRequest
			err := decodeJSON(body, &req)
			return req.Bits, err
		})
	if err != nil {
		return err
	}
	out, err := h.svc.Counters.Steps(r.Context(), chi.URLParam(r, "id"), bits)
	if err != nil {
		return err
	}
	v := StepsView{Outputs: out.Raw, StandardErrors: out.StandardErrors, Bound: out.Bound, Monotone: out.Monotone}
	if out.Postprocess == panprivate.PostprocessMonotone && v.Monotone == nil {
		v.Monotone = []float64{}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
