// Package api is pwsd's HTTP layer. NewRouter builds the whole service: the
// /v1 routes of samples, tables, plots, plans, streams, counters and
// datasets, and the operational routes (health, readiness, metrics, the
// OpenAPI documents and their interactive page).
//
// Handlers are thin: they decode and validate a request, call
// internal/service, which holds all logic and all mathematics, and encode the
// answer. Every request is strict: each route declares its query parameters
// in one place (routeQuery), JSON bodies refuse unknown fields, and every
// error is an RFC 9457 application/problem+json answer that names the field
// as the client wrote it and carries the request id. No input is answered
// with a 5xx. Bearer tokens, request limits and timeouts are enforced by the
// middleware set up in NewRouter; the OpenAPI description is generated from
// the swag annotations on the handlers (see openapi_info.go and openapi/).
package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-playground/validator/v10"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/internal/service"
)

// Limits bound what one request may ask for. Every limit is configurable
// (see cmd/pwsd) and enforced before any work is done.
type Limits struct {
	MaxBodyBytes int64 // request body (413 above it)
	MaxLineBytes int   // one NDJSON line (413 above it)
	MaxElements  int   // elements in one sample (413 above it)
	MaxKeyBytes  int   // one key (422 above it)
	MaxFrequency int64 // one element's frequency and table max_frequency (422 above it)
	MaxRangeRows int64 // rows in one frequencies-table range (422 above it)
	// MaxTableFrequency bounds max_frequency of the reporting and estimator
	// tables (422 above it).
	MaxTableFrequency int64
	MaxRegexBytes     int // key_regex length (422 above it)
	MaxEvents         int // events in one stream batch / bits in one counter batch (413 above it)
	MaxCustomQ        int // custom sampling probabilities listed (422 above it)
	RequestTimeout    time.Duration
}

// DefaultLimits are the limits used when nothing is configured.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:      256 << 20,
		MaxLineBytes:      64 << 10,
		MaxElements:       2_000_000,
		MaxKeyBytes:       1024,
		MaxFrequency:      1 << 33,
		MaxRangeRows:      10_000,
		MaxTableFrequency: 100_000,
		MaxRegexBytes:     256,
		MaxEvents:         1_000_000,
		MaxCustomQ:        100_000,
		RequestTimeout:    60 * time.Second,
	}
}

// Deps are the server's explicit dependencies.
type Deps struct {
	Service  *service.Service
	Logger   *slog.Logger
	Registry *prometheus.Registry // metrics are registered here and served at /metrics
	Tokens   *Tokens              // nil: open access
	Limits   Limits
}

// handler carries the dependencies into the handlers.
type handler struct {
	svc      *service.Service
	log      *slog.Logger
	validate *validator.Validate
	limits   Limits
}

// NewRouter returns pwsd's HTTP handler with every route and middleware.
func NewRouter(d Deps) http.Handler {
	h := &handler{svc: d.Service, log: d.Logger, validate: newValidator(), limits: d.Limits}
	m := newMetrics(d.Registry)

	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(problemRequestID)
	r.Use(m.middleware)
	r.Use(requestLogger(d.Logger))
	r.Use(recoverer(d.Logger))
	r.Use(securityHeaders)
	r.Use(middleware.GetHead)
	r.Use(checkQuery(r))

	r.Get("/healthz", h.healthz)
	r.Get("/readyz", h.readyz)
	r.Method(http.MethodGet, "/metrics", metricsHandler(d.Registry))
	r.Get("/openapi.json", openAPIJSON)
	r.Get("/swagger.json", swaggerJSON)
	r.Get("/docs", docsRedirect)
	r.Get("/docs/*", docsUI())
	r.Get("/planner", plannerHTML)

	r.Route("/v1", func(r chi.Router) {
		r.Use(middleware.Timeout(d.Limits.RequestTimeout))
		r.Use(bodyLimit(d.Limits.MaxBodyBytes))
		r.Use(d.Tokens.middleware(d.Logger))
		h.routes(r)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, "no such resource"))
	})
	r.MethodNotAllowed(methodNotAllowed(r))
	return r
}

// bodyLimit caps request bodies: a declared length above the limit is
// refused before reading, and reading past it fails with 413 on decode.
func bodyLimit(limit int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > limit {
				writeProblem(w, tooLarge(limit))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			next.ServeHTTP(w, r)
		})
	}
}

// securityHeaders sets headers that harden every response, HTML pages included.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic into a 500 problem and logs it without the request.
func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic serving request", "request_id", middleware.GetReqID(r.Context()), "route", routePattern(r))
					writeProblem(w, newProblem(http.StatusInternalServerError, "internal error"))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// routePattern is the matched chi route ("/v1/samples/{id}"), never the raw
// path or query, so that logs and metrics carry no request data.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// requestLogger logs one line per request: method, route pattern, status,
// size, duration and request id. Never the path, query, headers or body.
func requestLogger(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			start := time.Now()
			next.ServeHTTP(ww, r)
			log.Info("request", "method", r.Method, "route", routePattern(r), "status", ww.Status(),
				"bytes", ww.BytesWritten(), "duration_ms", float64(time.Since(start).Microseconds())/1000,
				"request_id", middleware.GetReqID(r.Context()))
		})
	}
}
