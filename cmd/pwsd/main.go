// Command pwsd serves the pwsd HTTP API. See `pwsd --help` and README.md.
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
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
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
		case "figures":
			return runFigures(args[1:])
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

	svc, err := service.New(service.Config{Store: st, Logger: log, CacheBytes: cfg.CacheBytes})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           api.NewRouter(api.Deps{Service: svc, Logger: log, Registry: reg, Tokens: tokens, Limits: cfg.Limits}),
		ReadTimeout:       cfg.ReadTimeout,
		ReadHeaderTimeout: 10 * 1e9,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	log.Info("pwsd listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

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
	log.Info("stopped")
	return nil
}
