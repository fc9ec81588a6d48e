package api

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/service"
)

// AccuracyParams asks for the sample size m* meeting an (alpha, beta) target.
type AccuracyParams struct {
	Alpha float64 `json:"alpha" example:"0.05"`
	Beta  float64 `json:"beta" example:"0.05"`
}

// StreamRequest creates a pan-private stream. The validator checks only
// presence and the enumerations that are not the kind registry's; the
// estimator and algorithm names and every numeric bound are checked once,
// by panprivate's constructors (the minimum tags only document them). The
// enums tags spell panprivate's kind registry (panprivate.Kinds) for swag,
// which needs them literal; kinds_test.go fails, naming what to write, when
// they lag it.
type StreamRequest struct {
	Dataset        string          `json:"dataset,omitempty" validate:"omitempty,dataset_name"`
	Estimator      string          `json:"estimator" validate:"required" enums:"density,cropped_mean,heavy_hitters,incidence"`
	Algorithm      string          `json:"algorithm,omitempty" enums:"dwork,optbern,ppds"`
	Epsilon        *float64        `json:"epsilon" validate:"required" example:"0.25"`
	UniverseSize   *uint64         `json:"universe_size" minimum:"1" validate:"required" example:"100000"`
	SampleSize     int             `json:"sample_size,omitempty" minimum:"1" example:"1000"`
	Accuracy       *AccuracyParams `json:"accuracy,omitempty"`
	T              int             `json:"t,omitempty" minimum:"1"`
	K              int             `json:"k,omitempty" minimum:"1"`
	MaxOccurrences int             `json:"max_occurrences,omitempty" minimum:"1"`
	Rho            float64         `json:"rho,omitempty"`
	Moduli         int             `json:"moduli,omitempty" minimum:"1"`
	MaxReleases    int             `json:"max_releases,omitempty" minimum:"1"`
	// ReleaseNoise: calibrated (default: the papers' noise scaled so that each
	// release costs exactly the asked epsilon) or paper (the papers' noise,
	// under which their MSE theorems hold, charged at its exact cost, which
	// exceeds epsilon, see privacy.release_epsilon).
	ReleaseNoise string `json:"release_noise,omitempty" validate:"omitempty,oneof=paper calibrated" enums:"paper,calibrated"`
	Continual    bool   `json:"continual,omitempty"`
	Horizon      int64  `json:"horizon,omitempty" minimum:"1"`
	Counter      string `json:"counter,omitempty" validate:"omitempty,oneof=simple randomized_response cascading tree"`
}

// StreamView is a stream's configuration and counts; never its state.
type StreamView struct {
	ID         string         `json:"id"`
	CreatedAt  time.Time      `json:"created_at"`
	Dataset    string         `json:"dataset,omitempty"`
	Continual  bool           `json:"continual"`
	SampleSize int            `json:"sample_size"`
	Config     any            `json:"config"`
	Releases   int            `json:"releases"`
	Intrusions int            `json:"intrusions"`
	Privacy    *StreamPrivacy `json:"privacy,omitempty"`
	// Output is the latest continual output (the density, unclamped).
	Output *float64 `json:"output,omitempty"`
	// OutputStandardError is the standard error of output (continual mode;
	// docs/errorbars-streams.md).
	OutputStandardError *StandardErrorView `json:"output_standard_error,omitempty"`
}

// StandardErrorView is a standard error; bound true says it is an upper
// bound (on the root mean squared error) rather than the exact value.
type StandardErrorView struct {
	// Value is the standard error.
	Value float64 `json:"value"`
	// Bound is true when value is an upper bound on the root mean squared
	// error rather than the exact standard error.
	Bound bool `json:"bound"`
}

func streamView(s service.Stream) StreamView {
	v := StreamView{ID: s.ID, CreatedAt: s.CreatedAt, Dataset: s.Dataset, Continual: s.Continual, SampleSize: s.SampleSize,
		Releases: s.Releases, Intrusions: s.Intrusions, Output: s.Output}
	if e := s.OutputError; e != nil {
		v.OutputStandardError = &StandardErrorView{Value: e.Value, Bound: e.Bound}
	}
	if s.Privacy != nil {
		v.Privacy = &StreamPrivacy{StateEpsilon: s.Privacy.State, ReleaseEpsilon: s.Privacy.PerRelease, ReleaseNoise: string(s.Estimator.ReleaseNoise)}
		if n := s.Estimator.MaxReleases; n > 0 {
			total := float64(n) * s.Privacy.PerRelease
			v.Privacy.MaxTotalEpsilon = &total
		}
	}
	if s.Continual {
		v.Config = s.Density
	} else {
		v.Config = s.Estimator
	}
	return v
}

// StreamPrivacy states a stream's guarantee: the state is state_epsilon-DP
// against one unannounced intrusion (user level) and each release spends
// release_epsilon more (charged to the dataset, if any). With max_releases
// set, max_total_epsilon = max_releases * release_epsilon is the most the
// stream's releases may spend.
type StreamPrivacy struct {
	StateEpsilon   float64 `json:"state_epsilon"`
	ReleaseEpsilon float64 `json:"release_epsilon"`
	// ReleaseNoise echoes the noise mode: calibrated (release_epsilon is the
	// asked epsilon) or paper.
	ReleaseNoise    string   `json:"release_noise,omitempty" enums:"calibrated,paper"`
	MaxTotalEpsilon *float64 `json:"max_total_epsilon,omitempty"`
}

// EventsRequest is a batch of stream events.
type EventsRequest struct {
	Events []panprivate.Event `json:"events" swaggertype:"array,object"`
}

// StreamReleaseView is one noisy estimate with its error
// (docs/errorbars-streams.md).
type StreamReleaseView struct {
	// Estimate is the unbiased raw estimate: it may leave the estimand's
	// range (a density below 0); averages of releases stay unbiased.
	Estimate     float64 `json:"estimate"`
	EpsilonSpent float64 `json:"epsilon_spent"`
	// StandardError is the standard error of estimate from the theorem for
	// the estimator at the stream's parameters, release noise included,
	// evaluated at clamped where it depends on the unknown true value.
	StandardError float64 `json:"standard_error"`
	// Bound is true when standard_error is an upper bound (cropped_mean,
	// heavy_hitters, incidence, a cascading continual counter) rather than
	// the exact value at the plug-in (density, continual density).
	Bound bool `json:"bound"`
	// Interval is estimate -/+ z*standard_error at level, clipped to
	// [range.min, range.max].
	Interval IntervalView `json:"interval"`
	// Clamped is the estimate projected onto the estimand's range:
	// post-processing, no privacy cost.
	Clamped float64 `json:"clamped"`
	// Range is the estimand's range: [0, 1] for the fractions (density,
	// heavy_hitters, incidence), [0, t] for cropped_mean.
	Range RangeView `json:"range"`
}

// RangeView is the range [min, max] of an estimand.
type RangeView struct {
	// Min is the smallest value the estimand can take.
	Min float64 `json:"min"`
	// Max is the largest value the estimand can take.
	Max float64 `json:"max"`
}

// createStream creates a pan-private stream.
//
//	@Summary		Create a pan-private stream estimator
//	@ID			createStream
//	@Description	The estimators, with their required fields and algorithms: density (algorithm dwork | optbern | ppds), cropped_mean (t; algorithm dwork | optbern), heavy_hitters (k, max_occurrences; algorithm dwork | optbern), incidence (t, max_occurrences). Give sample_size or accuracy {alpha, beta} to pick m*. continual: true runs the continual-observation density estimator (latest output in GET). The stored state is exactly what pan-privacy protects; raw events are never stored.
//	@Tags			streams
//	@Accept			json
//	@Produce		json
//	@Param			body	body		StreamRequest	true	"stream configuration"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		201		{object}	StreamView
//	@Failure		400,404,409,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams [post]
func (h *handler) createStream(w http.ResponseWriter, r *http.Request) error {
	var req StreamRequest
	if err := h.decodeValid(r, &req); err != nil {
		return err
	}
	cfg := panprivate.Config{Estimator: panprivate.Kind(req.Estimator), Algorithm: panprivate.Algorithm(req.Algorithm),
		Epsilon: *req.Epsilon, UniverseSize: *req.UniverseSize, SampleSize: req.SampleSize, T: req.T, K: req.K,
		MaxOccurrences: req.MaxOccurrences, Rho: req.Rho, Moduli: req.Moduli, MaxReleases: req.MaxReleases,
		ReleaseNoise: panprivate.ReleaseNoise(req.ReleaseNoise)}
	if req.Accuracy != nil {
		cfg.Accuracy = &panprivate.Accuracy{Alpha: req.Accuracy.Alpha, Beta: req.Accuracy.Beta}
	}
	st, err := h.svc.Streams.Create(r.Context(), service.StreamSpec{Dataset: req.Dataset, Continual: req.Continual, Estimator: cfg,
		Horizon: req.Horizon, Counter: panprivate.CounterAlgorithm(req.Counter)})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/streams/"+st.ID)
	writeJSON(w, http.StatusCreated, streamView(st))
	return nil
}

// getStream returns a stream's configuration and counts.
//
//	@Summary	A stream's configuration, event count and (continual mode) latest output
//	@ID			getStream
//	@Description	The stream's resolved configuration, the number of events applied, releases drawn and intrusions announced, and in continual mode the latest output. Never the state.
//	@Tags		streams
//	@Produce	json
//	@Param		id	path		string	true	"stream id"
//	@Success	200	{object}	StreamView
//	@Failure	400,404	{object}	Problem
//	@Security	bearer
//	@Router		/v1/streams/{id} [get]
func (h *handler) getStream(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.Streams.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, streamView(st))
	return nil
}

// postEvents applies a batch of events.
//
//	@Summary		Apply a batch of events
//	@ID			addStreamEvents
//	@Description	JSON {"events":[{"user":"u17"},{"user":42,"op":"delete"}]} or NDJSON, one event per line. Answers after the batch is durable; a batch with an invalid event changes nothing.
//	@Tags			streams
//	@Accept			json
//	@Accept			application/x-ndjson
//	@Produce		json
//	@Param			id		path		string			true	"stream id"
//	@Param			body	body		EventsRequest	true	"events"
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		200		{object}	StreamView
//	@Failure		400,404,409,413,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams/{id}/events [post]
func (h *handler) postEvents(w http.ResponseWriter, r *http.Request) error {
	events, err := readBatch(r, h.limits, h.limits.MaxEvents, "events",
		func(b []byte, i int) (panprivate.Event, error) {
			var e panprivate.Event
			err := decodeLine(b, &e, 0, fmt.Sprintf("events[%d]", i))
			return e, err
		},
		func(body io.Reader) ([]panprivate.Event, error) {
			var req EventsRequest
			err := decodeJSON(body, &req)
			return req.Events, err
		})
	if err != nil {
		return err
	}
	st, err := h.svc.Streams.Apply(r.Context(), chi.URLParam(r, "id"), events)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, streamView(st))
	return nil
}

// postRelease draws one noisy estimate.
//
//	@Summary		Release one noisy estimate, with its standard error and interval
//	@ID			createStreamRelease
//	@Description	Laplace noise from the google/differential-privacy library; epsilon_spent is charged to the stream's dataset. 409 past the stream's max_releases or the dataset's budget.
//	@Description	estimate is the unbiased raw value (it may leave its range); standard_error comes from the estimator's variance at the stream's parameters (release noise Lap(b) adds 2b^2), evaluated at clamped where it depends on the true value, and bound=true marks an upper bound; interval is estimate -/+ z*standard_error at level, clipped to range; clamped is the estimate projected onto range (post-processing, free). Derivations and simulated coverage: docs/errorbars-streams.md. A continual stream answers its latest output the same way, at no cost.
//	@Tags			streams
//	@Produce		json
//	@Param			id	path		string	true	"stream id"
//	@Param			level	query		number	false	"confidence level of the interval, in (0, 1)"	default(0.95)
//	@Param			Idempotency-Key	header	string	false	"makes retries safe: a repeat with the same key and request gets the first answer again and changes nothing (see docs/api.md, Idempotent retries)"
//	@Success		200	{object}	StreamReleaseView
//	@Failure		400,404,409,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams/{id}/releases [post]
func (h *handler) postRelease(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	level := q.level()
	if err := q.problem(); err != nil {
		return err
	}
	rel, err := h.svc.Streams.Release(r.Context(), chi.URLParam(r, "id"), level)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, StreamReleaseView{Estimate: rel.Estimate, EpsilonSpent: rel.EpsilonSpent,
		StandardError: rel.StandardError.Value, Bound: rel.StandardError.Bound, Interval: intervalView(rel.Interval),
		Clamped: rel.Clamped, Range: RangeView{Min: rel.Min, Max: rel.Max}})
	return nil
}

// postIntrusion performs an announced intrusion.
//
//	@Summary		Announced intrusion
//	@ID			announceStreamIntrusion
//	@Description	Returns the internal (pan-private) state as it is, then re-randomizes it and switches to the shifted distributions; later releases account for it.
//	@Tags			streams
//	@Produce		json
//	@Param			id	path		string	true	"stream id"
//	@Success		200	{object}	panprivate.State
//	@Failure		404,409	{object}	Problem
//	@Security		bearer
//	@Router			/v1/streams/{id}/intrusions [post]
func (h *handler) postIntrusion(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.Streams.Intrude(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
