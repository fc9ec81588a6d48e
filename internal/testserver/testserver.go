// Package testserver serves pwsd's real router over the in-memory store for
// tests outside package api (the README's examples, the generated client).
package testserver

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// New starts the router with the default limits on a loopback port, as
// `make run` serves it, and closes it when the test ends.
func New(t testing.TB) *httptest.Server {
	t.Helper()
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Start is New for callers without a testing.TB (Example functions): it
// starts the router over a fresh in-memory store and the caller closes it.
func Start() (*httptest.Server, error) {
	svc, err := service.New(service.Config{Store: store.NewMemory()})
	if err != nil {
		return nil, err
	}
	return httptest.NewServer(api.NewRouter(api.Deps{Service: svc, Logger: slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry(), Limits: api.DefaultLimits()})), nil
}
