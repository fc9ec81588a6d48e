package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pwsd/pwsd/clienttest/client"
	"github.com/pwsd/pwsd/internal/testserver"
)

// TestClientIsFresh: client/client.gen.go is what oapi-codegen v2.8.2 (the
// tool pinned in go.mod) generates from the document pwsd serves at
// /openapi.json, so the workflow below runs the client a user would get.
func TestClientIsFresh(t *testing.T) {
	spec := servedDocument(t)
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "client/oapi-codegen.yaml", "-o", out, spec)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("client/client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("clienttest/client/client.gen.go is stale: run `make openapi` (it regenerates the client too) and commit the result")
	}
}

// servedDocument writes the OpenAPI document the real router serves at
// /openapi.json to a file and returns its path: the document a client
// generator gets.
func servedDocument(t *testing.T) string {
	t.Helper()
	srv := testserver.New(t)
	res, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %v", res.StatusCode, err)
	}
	spec := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(spec, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestGeneratedClientWorkflow runs the main jobs through the generated
// client against the real router: a dataset with a budget, a keyed sample
// charged to it, an estimate with its interval, a stream release, a
// counter, an idempotent replay, and a 409 and a 422 decoded as problems.
func TestGeneratedClientWorkflow(t *testing.T) {
	srv := testserver.New(t)
	ctx := context.Background()
	c, err := client.NewClientWithResponses(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, status int, want int, body []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if status != want {
			t.Fatalf("%s: status %d, want %d: %s", what, status, want, body)
		}
	}

	// A dataset, with Idempotency-Key: a repeat is replayed, not run.
	key := "create-queries-1"
	ds, err := c.CreateDatasetWithResponse(ctx, &client.CreateDatasetParams{IdempotencyKey: &key},
		client.DatasetRequest{Name: "queries", EpsilonBudget: 1, DeltaBudget: 1e-5})
	check("create dataset", ds.StatusCode(), http.StatusCreated, ds.Body, err)
	if ds.JSON201 == nil || ds.JSON201.Name != "queries" || ds.HTTPResponse.Header.Get("Location") != "/v1/datasets/queries" {
		t.Fatalf("create dataset: %+v, Location %q", ds.JSON201, ds.HTTPResponse.Header.Get("Location"))
	}
	again, err := c.CreateDatasetWithResponse(ctx, &client.CreateDatasetParams{IdempotencyKey: &key},
		client.DatasetRequest{Name: "queries", EpsilonBudget: 1, DeltaBudget: 1e-5})
	check("repeat create dataset", again.StatusCode(), http.StatusCreated, again.Body, err)
	if again.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" ||
		again.HTTPResponse.Header.Get("Idempotent-Original-Request-Id") != ds.HTTPResponse.Header.Get("X-Request-Id") {
		t.Fatalf("repeat: not a replay of the first request: %v", again.HTTPResponse.Header)
	}

	// 409: the name exists (no key this time), decoded as a problem.
	dup, err := c.CreateDatasetWithResponse(ctx, nil, client.DatasetRequest{Name: "queries", EpsilonBudget: 1, DeltaBudget: 0})
	check("duplicate dataset", dup.StatusCode(), http.StatusConflict, dup.Body, err)
	if p := dup.ApplicationproblemJSON409; p == nil || p.Status != http.StatusConflict || p.RequestId == "" {
		t.Fatalf("409 not decoded as a problem: %+v", p)
	}

	// A keyed sample charged to the dataset.
	elements := make([]client.SampleElement, 0, 40)
	for i := 1; i <= 40; i++ {
		elements = append(elements, client.SampleElement{Key: fmt.Sprintf("q%02d", i), Frequency: 50 * i})
	}
	dataset := "queries"
	smp, err := c.CreateSampleWithResponse(ctx, nil, client.SampleRequest{
		Dataset:  &dataset,
		Privacy:  client.PrivacyParams{Epsilon: 0.5, Delta: 1e-6},
		Sampling: client.SamplingParams{Scheme: client.SamplingParamsSchemeNone},
		Elements: &elements,
	})
	check("create sample", smp.StatusCode(), http.StatusCreated, smp.Body, err)
	if smp.JSON201 == nil || smp.JSON201.Id == "" || len(smp.JSON201.Elements) == 0 {
		t.Fatalf("create sample: %s", smp.Body)
	}
	id := smp.JSON201.Id

	// An estimate with its interval.
	est, err := c.GetSampleEstimateWithResponse(ctx, id, &client.GetSampleEstimateParams{})
	check("estimate", est.StatusCode(), http.StatusOK, est.Body, err)
	e := est.JSON200
	if e == nil || !(e.StandardError > 0) || !(e.Interval.Lower <= e.Estimate && e.Estimate <= e.Interval.Upper) || e.Interval.Level != 0.95 {
		t.Fatalf("estimate without a consistent interval: %s", est.Body)
	}

	// 422: delta above 1, decoded as a problem naming the field.
	bad, err := c.CreateSampleWithResponse(ctx, nil, client.SampleRequest{
		Privacy:  client.PrivacyParams{Epsilon: 0.5, Delta: 2},
		Sampling: client.SamplingParams{Scheme: client.SamplingParamsSchemeNone},
		Elements: &elements,
	})
	check("invalid sample", bad.StatusCode(), http.StatusUnprocessableEntity, bad.Body, err)
	if p := bad.ApplicationproblemJSON422; p == nil || p.Errors == nil || len(*p.Errors) != 1 || (*p.Errors)[0].Field != "privacy.delta" || p.RequestId == "" {
		t.Fatalf("422 not decoded as a problem naming privacy.delta: %s", bad.Body)
	}

	// A pan-private stream: events, then a release.
	size := 100
	st, err := c.CreateStreamWithResponse(ctx, nil, client.StreamRequest{
		Estimator: client.StreamRequestEstimatorDensity, Epsilon: 0.25, UniverseSize: 1000, SampleSize: &size})
	check("create stream", st.StatusCode(), http.StatusCreated, st.Body, err)
	events := client.EventsRequest{Events: &[]struct {
		Op   *client.EventsRequestEventsOp    `json:"op,omitempty"`
		User client.EventsRequest_Events_User `json:"user"`
	}{}}
	for u := range 50 {
		var user client.EventsRequest_Events_User
		if err := user.FromEventsRequestEventsUser0(u); err != nil {
			t.Fatal(err)
		}
		*events.Events = append(*events.Events, struct {
			Op   *client.EventsRequestEventsOp    `json:"op,omitempty"`
			User client.EventsRequest_Events_User `json:"user"`
		}{User: user})
	}
	ev, err := c.AddStreamEventsWithResponse(ctx, st.JSON201.Id, nil, events)
	check("stream events", ev.StatusCode(), http.StatusOK, ev.Body, err)
	rel, err := c.CreateStreamReleaseWithResponse(ctx, st.JSON201.Id, nil)
	check("stream release", rel.StatusCode(), http.StatusOK, rel.Body, err)
	if rel.JSON200 == nil || rel.JSON200.EpsilonSpent != 0.25 {
		t.Fatalf("stream release: %s", rel.Body)
	}
	view, err := c.GetStreamWithResponse(ctx, st.JSON201.Id)
	check("get stream", view.StatusCode(), http.StatusOK, view.Body, err)
	cfg, err := view.JSON200.Config.AsStreamEstimatorConfig()
	if err != nil || cfg.Estimator != client.StreamEstimatorConfigEstimatorDensity || cfg.UniverseSize != 1000 || view.JSON200.Releases != 1 {
		t.Fatalf("stream view: config %+v (%v), %s", cfg, err, view.Body)
	}

	// A counter under continual observation.
	ctr, err := c.CreateCounterWithResponse(ctx, nil, client.CounterRequest{Epsilon: 1, Horizon: 16})
	check("create counter", ctr.StatusCode(), http.StatusCreated, ctr.Body, err)
	bits := []int{0, 1, 1}
	steps, err := c.AddCounterStepsWithResponse(ctx, ctr.JSON201.Id, nil, client.StepsRequest{Bits: &bits})
	check("counter steps", steps.StatusCode(), http.StatusOK, steps.Body, err)
	if steps.JSON200 == nil || len(steps.JSON200.Outputs) != len(bits) {
		t.Fatalf("counter steps: %s", steps.Body)
	}

	// The ledger shows the sample's release (the stream names no dataset).
	got, err := c.GetDatasetWithResponse(ctx, "queries", nil)
	check("get dataset", got.StatusCode(), http.StatusOK, got.Body, err)
	if got.JSON200 == nil || len(got.JSON200.Releases) != 1 || got.JSON200.SpentBasic.Epsilon != 0.5 {
		t.Fatalf("dataset ledger: %s", got.Body)
	}
}
