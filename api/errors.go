package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/service"
)

// handlerFunc is an HTTP handler that returns its failure instead of
// writing it: adapt writes the problem for it, in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// adapt turns f into an http.HandlerFunc that writes the problem for the
// error f returns (see writeErr). f must not have written anything when it
// returns an error.
func (h *handler) adapt(f handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			h.writeErr(w, r, err)
		}
	}
}

// writeErr writes the problem for err: the one mapping from errors to HTTP
// answers. A *Problem is written as it is; field errors of package checks
// are a 422 naming each field by its domain name, which is the query
// parameter's name (callers that read a JSON body put the JSON path of the
// object holding the parameters before it with checks.Prefix or
// paramProblem); the service's not-found, limit, budget, conflict and
// unavailable errors get their statuses; anything else is logged (without
// request data) and answered with a bare 500.
func (h *handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var le *service.LimitError
	var p *Problem
	var be *service.BudgetError
	var we *service.WarmingError
	var se *service.ScopeError
	fields, isField := checks.Fields(err)
	switch {
	case errors.As(err, &p):
		writeProblem(w, p)
	case isField:
		writeProblem(w, fieldsProblem("", fields))
	case errors.As(err, &le):
		writeProblem(w, newProblem(http.StatusRequestEntityTooLarge, le.Msg))
	case errors.Is(err, service.ErrNotFound):
		writeProblem(w, notFound(r, err))
	case errors.As(err, &be):
		writeProblem(w, newProblem(http.StatusConflict, be.Error()+"; nothing was released or charged"))
	case errors.Is(err, service.ErrBudget):
		writeProblem(w, newProblem(http.StatusConflict, "the release would exceed the dataset's privacy budget; nothing was released"))
	case errors.Is(err, service.ErrAlreadyImported):
		writeProblem(w, newProblem(http.StatusConflict, service.ErrAlreadyImported.Error()))
	case errors.Is(err, service.ErrExists):
		writeProblem(w, newProblem(http.StatusConflict, "a resource with that name already exists"))
	case errors.Is(err, service.ErrLimit):
		writeProblem(w, newProblem(http.StatusConflict, err.Error()))
	case errors.Is(r.Context().Err(), context.Canceled):
		// The client went away (mid-body or while waiting): not a server
		// error; logged at info by requestLogger and counted as 499.
		writeProblem(w, newProblem(http.StatusServiceUnavailable, "the request was cancelled; nothing was stored"))
	case errors.As(err, &se):
		writeProblem(w, newProblem(http.StatusForbidden, "the token may not change this resource; nothing was changed", FieldError{Field: se.Field, Message: se.Error()}))
	case errors.As(err, &we):
		unavailable(w, 5*time.Second, we.Msg)
	case errors.Is(r.Context().Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		// Before the store's outage: a query cut by the request's deadline
		// fails like an unreachable store, but the store is up (issue 31).
		writeProblem(w, newProblem(http.StatusServiceUnavailable, "the request did not finish within PWSD_REQUEST_TIMEOUT; nothing was stored"))
	case service.IsUnavailable(err):
		h.outage.failed(err)
		unavailable(w, 2*time.Second, "the store is unreachable; nothing was changed, retry later")
	case service.IsInvalidValue(err):
		// Never logged: the store's message may quote the value.
		writeProblem(w, newProblem(http.StatusUnprocessableEntity, "a value of the request cannot be stored or looked up (text with NUL or invalid UTF-8, or a value too large); nothing was changed"))
	case service.IsUnverifiedRows(err):
		writeProblem(w, newProblem(http.StatusUnprocessableEntity, "the sanitizer rows these privacy parameters need could not be verified where two restarted chains meet (the exact DP audit failed there); nothing was released or charged; use another epsilon or delta"))
	case errors.Is(err, context.Canceled):
		writeProblem(w, newProblem(http.StatusServiceUnavailable, "the request was cancelled; nothing was stored"))
	default:
		h.log.Error("request failed", "route", routePattern(r), "request_id", middleware.GetReqID(r.Context()), "error", err)
		writeProblem(w, newProblem(http.StatusInternalServerError, "internal error"))
	}
}

// answerJSON writes v as the 200 JSON answer when err is nil; otherwise it
// writes nothing and returns err for adapt to write.
func answerJSON(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// answerSVG writes svg as the 200 SVG answer when err is nil; otherwise it
// writes nothing and returns err for adapt to write.
func answerSVG(w http.ResponseWriter, svg []byte, err error) error {
	if err != nil {
		return err
	}
	writeSVG(w, svg)
	return nil
}
