package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-playground/validator/v10"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/internal/buildinfo"
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
	// MaxHeavyRequests bounds the requests of the heavy routes (sample
	// releases, tables, estimates, stream events, releases and intrusions)
	// running at once; a request that finds no slot within AdmissionWait is
	// answered 503 with Retry-After instead of queueing without bound.
	MaxHeavyRequests int
	// MaxInflightBytes bounds the sum of the body sizes of the heavy
	// requests in flight: Content-Length, or a fair share
	// MaxInflightBytes/MaxHeavyRequests when the body is chunked. A request
	// that would pass it waits like one finding no slot. One request alone is
	// always admitted (its body is bounded by MaxBodyBytes).
	MaxInflightBytes int64
	// AdmissionWait is how long a heavy request may wait for a slot.
	AdmissionWait time.Duration
	// MaxReaderTableWork bounds the table work of one request of a reader
	// token (PWSD_MAX_READER_TABLE_WORK), in the unit of the service's
	// MaxTableWork, which bounds every request; the lower bound wins, so a
	// reader's GET cannot hold a core as long as a writer's release. 0
	// adds no bound of its own.
	MaxReaderTableWork int64
}

// DefaultMaxReaderTableWork is the default of Limits.MaxReaderTableWork: a
// quarter of service.DefaultMaxTableWork (a table request of a reader then
// takes a few seconds of one core at most, where the writers' bound allows
// about half a minute for the costliest rows).
const DefaultMaxReaderTableWork = service.DefaultMaxTableWork / 4

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
		MaxHeavyRequests:  8,
		MaxInflightBytes:  512 << 20,
		AdmissionWait:     time.Second,

		MaxReaderTableWork: DefaultMaxReaderTableWork,
	}
}

// Deps are the server's explicit dependencies.
type Deps struct {
	Service  *service.Service
	Logger   *slog.Logger
	Registry *prometheus.Registry // metrics are registered here and served at /metrics
	Tokens   *Tokens              // nil: open access
	Limits   Limits
	// MetricsToken, when set, is the bearer token /metrics requires on the
	// API address.
	MetricsToken string
	// MetricsElsewhere means /metrics is served on its own listener
	// (PWSD_METRICS_ADDR, see MetricsHandler) and not on the API address.
	MetricsElsewhere bool
	// Build is the running build, served at /version and as the
	// pwsd_build_info metric (zero: buildinfo.Read()).
	Build buildinfo.Info
}

// handler carries the dependencies into the handlers.
type handler struct {
	svc      *service.Service
	log      *slog.Logger
	validate *validator.Validate
	limits   Limits
	outage   *outage
}

// NewRouter returns pwsd's HTTP handler with every route and middleware.
func NewRouter(d Deps) http.Handler {
	h := &handler{svc: d.Service, log: d.Logger, validate: newValidator(), limits: d.Limits, outage: &outage{log: d.Logger}}
	if d.Build == (buildinfo.Info{}) {
		d.Build = buildinfo.Read()
	}
	m := newMetrics(d.Registry, d.Build)

	v1 := v1Routes()
	r := chi.NewRouter()
	r.Use(requestID)
	r.Use(problemRequestID)
	r.Use(m.middleware)
	r.Use(requestLogger(d.Logger))
	r.Use(recoverer(d.Logger))
	r.Use(securityHeaders)
	r.Use(middleware.GetHead)
	queries := queryIndex("/v1", v1)
	queries["GET /planner"] = plannerPageQuery // a shared link's plan
	r.Use(checkQuery(r, queries))
	r.Use(routeLabels(r))

	r.Get("/healthz", h.adapt(h.healthz))
	r.Get("/version", versionOf(d.Build))
	r.Get("/readyz", h.adapt(h.readyz))
	switch {
	case d.MetricsElsewhere:
		// Served by MetricsHandler on PWSD_METRICS_ADDR only.
	case d.MetricsToken != "":
		r.Method(http.MethodGet, "/metrics", metricsToken(d.MetricsToken, MetricsHandler(d.Registry)))
	case d.Tokens == nil:
		// Open API (development): the metrics are as open as the API.
		r.Method(http.MethodGet, "/metrics", MetricsHandler(d.Registry))
	}
	r.Get("/openapi.json", openAPIJSON)
	r.Get("/swagger.json", swaggerJSON)
	r.Get("/docs", docsRedirect)
	r.Get("/docs/*", docsUI())
	r.Get("/planner", plannerHTML)

	r.Route("/v1", func(r chi.Router) {
		r.Use(middleware.Timeout(d.Limits.RequestTimeout))
		r.Use(bodyLimit(d.Limits.MaxBodyBytes))
		r.Use(requireContentType)
		r.Use(d.Tokens.middleware(d.Logger, d.Limits.MaxReaderTableWork))
		r.Use(h.outage.middleware)
		h.routes(r, v1, newAdmission(d.Limits))
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, newProblem(http.StatusNotFound, "no such resource"))
	})
	r.MethodNotAllowed(methodNotAllowed(r))
	return r
}

// requireContentType refuses a request that sends a body without saying
// what it is (415): such a body was read as JSON whatever it held (issue
// 31), so a CSV or NDJSON upload without its header failed with a JSON
// syntax error that did not say why. Requests without a body (a stream
// release, an intrusion) need no Content-Type.
func requireContentType(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 && r.Header.Get("Content-Type") == "" && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
			writeProblem(w, newProblem(http.StatusUnsupportedMediaType, "the request has a body but no Content-Type header; send Content-Type: application/json (or the batch forms application/x-ndjson and text/csv where a route takes them)"))
			return
		}
		next.ServeHTTP(w, r)
	})
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
					// The panic value and stack name code, not request data:
					// handlers never panic with input in the value.
					log.Error("panic serving request", "request_id", middleware.GetReqID(r.Context()), "route", routePattern(r),
						"panic", panicValue(v), "stack", string(debug.Stack()))
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
			status := recordedStatus(r, ww.Status())
			msg := "request"
			if status == statusClientClosed {
				msg = "request abandoned by the client"
			}
			log.Info(msg, "method", methodLabel(r.Method), "route", routePattern(r), "status", status,
				"bytes", ww.BytesWritten(), "duration_ms", float64(time.Since(start).Microseconds())/1000,
				"request_id", middleware.GetReqID(r.Context()))
		})
	}
}

// statusClientClosed is recorded (logs, metrics) for a request whose client
// went away before the answer, as reverse proxies do (nginx's 499): it is
// not a server error.
const statusClientClosed = 499

// recordedStatus is the status to log and count: 499 when the client
// cancelled the request (its connection closed), whatever was written.
func recordedStatus(r *http.Request, status int) int {
	if status == 0 {
		status = http.StatusOK
	}
	if errors.Is(r.Context().Err(), context.Canceled) && status >= 400 {
		return statusClientClosed
	}
	return status
}

// panicValue renders a recovered value for the log: errors and strings as
// text (truncated), anything else by type only.
func panicValue(v any) string {
	var s string
	switch x := v.(type) {
	case error:
		s = x.Error()
	case string:
		s = x
	default:
		s = fmt.Sprintf("%T", v)
	}
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// requestIDPattern is what a client's X-Request-Id must look like to be
// used; anything else is replaced by a fresh id.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID puts the request id into the context under chi's
// middleware.RequestIDKey (so middleware.GetReqID finds it) and echoes it in
// the X-Request-Id response header. A client id is kept only when it matches
// requestIDPattern, so logs never carry client text.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(middleware.RequestIDHeader)
		if !requestIDPattern.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(middleware.RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), middleware.RequestIDKey, id)))
	})
}

// outage tracks whether the store is unreachable, so that an outage is
// logged once when it starts and once when it ends, not once per request.
type outage struct {
	log  *slog.Logger
	down atomic.Bool
}

// failed records an unreachable store; it logs only on the transition.
func (o *outage) failed(err error) {
	if !o.down.Swap(true) {
		o.log.Error("the store is unreachable: answering 503 until it recovers", "error", err)
	}
}

// succeeded records a reachable store; it logs only on the transition.
func (o *outage) succeeded() {
	if o.down.Swap(false) {
		o.log.Info("the store is reachable again")
	}
}

// middleware marks the store reachable after any successful /v1 answer
// (every one of them reads or writes the store).
func (o *outage) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		if s := ww.Status(); s >= 200 && s < 300 && o.down.Load() {
			o.succeeded()
		}
	})
}

// unavailable writes a 503 with Retry-After: the store cannot be reached.
func unavailable(w http.ResponseWriter, retryAfter time.Duration, detail string) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(retryAfter.Round(time.Second)/time.Second))))
	writeProblem(w, newProblem(http.StatusServiceUnavailable, detail))
}
