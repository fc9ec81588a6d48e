package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestPanicIsA500WithRequestID: a handler panic answers a 500 problem with
// the request id in X-Request-Id, the server keeps serving, and the log
// carries the panic value and stack but no request data.
func TestPanicIsA500WithRequestID(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	r := chi.NewRouter()
	r.Use(requestID)
	r.Use(requestLogger(log))
	r.Use(recoverer(log))
	r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic(errors.New("index out of range [16] with length 11")) })
	r.Get("/ok", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	ts := httptest.NewServer(r)
	defer ts.Close()

	req, _ := http.NewRequest("GET", ts.URL+"/boom?secret=SECRET-QUERY", nil)
	req.Header.Set("X-Request-Id", "req-42")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the server crashed: %v", err)
	}
	defer res.Body.Close()
	var p Problem
	_ = json.NewDecoder(res.Body).Decode(&p)
	if res.StatusCode != 500 || p.Status != 500 || res.Header.Get("X-Request-Id") != "req-42" {
		t.Fatalf("status %d, problem %+v, X-Request-Id %q", res.StatusCode, p, res.Header.Get("X-Request-Id"))
	}
	if res2, err := http.Get(ts.URL + "/ok"); err != nil || res2.StatusCode != 204 {
		t.Fatalf("the server does not serve after a panic: %v", err)
	}
	l := logs.String()
	for _, want := range []string{`"panic":"index out of range [16] with length 11"`, `"stack":"goroutine`, `"request_id":"req-42"`} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %s:\n%s", want, l)
		}
	}
	if strings.Contains(l, "SECRET-QUERY") {
		t.Error("the log carries request data")
	}
}
