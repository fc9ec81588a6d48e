package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/testserver"
)

// These examples drive the real router over the in-memory store, as pwsd
// does with `make run`. The service draws its noise from a crypto-seeded
// generator, so they print only what does not depend on the noise: status
// codes, the fields an answer carries, charged budgets and counts.

// exampleServer starts pwsd's router over a fresh in-memory store, wired
// as ExampleNewRouter shows; the caller closes it.
func exampleServer() *httptest.Server {
	srv, err := testserver.Start()
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// call sends body (JSON when not empty) with the headers given as name,
// value pairs and returns the status and the decoded JSON answer.
func call(srv *httptest.Server, method, path, body string, headers ...string) (int, map[string]any) {
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		log.Fatal(err)
	}
	var v map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			log.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return res.StatusCode, v
}

// fieldNames lists the names of an answer's fields, sorted.
func fieldNames(v map[string]any) []string {
	var names []string
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// A sample is sanitized as it is uploaded and only the private release is
// stored: POST /v1/samples answers 201 with the released elements. With no
// sampling, frequency 1000 and (1, 1e-6)-DP, every key of frequency 1000 is
// far above the frequencies the mechanism withholds, so all three are
// reported; the key of frequency 1 is almost never reported.
func ExampleNewRouter() {
	// The wiring of cmd/pwsd, over the in-memory store and without tokens.
	svc, err := service.New(service.Config{Store: store.NewMemory()})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(api.NewRouter(api.Deps{
		Service:  svc,
		Logger:   slog.New(slog.DiscardHandler),
		Registry: prometheus.NewRegistry(),
		Limits:   api.DefaultLimits(),
	}))
	defer srv.Close()

	status, smp := call(srv, "POST", "/v1/samples", `{
		"privacy": {"epsilon": 1, "delta": 1e-6},
		"sampling": {"scheme": "none"},
		"release": "frequencies",
		"elements": [
			{"key": "a/1", "frequency": 1000},
			{"key": "a/2", "frequency": 1000},
			{"key": "b/1", "frequency": 1000}
		]}`)
	fmt.Println("status:", status)
	fmt.Println("release:", smp["release"], "estimator:", smp["estimator"])
	els := smp["elements"].([]any)
	fmt.Println("reported keys:", len(els))
	fmt.Println("element fields:", fieldNames(els[0].(map[string]any)))
	// Output:
	// status: 201
	// release: frequencies estimator: mle
	// reported keys: 3
	// element fields: [contribution frequency key value]
}

// An estimate over a stored release carries its uncertainty: a standard
// error and an interval at the level asked for, and whether the answer is
// reliable given the frequencies the privacy mechanism withholds.
func ExampleNewRouter_estimate() {
	srv := exampleServer()
	defer srv.Close()

	_, smp := call(srv, "POST", "/v1/samples", `{
		"privacy": {"epsilon": 1, "delta": 1e-6},
		"sampling": {"scheme": "none"},
		"elements": [
			{"key": "a/1", "frequency": 1000},
			{"key": "a/2", "frequency": 2000},
			{"key": "b/1", "frequency": 3000}
		]}`)
	status, est := call(srv, "GET", "/v1/samples/"+smp["id"].(string)+"/estimate?key_prefix=a/&level=0.9", "")
	fmt.Println("status:", status)
	fmt.Println("fields:", fieldNames(est))
	fmt.Println("selected:", est["selected"], "g:", est["g"], "estimator:", est["estimator"])
	se := est["standard_error"].(float64)
	in := est["interval"].(map[string]any)
	lower, upper := in["lower"].(float64), in["upper"].(float64)
	fmt.Println("standard error positive:", se > 0, "level:", in["level"])
	fmt.Println("interval around the estimate:", lower < est["estimate"].(float64) && est["estimate"].(float64) < upper)
	// Output:
	// status: 200
	// fields: [estimate estimator g interval reliability sample selected standard_error unseen_weight]
	// selected: 2 g: identity estimator: mle
	// standard error positive: true level: 0.9
	// interval around the estimate: true
}

// A release that names a dataset is charged to its privacy budget, in the
// same store operation that keeps the release; one that would overspend is
// refused (409) before anything is sanitized, and charges nothing.
func ExampleNewRouter_datasetBudget() {
	srv := exampleServer()
	defer srv.Close()

	status, _ := call(srv, "POST", "/v1/datasets", `{"name": "queries-2026-11", "epsilon_budget": 1, "delta_budget": 1e-5}`)
	fmt.Println("create dataset:", status)
	release := func(eps string) int {
		status, _ := call(srv, "POST", "/v1/samples", `{"dataset": "queries-2026-11",
			"privacy": {"epsilon": `+eps+`, "delta": 1e-6}, "sampling": {"scheme": "none"},
			"elements": [{"key": "a", "frequency": 170}]}`)
		return status
	}
	fmt.Println("release at epsilon 0.5:", release("0.5"))
	fmt.Println("release at epsilon 0.75:", release("0.75"))

	// Spent is under the dataset's accounting (pld, the default: epsilon
	// composed at the delta budget); spent_basic adds epsilons and deltas.
	// ?epsilon=&delta= also counts the further releases the budget admits.
	_, ds := call(srv, "GET", "/v1/datasets/queries-2026-11?epsilon=0.01&delta=1e-7", "")
	spent, basic := ds["spent"].(map[string]any), ds["spent_basic"].(map[string]any)
	fmt.Printf("accounting %s: spent %.4f %g; adding: %g %g\n", ds["accounting"], spent["epsilon"], spent["delta"], basic["epsilon"], basic["delta"])
	fmt.Println("further releases of (0.01, 1e-7):", ds["admits"].(map[string]any)["releases"], "(adding epsilons: 50)")
	for _, r := range ds["releases"].([]any) {
		r := r.(map[string]any)
		fmt.Println("ledger:", r["kind"], r["mechanism"], r["epsilon"], r["delta"])
	}
	// Output:
	// create dataset: 201
	// release at epsilon 0.5: 201
	// release at epsilon 0.75: 409
	// accounting pld: spent 0.5000 1e-06; adding: 0.5 1e-06
	// further releases of (0.01, 1e-7): 89 (adding epsilons: 50)
	// ledger: sample generic 0.5 1e-06
}

// A POST retried with the same Idempotency-Key (a client that lost the
// answer) gets the first answer again and is charged once; the same key
// with a different request is refused (422, naming the header), and so is a
// charge the budget cannot pay (409, with the numbers).
func ExampleNewRouter_idempotentRetry() {
	srv := exampleServer()
	defer srv.Close()

	call(srv, "POST", "/v1/datasets", `{"name": "beam", "epsilon_budget": 1, "delta_budget": 0}`)
	charge := `{"epsilon": 0.25, "delta": 0, "description": "pwsd-beam run 7"}`
	s1, first := call(srv, "POST", "/v1/datasets/beam/charges", charge, "Idempotency-Key", "run-7")
	s2, again := call(srv, "POST", "/v1/datasets/beam/charges", charge, "Idempotency-Key", "run-7")
	fmt.Println("first:", s1, "retry:", s2, "same charge:", first["ref"] == again["ref"])

	_, ds := call(srv, "GET", "/v1/datasets/beam", "")
	fmt.Println("ledger entries:", len(ds["releases"].([]any)))
	fmt.Println("spent epsilon:", ds["spent"].(map[string]any)["epsilon"])

	s3, p := call(srv, "POST", "/v1/datasets/beam/charges", `{"epsilon": 0.5, "delta": 0}`, "Idempotency-Key", "run-7")
	fmt.Println("same key, other request:", s3, p["errors"].([]any)[0].(map[string]any)["field"])

	// A charge the budget cannot pay says what is left.
	s4, p := call(srv, "POST", "/v1/datasets/beam/charges", `{"epsilon": 1, "delta": 0}`, "Idempotency-Key", "run-8")
	fmt.Println(s4, p["detail"])
	// Output:
	// first: 201 retry: 201 same charge: true
	// ledger entries: 1
	// spent epsilon: 0.25
	// same key, other request: 422 Idempotency-Key
	// 409 the release asks epsilon 1 and delta 0 but dataset "beam" has spent epsilon 0.25 and delta 0 of its budget (1, 0): remaining epsilon 0.75 and delta 0; nothing was released or charged
}

// A pan-private stream keeps only a private state: events are applied in
// batches and never stored; a release is noisy and says its uncertainty,
// and the number of releases is bounded.
func ExampleNewRouter_panPrivateStream() {
	srv := exampleServer()
	defer srv.Close()

	status, st := call(srv, "POST", "/v1/streams", `{"estimator": "density", "algorithm": "dwork",
		"epsilon": 0.5, "universe_size": 10000, "sample_size": 1000, "max_releases": 2}`)
	privacy := st["privacy"].(map[string]any)
	fmt.Println("create:", status, "state epsilon:", privacy["state_epsilon"], "at most:", privacy["max_total_epsilon"])
	id := st["id"].(string)
	status, _ = call(srv, "POST", "/v1/streams/"+id+"/events",
		`{"events": [{"user": "alice"}, {"user": "bob"}, {"user": "alice"}, {"user": "carol"}]}`)
	fmt.Println("events:", status)

	status, rel := call(srv, "POST", "/v1/streams/"+id+"/releases?level=0.9", "")
	fmt.Println("release:", status)
	fmt.Println("release fields:", fieldNames(rel))
	in := rel["interval"].(map[string]any)
	fmt.Println("interval level:", in["level"], "ordered:", in["lower"].(float64) <= in["upper"].(float64))
	fmt.Println("epsilon spent:", rel["epsilon_spent"])
	call(srv, "POST", "/v1/streams/"+id+"/releases", "")
	status, _ = call(srv, "POST", "/v1/streams/"+id+"/releases", "")
	fmt.Println("third release:", status)
	_, st = call(srv, "GET", "/v1/streams/"+id, "")
	fmt.Println("releases:", st["releases"])
	// Output:
	// create: 201 state epsilon: 0.5 at most: 1
	// events: 200
	// release: 200
	// release fields: [bound clamped epsilon_spent estimate interval range standard_error]
	// interval level: 0.9 ordered: true
	// epsilon spent: 0.5
	// third release: 409
	// releases: 2
}

// Bad input is answered with a problem+json naming each bad field as the
// client wrote it, and changes nothing.
func ExampleNewRouter_problem() {
	srv := exampleServer()
	defer srv.Close()

	status, p := call(srv, "POST", "/v1/samples", `{"privacy": {"epsilon": -1, "delta": 1e-6},
		"sampling": {"scheme": "none"}, "elements": [{"key": "a", "frequency": 5}]}`)
	fmt.Println("status:", status, "title:", p["title"])
	for _, e := range p["errors"].([]any) {
		fmt.Println("field:", e.(map[string]any)["field"])
	}
	fmt.Println("has request_id:", p["request_id"] != "")
	_, list := call(srv, "GET", "/v1/samples", "")
	fmt.Println("samples stored:", len(list["items"].([]any)))
	// Output:
	// status: 422 title: Unprocessable Entity
	// field: privacy.epsilon
	// has request_id: true
	// samples stored: 0
}
