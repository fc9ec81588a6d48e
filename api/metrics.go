package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pwsd/pwsd/internal/buildinfo"
)

// metrics counts requests and their latency by route pattern, method and
// status. Labels are never request data.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg *prometheus.Registry, build buildinfo.Info) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pwsd_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pwsd_http_request_duration_seconds", Help: "HTTP request latency by route, method and status.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route", "method", "status"}),
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pwsd_build_info", Help: "The running build (always 1): version, VCS commit, modified tree, Go version; as GET /version.",
	}, []string{"version", "commit", "modified", "go_version"})
	info.WithLabelValues(build.Version, build.Commit, strconv.FormatBool(build.Modified), build.GoVersion).Set(1)
	reg.MustRegister(info)
	reg.MustRegister(m.requests, m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		status := recordedStatus(r, ww.Status())
		labels := prometheus.Labels{"route": routePattern(r), "method": methodLabel(r.Method), "status": strconv.Itoa(status)}
		m.requests.With(labels).Inc()
		m.latency.With(labels).Observe(time.Since(start).Seconds())
	})
}

// methodLabel maps the request method to a closed set: the methods of RFC
// 9110 and PATCH as they are, anything else "OTHER", so that clients cannot
// create label values (and memory) at will. Routes are labelled by their
// chi pattern ("unmatched" when none matched), statuses by their code.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// MetricsHandler serves the Prometheus metrics of reg. pwsd mounts it on
// PWSD_METRICS_ADDR, or on the API address at /metrics behind
// PWSD_METRICS_TOKEN, or there openly only when the API itself is open.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// metricsToken requires "Authorization: Bearer <token>", compared in
// constant time over SHA-256 digests.
func metricsToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pwsd-metrics"`)
			writeProblem(w, newProblem(http.StatusUnauthorized, "/metrics requires the metrics token (PWSD_METRICS_TOKEN)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
