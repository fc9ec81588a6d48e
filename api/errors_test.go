package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
)

// TestWriteErrNamesClientFields: the one mapper turns real domain errors
// into problems whose fields are named as the client wrote them (the JSON
// path for bodies, the query parameter for queries) with the status the
// API documents, and maps the service's not-found, limit and budget errors.
func TestWriteErrNamesClientFields(t *testing.T) {
	t.Parallel()
	h := &handler{log: slog.New(slog.NewTextHandler(io.Discard, nil)), outage: &outage{log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	must := func(_ any, err error) error {
		if err == nil {
			t.Fatal("the domain accepted an invalid value")
		}
		return err
	}
	_, privErr := sanitize.NewPrivacy(-1, 2)
	bigL, err := sanitize.NewPrivacy(0.001, 1e-9) // L(epsilon, delta) above planner.MaxPlanL
	if err != nil {
		t.Fatal(err)
	}
	_, planErr := planner.Plan(context.Background(), planner.PlanRequest{Privacy: bigL, Distribution: "pareto"})
	cases := []struct {
		name   string
		err    error
		status int
		fields []string
	}{
		{"body privacy (JSON path)", paramProblem("privacy.", privErr), 422, []string{"privacy.epsilon", "privacy.delta"}},
		{"query privacy (parameter)", privErr, 422, []string{"epsilon", "delta"}},
		{"body custom sampling", paramProblem("sampling.", must(sanitize.NewSampling(sanitize.SchemeCustom, 0, 0, []float64{0.5, 0.4}))), 422, []string{"sampling.probabilities[1]"}},
		{"query custom sampling", must(sanitize.NewSampling(sanitize.SchemeCustom, 0, 0, []float64{0.5, 0.4})), 422, []string{"probabilities[1]"}},
		{"stream config", must(panprivate.Config{Estimator: "bogus"}.Validate()), 422, []string{"estimator"}},
		{"stream event (wrapped)", fmt.Errorf("applying: %w", checks.Prefix("events[3]", checks.Errorf("user", "must be less than universe_size"))), 422, []string{"events[3].user"}},
		{"planner query, several at once", planErr, 422, []string{"epsilon", "distribution"}},
		{"NDJSON header keeps its line", atLine(paramProblem("privacy.", privErr), 1), 422, []string{"privacy.epsilon", "privacy.delta"}},
		{"not found", fmt.Errorf("reading: %w", &service.NotFoundError{Kind: "sample", Name: "abc"}), 404, nil},
		{"limit", &service.LimitError{Msg: "too many elements (PWSD_MAX_ELEMENTS)"}, 413, nil},
		{"budget", &service.BudgetError{Dataset: "d", RequestedEpsilon: 2, BudgetEpsilon: 1}, 409, nil},
		{"budget sentinel", service.ErrBudget, 409, nil},
		{"unexpected", fmt.Errorf("disk on fire"), 500, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/v1/tables/reporting", nil)
			h.writeErr(w, r, tc.err)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			var p Problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range p.Errors {
				got = append(got, f.Field)
				if f.Message == "" {
					t.Errorf("field %s has no message", f.Field)
				}
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("fields %v, want %v", got, tc.fields)
			}
			if tc.status == 500 && p.Detail != "internal error" {
				t.Fatalf("500 detail %q reveals the error", p.Detail)
			}
		})
	}
}
