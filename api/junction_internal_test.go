package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestUnverifiedRowsIs422: a request whose rows meet a restart junction that
// failed its check (sanitize.JunctionError, however deeply wrapped) is a 422
// saying nothing was released, never a 500, and neither the answer nor the
// log names the junction's frequency (it lies near the request's data).
func TestUnverifiedRowsIs422(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := &handler{log: slog.New(slog.NewJSONHandler(&logs, nil)), outage: &outage{}}
	const at = 4_718_593
	err := fmt.Errorf("sanitizing element: %w", fmt.Errorf("sanitize: draw: %w", &sanitize.JunctionError{At: at, Up: 2e-6, Down: 1e-7}))
	w := httptest.NewRecorder()
	h.writeErr(w, httptest.NewRequest(http.MethodPost, "/v1/samples", nil), err)
	if w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422: %s", w.Code, w.Body)
	}
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || !strings.Contains(p.Detail, "nothing was released") {
		t.Fatalf("problem %+v (%v)", p, err)
	}
	for _, out := range []string{w.Body.String(), logs.String(), err.Error()} {
		if strings.Contains(out, "4718593") || strings.Contains(out, "4.718593e+06") {
			t.Errorf("the junction's frequency leaked: %s", out)
		}
	}
}
