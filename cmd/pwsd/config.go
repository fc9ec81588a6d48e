package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// config is pwsd's configuration, read from the environment.
type config struct {
	Addr            string
	DatabaseURL     string
	TokensFile      string
	LogLevel        slog.Level
	LogFormat       string
	ReadTimeout     time.Duration
	WriteTimeout    time.Duration
	IdleTimeout     time.Duration
	ShutdownTimeout time.Duration
	Limits          api.Limits
	// SampleTTL, IdempotencyTTL and PurgeInterval: retention (lifecycle).
	SampleTTL      time.Duration
	IdempotencyTTL time.Duration
	PurgeInterval  time.Duration
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// MaxConns caps the open connections of the API listener.
	MaxConns int
	// MetricsAddr, when set, serves /metrics there instead of on Addr.
	MetricsAddr string
	// MetricsToken, when set, is required as a bearer token on /metrics.
	MetricsToken string
	// MaxTableWork bounds one request's table work (window cells).
	MaxTableWork int64
	// MaxReleaseWork bounds one sample release's total table work.
	MaxReleaseWork int64
	// TableCacheBytes bounds the table cache.
	TableCacheBytes int64
	CacheBytes      int64 // PWSD_CACHE_BYTES
	// WarmStartSets is how many of the parameter sets used last are warmed
	// when pwsd starts (PWSD_WARM_START_SETS; 0: none).
	WarmStartSets int
	// MemoryLimit is the Go runtime's soft memory limit (PWSD_MEMORY_LIMIT;
	// 0: none): the garbage collector works harder near it.
	MemoryLimit int64
	// HugePageHeapBytes is how much heap address space is advised for
	// transparent huge pages at start (PWSD_HUGEPAGE_HEAP_BYTES; 0: none).
	HugePageHeapBytes int64
}

// defaultMemoryLimit is PWSD_MEMORY_LIMIT's default, 1 GiB: with it, 8
// concurrent largest-admitted prebuilds peaked at 1.03 GB RSS (in-memory
// store) against 1.47 GB without (issue 31).
const defaultMemoryLimit = 1 << 30

// maxHugePageHeapBytes bounds PWSD_HUGEPAGE_HEAP_BYTES (64 GiB): the advised
// range is mapped (not resident) for the process's life.
const maxHugePageHeapBytes = 64 << 30

// envVar documents one variable; usage() prints the table. Defaults shared
// with the API (api.DefaultLimits) and the service (its Default constants)
// are read from there, never repeated.
type envVar struct {
	name, def, help string
}

var envVars = []envVar{
	{"PWSD_ADDR", ":8080", "listen address"},
	{"PWSD_DATABASE_URL", "", "PostgreSQL URL; unset means the embedded in-memory store. Migrations are applied at start-up. pgx's pool settings may be added as parameters (`pool_max_conns`, default the greater of 4 and the CPUs; `pool_min_conns`, default 4 here: pwsd keeps that many connections open, so that the first release after a restart or a quiet night does not wait to connect)"},
	{"PWSD_API_TOKENS_FILE", "", `JSON {"tokens":[{"token":"...","role":"writer"|"reader"}]}; unset means open access (warned at start)`},
	{"PWSD_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"PWSD_LOG_FORMAT", "json", "json or text (slog)"},
	{"PWSD_MAX_BODY_BYTES", itoa(api.DefaultLimits().MaxBodyBytes), "largest request body in bytes (413 above)"},
	{"PWSD_MAX_LINE_BYTES", itoa(api.DefaultLimits().MaxLineBytes), "longest NDJSON line in bytes (413 above)"},
	{"PWSD_MAX_ELEMENTS", itoa(api.DefaultLimits().MaxElements), "most elements in one sample (413 above)"},
	{"PWSD_MAX_KEY_BYTES", itoa(api.DefaultLimits().MaxKeyBytes), "longest key in bytes (422 above)"},
	{"PWSD_MAX_FREQUENCY", itoa(api.DefaultLimits().MaxFrequency), "largest element frequency (422 above; at most 2^33, the sanitizer's exact range)"},
	{"PWSD_MAX_RANGE_ROWS", itoa(api.DefaultLimits().MaxRangeRows), "most rows in one frequencies-table range (422 above)"},
	{"PWSD_MAX_TABLE_FREQUENCY", itoa(api.DefaultLimits().MaxTableFrequency), "largest max_frequency of the reporting and estimator tables (422 above)"},
	{"PWSD_MAX_REGEX_BYTES", itoa(api.DefaultLimits().MaxRegexBytes), "longest key_regex (422 above)"},
	{"PWSD_MAX_EVENTS", itoa(api.DefaultLimits().MaxEvents), "most events in one stream batch or bits in one counter batch (413 above)"},
	{"PWSD_MAX_CUSTOM_Q", itoa(api.DefaultLimits().MaxCustomQ), "most probabilities in a custom sampling scheme (422 above)"},
	{"PWSD_REQUEST_TIMEOUT", durText(api.DefaultLimits().RequestTimeout), "time limit of one /v1 request"},
	{"PWSD_CACHE_BYTES", itoa(service.DefaultCacheBytes), "bound in bytes of each of the two in-process caches of decoded tables ready to use (estimator tables; MLE chunks), least recently used dropped; per process, lost on restart"},
	{"PWSD_READ_TIMEOUT", "120s", "server read timeout (whole request, body included)"},
	{"PWSD_WRITE_TIMEOUT", "120s", "server write timeout"},
	{"PWSD_IDLE_TIMEOUT", "120s", "keep-alive idle timeout"},
	{"PWSD_SHUTDOWN_TIMEOUT", "30s", "how long in-flight requests may finish after SIGTERM/SIGINT"},
	{"PWSD_SAMPLE_TTL", "0", "how long a sample is kept (Go duration, e.g. 720h); 0 keeps samples until deleted. Ledgers are never deleted"},
	{"PWSD_IDEMPOTENCY_TTL", durText(service.DefaultIdempotencyTTL), "how long an Idempotency-Key and its answer are remembered (at most PWSD_SAMPLE_TTL when that is set)"},
	{"PWSD_PURGE_INTERVAL", "1m", "how often expired samples and idempotency keys are deleted"},
	{"PWSD_READ_HEADER_TIMEOUT", "5s", "time to read a request's headers (slow-header clients are cut off)"},
	{"PWSD_MAX_CONNS", "1024", "most open connections on PWSD_ADDR; further clients wait in the kernel's accept queue"},
	{"PWSD_METRICS_ADDR", "", "serve /metrics on this separate address (e.g. 127.0.0.1:9090) and not on PWSD_ADDR"},
	{"PWSD_METRICS_TOKEN", "", "bearer token /metrics requires on PWSD_ADDR; with tokens but neither this nor PWSD_METRICS_ADDR, /metrics is not served"},
	{"PWSD_MAX_TABLE_WORK", itoa(service.DefaultMaxTableWork), "most table work of one request, in window cells rows x (L+1) (422 above, naming epsilon or the rows)"},
	{"PWSD_MAX_RELEASE_WORK", itoa(service.DefaultMaxReleaseWork), "most table work of one sample release in total, counted per stretch of its frequencies (422 above, naming the elements past it)"},
	{"PWSD_MAX_READER_TABLE_WORK", itoa(api.DefaultMaxReaderTableWork), "most table work of one request of a reader token (the lower of this and PWSD_MAX_TABLE_WORK applies; 422 above)"},
	{"PWSD_MAX_HEAVY_REQUESTS", itoa(api.DefaultLimits().MaxHeavyRequests), "heavy requests (POSTs, tables, plots, estimates) running at once (503 with Retry-After when no slot frees within 1s)"},
	{"PWSD_MAX_INFLIGHT_BYTES", itoa(api.DefaultLimits().MaxInflightBytes), "sum of body bytes of heavy requests in flight (503 with Retry-After above)"},
	{"PWSD_WARM_START_SETS", itoa(service.DefaultWarmStartSets), "how many of the parameter sets used last pwsd warms in the background when it starts (their stored kept sanitizer rows restored, their last-used MLE chunks read into memory; PostgreSQL only), yielding to requests; 0 for none, at most " + itoa(service.DefaultTableCacheSize)},
	{"PWSD_TABLE_CACHE_BYTES", itoa(store.DefaultTableCacheBytes), "bound in bytes of the store's cache of encoded tables (table_cache in PostgreSQL, shared by replicas and kept across restarts; the memory store's otherwise), least recently used evicted"},
	{"PWSD_MEMORY_LIMIT", itoa(defaultMemoryLimit), "soft memory limit of the process in bytes (the Go runtime's; 0 for none; GOMEMLIMIT, when set, wins): the garbage collector works harder near it"},
	{"PWSD_HUGEPAGE_HEAP_BYTES", itoa(hugepages.DefaultHeapBytes), "heap address space in bytes pwsd asks Linux to back with transparent huge pages when first written (madvise at start, nothing resident until used; 0 for none): a fresh process's first releases take one page fault per 2 MB instead of per 4 KB"},
}

// itoa renders a default number for the environment table.
func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// durText renders a default duration for the environment table: whole
// hours as "24h", anything else in seconds ("60s").
func durText(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) + "s"
}

// envDefault is a variable's default as --help shows it.
func envDefault(def string) string {
	if def == "" {
		return "(unset)"
	}
	return def
}

// usage returns the --help text: commands and the environment table.
func usage() string {
	var b strings.Builder
	b.WriteString("pwsd — private weighted sampling and pan-private streaming service\n\n")
	b.WriteString("Usage:\n  pwsd                    serve HTTP (configuration from the environment)\n")
	b.WriteString("  pwsd figures --out DIR  regenerate the PWS paper's figures as SVG (--paper improved-density: the\n                          density paper's Figures 4-7, simulated; pwsd figures --help)\n  pwsd healthcheck        exit 0 when the pwsd on PWSD_ADDR answers /healthz (container healthchecks)\n  pwsd --version          module version, commit and Go version\n  pwsd --help             this text\n\nEnvironment:\n")
	// Columns as wide as their longest entry, so the defaults and the
	// meanings line up whatever the names.
	nameW, defW := 0, 0
	for _, v := range envVars {
		nameW = max(nameW, len(v.name))
		defW = max(defW, len(envDefault(v.def)))
	}
	for _, v := range envVars {
		fmt.Fprintf(&b, "  %-*s  %-*s  %s\n", nameW, v.name, defW, envDefault(v.def), v.help)
	}
	return b.String()
}

// loadConfig reads the environment through getenv (os.Getenv in main).
func loadConfig(getenv func(string) string) (config, error) {
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		for _, e := range envVars {
			if e.name == name {
				return e.def
			}
		}
		return ""
	}
	var errs []string
	intVar := func(name string) int64 {
		n, err := strconv.ParseInt(get(name), 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, name+" must be a positive integer")
		}
		return n
	}
	durVar := func(name string) time.Duration {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			errs = append(errs, name+" must be a positive duration such as 30s")
		}
		return d
	}
	c := config{
		Addr:            get("PWSD_ADDR"),
		DatabaseURL:     get("PWSD_DATABASE_URL"),
		TokensFile:      get("PWSD_API_TOKENS_FILE"),
		LogFormat:       get("PWSD_LOG_FORMAT"),
		ReadTimeout:     durVar("PWSD_READ_TIMEOUT"),
		WriteTimeout:    durVar("PWSD_WRITE_TIMEOUT"),
		IdleTimeout:     durVar("PWSD_IDLE_TIMEOUT"),
		ShutdownTimeout: durVar("PWSD_SHUTDOWN_TIMEOUT"),
		Limits: api.Limits{
			MaxBodyBytes:      intVar("PWSD_MAX_BODY_BYTES"),
			MaxLineBytes:      int(intVar("PWSD_MAX_LINE_BYTES")),
			MaxElements:       int(intVar("PWSD_MAX_ELEMENTS")),
			MaxKeyBytes:       int(intVar("PWSD_MAX_KEY_BYTES")),
			MaxFrequency:      intVar("PWSD_MAX_FREQUENCY"),
			MaxRangeRows:      intVar("PWSD_MAX_RANGE_ROWS"),
			MaxRegexBytes:     int(intVar("PWSD_MAX_REGEX_BYTES")),
			MaxTableFrequency: intVar("PWSD_MAX_TABLE_FREQUENCY"),
			MaxEvents:         int(intVar("PWSD_MAX_EVENTS")),
			MaxCustomQ:        int(intVar("PWSD_MAX_CUSTOM_Q")),
			RequestTimeout:    durVar("PWSD_REQUEST_TIMEOUT"),
		},
	}
	if d, err := time.ParseDuration(get("PWSD_SAMPLE_TTL")); err != nil || d < 0 {
		errs = append(errs, "PWSD_SAMPLE_TTL must be 0 or a positive duration such as 720h")
	} else {
		c.SampleTTL = d
	}
	c.IdempotencyTTL = durVar("PWSD_IDEMPOTENCY_TTL")
	c.PurgeInterval = durVar("PWSD_PURGE_INTERVAL")
	c.ReadHeaderTimeout = durVar("PWSD_READ_HEADER_TIMEOUT")
	c.MaxConns = int(intVar("PWSD_MAX_CONNS"))
	c.MetricsAddr = get("PWSD_METRICS_ADDR")
	c.MetricsToken = get("PWSD_METRICS_TOKEN")
	c.MaxTableWork = intVar("PWSD_MAX_TABLE_WORK")
	c.MaxReleaseWork = intVar("PWSD_MAX_RELEASE_WORK")
	c.TableCacheBytes = intVar("PWSD_TABLE_CACHE_BYTES")
	c.Limits.MaxReaderTableWork = intVar("PWSD_MAX_READER_TABLE_WORK")
	c.Limits.MaxHeavyRequests = int(intVar("PWSD_MAX_HEAVY_REQUESTS"))
	c.Limits.MaxInflightBytes = intVar("PWSD_MAX_INFLIGHT_BYTES")
	c.Limits.AdmissionWait = time.Second
	if c.MetricsToken != "" && utf8.RuneCountInString(c.MetricsToken) < 16 {
		errs = append(errs, "PWSD_METRICS_TOKEN must be at least 16 characters")
	}
	c.CacheBytes = intVar("PWSD_CACHE_BYTES")
	if n, err := strconv.Atoi(get("PWSD_WARM_START_SETS")); err != nil || n < 0 || n > service.DefaultTableCacheSize {
		errs = append(errs, fmt.Sprintf("PWSD_WARM_START_SETS must be an integer between 0 and %d", service.DefaultTableCacheSize))
	} else {
		c.WarmStartSets = n
	}
	if n, err := strconv.ParseInt(get("PWSD_MEMORY_LIMIT"), 10, 64); err != nil || n < 0 {
		errs = append(errs, "PWSD_MEMORY_LIMIT must be a number of bytes (0 for none)")
	} else {
		c.MemoryLimit = n
	}
	if n, err := strconv.ParseInt(get("PWSD_HUGEPAGE_HEAP_BYTES"), 10, 64); err != nil || n < 0 || n > maxHugePageHeapBytes {
		errs = append(errs, fmt.Sprintf("PWSD_HUGEPAGE_HEAP_BYTES must be a number of bytes between 0 and %d", int64(maxHugePageHeapBytes)))
	} else {
		c.HugePageHeapBytes = n
	}
	if c.Limits.MaxFrequency > sanitize.MaxFrequency {
		errs = append(errs, fmt.Sprintf("PWSD_MAX_FREQUENCY must be at most %d", sanitize.MaxFrequency))
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("PWSD_LOG_LEVEL"))); err != nil {
		errs = append(errs, "PWSD_LOG_LEVEL must be debug, info, warn or error")
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, "PWSD_LOG_FORMAT must be json or text")
	}
	if len(errs) > 0 {
		return config{}, fmt.Errorf("invalid configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func newLogger(c config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}
