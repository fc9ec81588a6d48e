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
	"slices"
	"strings"
	"testing"

	"github.com/ogen-go/ogen/ogenerrors"

	"github.com/pwsd/pwsd/clienttest/ogenclient"
	"github.com/pwsd/pwsd/internal/testserver"
)

// TestOgenClientIsFresh: ogenclient/ is what ogen v1.24.0 (the tool pinned
// in go.mod), a strict generator, generates from the document pwsd serves
// at /openapi.json with ogenclient/ogen.yml, which has no
// ignore_not_implemented: a schema ogen cannot generate exactly (an
// "anyOf" it cannot tell apart, say) fails this test, as does a stale
// client.
func TestOgenClientIsFresh(t *testing.T) {
	spec := servedDocument(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command("go", "tool", "ogen", "-config", "ogenclient/ogen.yml", "-package", "ogenclient", "-target", out, spec)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ogen refused the document: %v\n%s", err, tail(b, 40))
	}
	generated := func(d string) []string {
		names, err := filepath.Glob(filepath.Join(d, "oas_*_gen.go"))
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range names {
			names[i] = filepath.Base(n)
		}
		return names
	}
	got, want := generated(out), generated("ogenclient")
	if !slices.Equal(got, want) {
		t.Fatalf("ogen generates files %v, ogenclient/ has %v: run `make openapi` and commit the result", got, want)
	}
	for _, name := range got {
		g, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join("ogenclient", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Fatalf("clienttest/ogenclient/%s is stale: run `make openapi` (it regenerates the clients too) and commit the result", name)
		}
	}
}

// tail is the last n lines of b (ogen logs a warning per problem+json
// response before the error that matters).
func tail(b []byte, n int) []byte {
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// anonymous is the ogen client's security source on a server without
// PWSD_API_TOKENS_FILE: every /v1 operation also lists "no requirement",
// so the client may send no token.
type anonymous struct{}

// Bearer skips the bearer scheme.
func (anonymous) Bearer(context.Context, ogenclient.OperationName) (ogenclient.Bearer, error) {
	return ogenclient.Bearer{}, ogenerrors.ErrSkipClientSecurity
}

// answer takes the answer of an ogen operation, answer[T](t, what)(call),
// as the wanted type T, failing the test with what came instead (a
// problem, another status).
func answer[T any](t *testing.T, what string) func(res any, err error) T {
	return func(res any, err error) T {
		t.Helper()
		return as[T](t, what, res, err)
	}
}

// as is answer's check.
func as[T any](t *testing.T, what string, res any, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	v, ok := res.(T)
	if !ok {
		t.Fatalf("%s: answered %T %+v, want %T", what, res, res, v)
	}
	return v
}

// TestOgenClientWorkflow calls every operation of the document through the
// ogen client against the real router and checks each answer decodes to
// the documented type with the values the workflow implies: the datasets'
// budgets and ledger, a sample with its estimate, top, rank and
// quantiles, a release imported against an external charge, the tables
// and plots, both kinds of stream (their config decodes to the right
// branch of the oneOf), a counter, the deletes, and a 409 and a 422
// decoded as problems. allOperations checks that the workflow names every
// operation the client has.
func TestOgenClientWorkflow(t *testing.T) {
	srv := testserver.New(t)
	ctx := context.Background()
	c, err := ogenclient.NewClient(srv.URL, anonymous{})
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]bool{}
	call := func(op string) string { called[op] = true; return op }

	// Operations.
	health := answer[*ogenclient.GetHealthOKHeaders](t, call(ogenclient.GetHealthOperation))(c.GetHealth(ctx))
	if health.Response["status"] != "ok" {
		t.Fatalf("healthz: %v", health.Response)
	}
	answer[*ogenclient.GetReadinessOKHeaders](t, call(ogenclient.GetReadinessOperation))(c.GetReadiness(ctx))
	version := answer[*ogenclient.BuildInfoHeaders](t, call(ogenclient.GetVersionOperation))(c.GetVersion(ctx))
	if v := version.Response.GoVersion.Value; !strings.HasPrefix(v, "go") {
		t.Fatalf("version: %+v", version.Response)
	}
	answer[*ogenclient.GetOpenAPIDocumentOKHeaders](t, call(ogenclient.GetOpenAPIDocumentOperation))(c.GetOpenAPIDocument(ctx))
	answer[*ogenclient.GetSwaggerDocumentOKHeaders](t, call(ogenclient.GetSwaggerDocumentOperation))(c.GetSwaggerDocument(ctx))

	// Budgets: a dataset, an idempotent replay, a 409, a list, an external charge.
	key := ogenclient.NewOptString("create-queries-1")
	dsReq := &ogenclient.DatasetRequest{Name: "queries", EpsilonBudget: 2, DeltaBudget: 1e-4}
	ds := answer[*ogenclient.DatasetViewHeaders](t, call(ogenclient.CreateDatasetOperation))(
		c.CreateDataset(ctx, dsReq, ogenclient.CreateDatasetParams{IdempotencyKey: key}))
	if ds.Response.Name != "queries" || ds.Location.Or("") != "/v1/datasets/queries" {
		t.Fatalf("create dataset: %+v", ds)
	}
	again := answer[*ogenclient.DatasetViewHeaders](t, "repeat "+ogenclient.CreateDatasetOperation)(
		c.CreateDataset(ctx, dsReq, ogenclient.CreateDatasetParams{IdempotencyKey: key}))
	if again.IdempotentReplayed.Or("") != ogenclient.IdempotentReplayedTrue || again.IdempotentOriginalRequestID.Or("") != ds.XRequestID.Or("?") {
		t.Fatalf("repeat create dataset: not a replay: %+v", again)
	}
	dup := answer[*ogenclient.CreateDatasetConflict](t, "duplicate "+ogenclient.CreateDatasetOperation)(
		c.CreateDataset(ctx, dsReq, ogenclient.CreateDatasetParams{}))
	if dup.Response.Status != http.StatusConflict || dup.Response.RequestID == "" {
		t.Fatalf("409 not decoded as a problem: %+v", dup.Response)
	}
	list := answer[*ogenclient.DatasetListHeaders](t, call(ogenclient.ListDatasetsOperation))(c.ListDatasets(ctx, ogenclient.ListDatasetsParams{}))
	if len(list.Response.Items) != 1 || list.Response.Items[0].Name != "queries" {
		t.Fatalf("list datasets: %+v", list.Response)
	}
	charge := answer[*ogenclient.ChargeViewHeaders](t, call(ogenclient.CreateDatasetChargeOperation))(
		c.CreateDatasetCharge(ctx, &ogenclient.ChargeRequest{Epsilon: 0.5, Delta: 1e-6, Description: ogenclient.NewOptString("pwsd-beam run")},
			ogenclient.CreateDatasetChargeParams{Name: "queries"}))
	if charge.Response.Ref == "" || charge.Response.Epsilon != 0.5 {
		t.Fatalf("charge: %+v", charge.Response)
	}

	// Samples: one sanitized by pwsd, charged to the dataset.
	var elements []ogenclient.SampleElement
	for i := 1; i <= 40; i++ {
		elements = append(elements, ogenclient.SampleElement{Key: fmt.Sprintf("q%02d", i), Frequency: 50 * i})
	}
	smp := answer[*ogenclient.SampleViewHeaders](t, call(ogenclient.CreateSampleOperation))(
		c.CreateSample(ctx, &ogenclient.SampleRequest{
			Dataset:  ogenclient.NewOptString("queries"),
			Privacy:  ogenclient.PrivacyParams{Epsilon: 0.5, Delta: 1e-6},
			Sampling: ogenclient.SamplingParams{Scheme: ogenclient.SamplingParamsSchemeNone},
			Elements: elements,
		}, ogenclient.CreateSampleParams{}))
	id := smp.Response.ID
	if id == "" || smp.Response.Reported == 0 || len(smp.Response.Elements) != smp.Response.Reported {
		t.Fatalf("create sample: %+v", smp.Response)
	}
	// 422: a repeated key (which the document cannot forbid, so the
	// client's own validation lets it through), a problem naming it.
	bad := answer[*ogenclient.CreateSampleUnprocessableEntity](t, "invalid "+ogenclient.CreateSampleOperation)(
		c.CreateSample(ctx, &ogenclient.SampleRequest{
			Privacy:  ogenclient.PrivacyParams{Epsilon: 0.5, Delta: 1e-6},
			Sampling: ogenclient.SamplingParams{Scheme: ogenclient.SamplingParamsSchemeNone},
			Elements: append(slices.Clone(elements), elements[0]),
		}, ogenclient.CreateSampleParams{}))
	if errs := bad.Response.Errors; len(errs) != 1 || errs[0].Field != fmt.Sprintf("elements[%d].key", len(elements)) || bad.Response.Status != http.StatusUnprocessableEntity {
		t.Fatalf("422 not decoded as a problem naming elements[%d].key: %+v", len(elements), bad.Response)
	}
	// The client refuses what the document forbids before sending it.
	if _, err := c.CreateSample(ctx, &ogenclient.SampleRequest{
		Privacy:  ogenclient.PrivacyParams{Epsilon: 0.5, Delta: 2},
		Sampling: ogenclient.SamplingParams{Scheme: ogenclient.SamplingParamsSchemeNone},
		Elements: elements,
	}, ogenclient.CreateSampleParams{}); err == nil || !strings.Contains(err.Error(), "delta") {
		t.Fatalf("delta 2: the client sent it (%v)", err)
	}
	got := answer[*ogenclient.GetSampleOKApplicationJSONHeaders](t, call(ogenclient.GetSampleOperation))(c.GetSample(ctx, ogenclient.GetSampleParams{ID: id}))
	if got.Response.ID != id || got.Response.Reported != smp.Response.Reported {
		t.Fatalf("get sample: %+v", got.Response)
	}
	samples := answer[*ogenclient.SampleListHeaders](t, call(ogenclient.ListSamplesOperation))(c.ListSamples(ctx, ogenclient.ListSamplesParams{}))
	if len(samples.Response.Items) != 1 {
		t.Fatalf("list samples: %+v", samples.Response)
	}
	est := answer[*ogenclient.EstimateViewHeaders](t, call(ogenclient.GetSampleEstimateOperation))(c.GetSampleEstimate(ctx, ogenclient.GetSampleEstimateParams{ID: id}))
	if e := est.Response; !(e.StandardError > 0) || !(e.Interval.Lower <= e.Estimate && e.Estimate <= e.Interval.Upper) || e.Selected != smp.Response.Reported {
		t.Fatalf("estimate: %+v", e)
	}
	top := answer[*ogenclient.TopViewHeaders](t, call(ogenclient.GetSampleTopOperation))(c.GetSampleTop(ctx, ogenclient.GetSampleTopParams{ID: id, K: ogenclient.NewOptInt(3)}))
	if len(top.Response.Keys) != 3 {
		t.Fatalf("top: %+v", top.Response)
	}
	first := top.Response.Keys[0].Key
	rank := answer[*ogenclient.RankViewHeaders](t, call(ogenclient.GetSampleRankOperation))(c.GetSampleRank(ctx, ogenclient.GetSampleRankParams{ID: id, Key: first}))
	if rank.Response.Rank != 1 || rank.Response.Key != first {
		t.Fatalf("rank of the top key: %+v", rank.Response)
	}
	qs := answer[*ogenclient.QuantilesViewHeaders](t, call(ogenclient.GetSampleQuantilesOperation))(
		c.GetSampleQuantiles(ctx, ogenclient.GetSampleQuantilesParams{ID: id, Q: []float64{0.25, 0.5, 0.75}}))
	if len(qs.Response.Quantiles) != 3 {
		t.Fatalf("quantiles: %+v", qs.Response)
	}

	// A release sanitized outside pwsd (a keys release), paid by the charge.
	header := fmt.Sprintf(`{"dataset":"queries","privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"},`+
		`"release":"keys","method":"max_separation","reported":2,"privacy_unit":{"max_weight":1,"table_epsilon":0.5,"table_delta":1e-6},"charge_ref":%q}`,
		charge.Response.Ref)
	body := header + "\n" + `{"key":"a"}` + "\n" + `{"key":"b"}` + "\n"
	imp := answer[*ogenclient.ImportSampleCreatedApplicationJSONHeaders](t, call(ogenclient.ImportSampleOperation))(
		c.ImportSample(ctx, ogenclient.ImportSampleReq{Data: strings.NewReader(body)}))
	if imp.Response.Reported != 2 || imp.Response.Release != ogenclient.SampleViewReleaseKeys {
		t.Fatalf("import: %+v", imp.Response)
	}

	// The ledger: the sample's release and the external charge (the import is not charged again).
	dv := answer[*ogenclient.GetDatasetOKHeaders](t, call(ogenclient.GetDatasetOperation))(c.GetDataset(ctx, ogenclient.GetDatasetParams{Name: "queries"}))
	if r := dv.Response; len(r.Releases) != 2 || r.SpentBasic.Epsilon != 1 || r.Accounting != "pld" || !(r.Spent.Epsilon <= 1) {
		t.Fatalf("dataset ledger: %+v", r)
	}

	// Tables and plots.
	const eps, delta = 0.5, 1e-6
	rep := answer[*ogenclient.ReportingViewHeaders](t, call(ogenclient.GetReportingTableOperation))(
		c.GetReportingTable(ctx, ogenclient.GetReportingTableParams{Epsilon: eps, Delta: delta, MaxFrequency: ogenclient.NewOptInt(50)}))
	if len(rep.Response.Pi) != 50 || !(rep.Response.L > 0) {
		t.Fatalf("reporting: L %v, %d rows", rep.Response.L, len(rep.Response.Pi))
	}
	freq := answer[*ogenclient.FrequenciesViewHeaders](t, call(ogenclient.GetFrequencyTableOperation))(
		c.GetFrequencyTable(ctx, ogenclient.GetFrequencyTableParams{Epsilon: eps, Delta: delta, Frequency: "3-5"}))
	if len(freq.Response.Rows) != 3 {
		t.Fatalf("frequencies 3-5: %d rows", len(freq.Response.Rows))
	}
	ests := answer[*ogenclient.EstimatorsViewHeaders](t, call(ogenclient.GetEstimatorTableOperation))(
		c.GetEstimatorTable(ctx, ogenclient.GetEstimatorTableParams{Epsilon: eps, Delta: delta, MaxFrequency: ogenclient.NewOptInt(20)}))
	if len(ests.Response.Rows) != 20 {
		t.Fatalf("estimators: %d rows", len(ests.Response.Rows))
	}
	audit := answer[*ogenclient.AuditViewHeaders](t, call(ogenclient.GetPrivacyAuditOperation))(
		c.GetPrivacyAudit(ctx, ogenclient.GetPrivacyAuditParams{Epsilon: eps, Delta: delta, Frequency: "1-30"}))
	if !audit.Response.Holds {
		t.Fatalf("audit: %+v", audit.Response)
	}
	pre := answer[*ogenclient.PrebuildViewHeaders](t, call(ogenclient.PrebuildTablesOperation))(
		c.PrebuildTables(ctx, &ogenclient.PrebuildRequest{MaxFrequency: 100,
			Privacy: ogenclient.PrivacyParams{Epsilon: eps, Delta: delta}, Sampling: ogenclient.SamplingParams{Scheme: ogenclient.SamplingParamsSchemeNone}}))
	if pre.Response.Chunks < 1 {
		t.Fatalf("prebuild: %+v", pre.Response)
	}
	svg := func(what string, r io.Reader) {
		t.Helper()
		b, err := io.ReadAll(r)
		if err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Fatalf("%s: not an SVG (%v): %.80s", what, err, b)
		}
	}
	pr := answer[*ogenclient.PlotReportingOKHeaders](t, call(ogenclient.PlotReportingOperation))(
		c.PlotReporting(ctx, ogenclient.PlotReportingParams{Epsilon: eps, Delta: delta, MaxFrequency: ogenclient.NewOptInt(50)}))
	svg("plot reporting", pr.Response)
	pb := answer[*ogenclient.PlotBiasOKHeaders](t, call(ogenclient.PlotBiasOperation))(
		c.PlotBias(ctx, ogenclient.PlotBiasParams{Epsilon: eps, Delta: delta, MaxFrequency: ogenclient.NewOptInt(50)}))
	svg("plot bias", pb.Response)
	pv := answer[*ogenclient.PlotVarianceOKHeaders](t, call(ogenclient.PlotVarianceOperation))(
		c.PlotVariance(ctx, ogenclient.PlotVarianceParams{Epsilon: eps, Delta: delta, MaxFrequency: ogenclient.NewOptInt(50)}))
	svg("plot variance", pv.Response)
	pn := answer[*ogenclient.PlotNRMSEOKHeaders](t, call(ogenclient.PlotNRMSEOperation))(
		c.PlotNRMSE(ctx, ogenclient.PlotNRMSEParams{Epsilon: eps, Delta: delta, Distribution: ogenclient.PlotNRMSEDistributionZipf, Alpha: ogenclient.NewOptFloat64(1.1), N: ogenclient.NewOptInt(1000)}))
	svg("plot nrmse", pn.Response)
	plan := answer[*ogenclient.PlanResultHeaders](t, call(ogenclient.GetPlanSummaryOperation))(
		c.GetPlanSummary(ctx, ogenclient.GetPlanSummaryParams{Epsilon: eps, Delta: delta, Distribution: ogenclient.GetPlanSummaryDistributionZipf, Alpha: ogenclient.NewOptFloat64(1.1), N: ogenclient.NewOptInt(1000)}))
	if !(plan.Response.L > 0) || plan.Response.Description == "" {
		t.Fatalf("plan: %+v", plan.Response)
	}
	sp := answer[*ogenclient.StreamPlanResultHeaders](t, call(ogenclient.GetStreamPlanOperation))(
		c.GetStreamPlan(ctx, ogenclient.GetStreamPlanParams{UniverseSize: 10000, Epsilon: 0.5, Alpha: 0.1, Beta: 0.05,
			ReleaseNoise: ogenclient.NewOptGetStreamPlanReleaseNoise(ogenclient.GetStreamPlanReleaseNoisePaper), Reps: ogenclient.NewOptInt(5)}))
	if len(sp.Response.Algorithms) != 3 || sp.Response.Recommended == "" || sp.Response.Reps != 5 {
		t.Fatalf("stream plan: %+v", sp.Response)
	}
	ps := answer[*ogenclient.PlotStreamsOKHeaders](t, call(ogenclient.PlotStreamsOperation))(
		c.PlotStreams(ctx, ogenclient.PlotStreamsParams{X: ogenclient.NewOptPlotStreamsX(ogenclient.PlotStreamsXSampleSize), UniverseSize: 10000, Epsilon: 0.5, Alpha: 0.1, Beta: 0.05}))
	svg("plot streams", ps.Response)

	// Streams: an estimator stream (events, a release, an intrusion) and a
	// continual one; each config decodes to its own branch of the oneOf.
	st := answer[*ogenclient.StreamViewHeaders](t, call(ogenclient.CreateStreamOperation))(
		c.CreateStream(ctx, &ogenclient.StreamRequest{Estimator: ogenclient.StreamRequestEstimatorDensity, Epsilon: 0.25, UniverseSize: 1000,
			SampleSize: ogenclient.NewOptInt(100)}, ogenclient.CreateStreamParams{}))
	if cfg := st.Response.Config; !cfg.IsStreamEstimatorConfig() || cfg.StreamEstimatorConfig.UniverseSize != 1000 {
		t.Fatalf("estimator stream's config: %+v", cfg)
	}
	events := &ogenclient.EventsRequest{}
	for u := range 50 {
		events.Events = append(events.Events, ogenclient.EventsRequestEventsItem{User: ogenclient.NewIntEventsRequestEventsItemUser(u)})
	}
	ev := answer[*ogenclient.AddStreamEventsOKHeaders](t, call(ogenclient.AddStreamEventsOperation))(
		c.AddStreamEvents(ctx, events, ogenclient.AddStreamEventsParams{ID: st.Response.ID}))
	if ev.Response.ID != st.Response.ID {
		t.Fatalf("events: %+v", ev.Response)
	}
	rel := answer[*ogenclient.StreamReleaseViewHeaders](t, call(ogenclient.CreateStreamReleaseOperation))(
		c.CreateStreamRelease(ctx, ogenclient.CreateStreamReleaseParams{ID: st.Response.ID}))
	if r := rel.Response; r.EpsilonSpent != 0.25 || !(r.StandardError > 0) || !(r.Range.Min <= r.Clamped && r.Clamped <= r.Range.Max) || !(r.Interval.Lower <= r.Clamped && r.Clamped <= r.Interval.Upper) {
		t.Fatalf("stream release: %+v", r)
	}
	state := answer[*ogenclient.StreamStateHeaders](t, call(ogenclient.AnnounceStreamIntrusionOperation))(
		c.AnnounceStreamIntrusion(ctx, ogenclient.AnnounceStreamIntrusionParams{ID: st.Response.ID}))
	if state.Response.UniverseSize != 1000 || state.Response.SampleSize != 100 {
		t.Fatalf("intrusion: %+v", state.Response)
	}
	cont := answer[*ogenclient.StreamViewHeaders](t, "continual "+ogenclient.CreateStreamOperation)(
		c.CreateStream(ctx, &ogenclient.StreamRequest{Estimator: ogenclient.StreamRequestEstimatorDensity, Continual: ogenclient.NewOptBool(true),
			Epsilon: 0.25, UniverseSize: 500, SampleSize: ogenclient.NewOptInt(50)}, ogenclient.CreateStreamParams{}))
	view := answer[*ogenclient.GetStreamOKHeaders](t, call(ogenclient.GetStreamOperation))(c.GetStream(ctx, ogenclient.GetStreamParams{ID: cont.Response.ID}))
	if cfg := view.Response.Config; !view.Response.Continual || !cfg.IsContinualDensityConfig() || cfg.ContinualDensityConfig.UniverseSize != 500 {
		t.Fatalf("continual stream's config: %+v", view.Response)
	}
	streams := answer[*ogenclient.StreamListHeaders](t, call(ogenclient.ListStreamsOperation))(c.ListStreams(ctx, ogenclient.ListStreamsParams{}))
	if len(streams.Response.Items) != 2 || !streams.Response.Items[0].Config.IsStreamEstimatorConfig() || !streams.Response.Items[1].Config.IsContinualDensityConfig() {
		t.Fatalf("list streams: %+v", streams.Response)
	}

	// A counter under continual observation.
	ctr := answer[*ogenclient.CounterViewHeaders](t, call(ogenclient.CreateCounterOperation))(
		c.CreateCounter(ctx, &ogenclient.CounterRequest{Epsilon: 1, Horizon: 16}, ogenclient.CreateCounterParams{}))
	steps := answer[*ogenclient.StepsViewHeaders](t, call(ogenclient.AddCounterStepsOperation))(
		c.AddCounterSteps(ctx, &ogenclient.StepsRequest{Bits: []int{0, 1, 1}}, ogenclient.AddCounterStepsParams{ID: ctr.Response.ID}))
	if len(steps.Response.Outputs) != 3 || len(steps.Response.StandardErrors) != 3 {
		t.Fatalf("counter steps: %+v", steps.Response)
	}
	cv := answer[*ogenclient.GetCounterOKHeaders](t, call(ogenclient.GetCounterOperation))(c.GetCounter(ctx, ogenclient.GetCounterParams{ID: ctr.Response.ID}))
	if cv.Response.Steps != 3 || cv.Response.Horizon != 16 {
		t.Fatalf("get counter: %+v", cv.Response)
	}
	counters := answer[*ogenclient.CounterListHeaders](t, call(ogenclient.ListCountersOperation))(c.ListCounters(ctx, ogenclient.ListCountersParams{}))
	if len(counters.Response.Items) != 1 {
		t.Fatalf("list counters: %+v", counters.Response)
	}

	// Deletes, then a 404 for the deleted sample.
	answer[*ogenclient.DeleteSampleNoContent](t, call(ogenclient.DeleteSampleOperation))(c.DeleteSample(ctx, ogenclient.DeleteSampleParams{ID: id}))
	answer[*ogenclient.DeleteStreamNoContent](t, call(ogenclient.DeleteStreamOperation))(c.DeleteStream(ctx, ogenclient.DeleteStreamParams{ID: st.Response.ID}))
	answer[*ogenclient.DeleteCounterNoContent](t, call(ogenclient.DeleteCounterOperation))(c.DeleteCounter(ctx, ogenclient.DeleteCounterParams{ID: ctr.Response.ID}))
	gone := answer[*ogenclient.GetSampleNotFound](t, "deleted "+ogenclient.GetSampleOperation)(c.GetSample(ctx, ogenclient.GetSampleParams{ID: id}))
	if gone.Response.Status != http.StatusNotFound {
		t.Fatalf("deleted sample: %+v", gone.Response)
	}

	if missing := slices.DeleteFunc(slices.Clone(allOperations(t)), func(op string) bool { return called[op] }); len(missing) > 0 {
		t.Fatalf("the workflow does not call %v", missing)
	}
}

// allOperations lists the operation names of the ogen client (its
// XxxOperation constants, read from the generated source, so an operation
// added to the document is one the workflow must call).
func allOperations(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("ogenclient/oas_operations_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for line := range strings.Lines(string(b)) {
		// e.g. `	AddCounterStepsOperation OperationName = "AddCounterSteps"`
		if _, name, ok := strings.Cut(line, `OperationName = "`); ok {
			ops = append(ops, strings.TrimSuffix(strings.TrimSpace(name), `"`))
		}
	}
	if len(ops) < 39 {
		t.Fatalf("found %d operations in ogenclient/oas_operations_gen.go, expected at least the 39 of the document", len(ops))
	}
	return ops
}
