package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/buildinfo"
	"github.com/pwsd/pwsd/internal/hugepages"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pwsd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "-help", "help":
			fmt.Print(usage())
			return nil
		case "--version", "-version", "version":
			fmt.Println(version())
			return nil
		case "figures":
			return runFigures(args[1:])
		case "healthcheck":
			return healthcheck(os.Getenv("PWSD_ADDR"))
		default:
			return fmt.Errorf("unknown argument %q\n\n%s", args[0], usage())
		}
	}
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, cfg, log)
}

// serve runs the server until ctx ends, then drains in-flight requests and
// closes the store.
func serve(ctx context.Context, cfg config, log *slog.Logger) error {
	if n := hugepages.AdviseHeap(int(cfg.HugePageHeapBytes)); n > 0 {
		log.Debug("heap advised for transparent huge pages", "bytes", n)
	}
	if cfg.MemoryLimit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}
	var st store.Store
	if cfg.DatabaseURL == "" {
		log.Info("using the embedded in-memory store; set PWSD_DATABASE_URL for PostgreSQL")
		st = store.NewMemory()
	} else {
		pg, err := store.OpenPostgres(ctx, cfg.DatabaseURL)
		if err != nil {
			return fmt.Errorf("opening PostgreSQL store: %w", err)
		}
		log.Info("using PostgreSQL; migrations applied")
		st = pg
	}
	defer st.Close()
	if l, ok := st.(store.TableCacheLimiter); ok {
		l.LimitTableCache(cfg.TableCacheBytes)
	}

	var tokens *api.Tokens
	if cfg.TokensFile != "" {
		t, err := api.LoadTokens(cfg.TokensFile)
		if err != nil {
			return err
		}
		tokens = t
	} else {
		log.Warn("PWSD_API_TOKENS_FILE is unset: the API is open to anyone who can reach it")
	}

	svc, err := service.New(service.Config{Store: st, Logger: log, SampleTTL: cfg.SampleTTL, CacheBytes: cfg.CacheBytes, WarmStartSets: cfg.WarmStartSets,
		IdempotencyTTL: cfg.IdempotencyTTL, IdempotencyWait: cfg.Limits.RequestTimeout, MaxTableWork: cfg.MaxTableWork, MaxReleaseWork: cfg.MaxReleaseWork,
		// A reservation lives as long as its request can: read, then run.
		IdempotencyHold: cfg.ReadTimeout + cfg.Limits.RequestTimeout + time.Minute})
	if err != nil {
		return err
	}
	// Rows the previous release stored in older shapes are rewritten to the
	// current versioned formats before any request is served.
	rewritten, err := svc.RewriteStoredFormats(ctx)
	if err != nil {
		return fmt.Errorf("rewriting stored rows to the current formats: %w", err)
	}
	if rewritten != (service.RewriteCounts{}) {
		log.Info("rewrote stored rows to the current formats", "samples", rewritten.Samples, "streams", rewritten.Streams, "counters", rewritten.Counters)
	}
	go svc.RunJanitor(ctx, cfg.PurgeInterval)
	go reloadTokensOnHUP(ctx, log, tokens, cfg.TokensFile)
	reg := prometheus.NewRegistry()
	deps := api.Deps{Service: svc, Logger: log, Registry: reg, Tokens: tokens, Limits: cfg.Limits, Build: buildinfo.Read(),
		MetricsToken: cfg.MetricsToken, MetricsElsewhere: cfg.MetricsAddr != ""}
	if tokens != nil && cfg.MetricsAddr == "" && cfg.MetricsToken == "" {
		log.Warn("/metrics is not served: set PWSD_METRICS_ADDR or PWSD_METRICS_TOKEN to scrape it")
	}
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           api.NewRouter(deps),
		ReadTimeout:       cfg.ReadTimeout,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	log.Info("pwsd listening", "addr", ln.Addr().String(), "max_conns", cfg.MaxConns)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(limitListener(ln, cfg.MaxConns)) }()
	if cfg.MetricsAddr != "" {
		msrv := &http.Server{Handler: api.MetricsHandler(reg), ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listening on %s (PWSD_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		log.Info("metrics listening", "addr", mln.Addr().String())
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	svc.StopOptional() // chunk builds that only save later requests time
	svc.Wait()         // tables still being written to the store
	log.Info("stopped")
	return nil
}

// version describes the binary (buildinfo: module version, commit, Go).
func version() string { return buildinfo.Read().String() }

// reloadTokensOnHUP reloads the tokens file on every SIGHUP until ctx ends
// (docs/operations.md): a valid file replaces the tokens at once, an
// invalid one is logged and the tokens in force stay. Without a tokens file
// a SIGHUP is logged and ignored (it would otherwise end the process).
func reloadTokensOnHUP(ctx context.Context, log *slog.Logger, tokens *api.Tokens, file string) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			switch {
			case tokens == nil:
				log.Warn("SIGHUP: no PWSD_API_TOKENS_FILE to reload; the API stays open")
			default:
				if err := tokens.Reload(); err != nil {
					log.Error("SIGHUP: the tokens file could not be reloaded; the tokens in force stay", "file", file, "error", err)
					continue
				}
				log.Info("SIGHUP: tokens reloaded", "file", file)
			}
		}
	}
}

// healthcheck asks the pwsd listening on addr (PWSD_ADDR; ":8080" when
// empty) for GET /healthz over loopback and fails unless it answers 200
// within 3 s: the container healthcheck of docker-compose.yml, whose
// distroless image has no shell or curl.
func healthcheck(addr string) error {
	if addr == "" {
		addr = ":8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("healthcheck: PWSD_ADDR %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	client := &http.Client{Timeout: 3 * time.Second}
	res, err := client.Get("http://" + net.JoinHostPort(host, port) + "/healthz")
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", res.StatusCode)
	}
	return nil
}
