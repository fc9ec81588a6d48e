package api_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
)

// TestBadInputIsAPreciseProblem: every malformed or invalid request gets a
// 4xx problem+json naming the field, and never echoes the input.
func TestBadInputIsAPreciseProblem(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	const ok = `"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"}`
	for _, tc := range []struct {
		name   string
		ct     string
		body   string
		status int
		fields []string
	}{
		{"negative epsilon and delta above 1", "application/json",
			`{"privacy":{"epsilon":-1,"delta":2},"sampling":{"scheme":"none"},"elements":[]}`, 422, []string{"privacy.epsilon", "privacy.delta"}},
		{"missing privacy", "application/json", `{"sampling":{"scheme":"none"},"elements":[]}`, 422, []string{"privacy"}},
		{"unknown scheme", "application/json", `{"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"magic"}}`, 422, []string{"sampling.scheme"}},
		{"ppswor without threshold", "application/json", `{"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"ppswor"}}`, 422, []string{"sampling.threshold"}},
		{"custom q decreasing", "application/json", `{"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"custom","probabilities":[0.5,0.4]}}`, 422, []string{"sampling.probabilities[1]"}},
		{"custom q above 1", "application/json", `{"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"custom","probabilities":[0.5,1.4]}}`, 422, []string{"sampling.probabilities[1]"}},
		{"bad release", "application/json", `{` + ok + `,"release":"all"}`, 422, []string{"release"}},
		{"bad method", "application/json", `{` + ok + `,"method":"magic"}`, 422, []string{"method"}},
		{"frequency zero", "application/json", `{` + ok + `,"elements":[{"key":"k","frequency":3},{"key":"SECRETKEY","frequency":0}]}`, 422, []string{"elements[1].frequency"}},
		{"frequency non-integer", "application/json", `{` + ok + `,"elements":[{"key":"SECRETKEY","frequency":2.5}]}`, 422, []string{"elements[0].frequency"}},
		{"empty key", "application/json", `{` + ok + `,"elements":[{"key":"","frequency":2}]}`, 422, []string{"elements[0].key"}},
		{"repeated key", "application/json", `{` + ok + `,"elements":[{"key":"SECRETKEY","frequency":2},{"key":"SECRETKEY","frequency":5}]}`, 422, []string{"elements[1].key"}},
		{"frequency as string", "application/json", `{` + ok + `,"elements":[{"key":"SECRETKEY","frequency":"SECRETVALUE"}]}`, 422, nil},
		{"malformed JSON", "application/json", `{"privacy": SECRETKEY`, 400, nil},
		{"unknown field", "application/json", `{` + ok + `,"elementz":[]}`, 400, []string{"elementz"}},
		{"trailing garbage", "application/json", `{` + ok + `} {"SECRETKEY":1}`, 400, nil},
		{"empty body", "application/json", ``, 400, nil},
		{"wrong media type", "text/plain", `{` + ok + `}`, 415, nil},
		{"ndjson bad header", "application/x-ndjson", `{"privacy":{"epsilon":0,"delta":0.1},"sampling":{"scheme":"none"}}` + "\n", 422, []string{"privacy.epsilon"}},
		{"ndjson bad element line", "application/x-ndjson", `{` + ok + `}` + "\n" + `{"key":"a","frequency":1}` + "\n" + `{"key":"SECRETKEY","frequency":-4}` + "\n", 422, []string{"elements[1].frequency"}},
		{"ndjson malformed line", "application/x-ndjson", `{` + ok + `}` + "\n" + `{"key":SECRETKEY}` + "\n", 400, nil},
		{"ndjson elements in header", "application/x-ndjson", `{` + ok + `,"elements":[]}` + "\n", 400, []string{"elements"}},
		{"bad dataset name", "application/json", `{"dataset":"a b/c",` + ok + `}`, 422, []string{"dataset"}},
		{"unknown dataset", "application/json", `{"dataset":"nope",` + ok + `,"elements":[{"key":"k","frequency":3}]}`, 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/samples", tc.ct, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			p := r.problem(t)
			for _, f := range tc.fields {
				if !slices.Contains(p.fields(), f) {
					t.Errorf("errors name %v, want %s", p.fields(), f)
				}
			}
			if strings.Contains(string(r.body), "SECRET") {
				t.Errorf("the problem echoes request data: %s", r.body)
			}
		})
	}
	// Nothing was stored by any of them: the only way to see samples is by id,
	// so check the logs and the dataset-free store via a fresh GET.
	if r := ts.get(t, "/v1/samples/anything"); r.status != http.StatusNotFound {
		t.Fatalf("GET unknown sample: %d", r.status)
	}
}

// TestLimitsAreEnforced: configured limits answer 413/422 before work.
func TestLimitsAreEnforced(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil, withLimits(func(l *api.Limits) {
		l.MaxBodyBytes = 2048
		l.MaxElements = 3
		l.MaxFrequency = 1000
		l.MaxKeyBytes = 8
		l.MaxLineBytes = 300
	}))
	hdr := `{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"}`
	els := func(n int) string {
		var b []string
		for i := 0; i < n; i++ {
			b = append(b, fmt.Sprintf(`{"key":"k%d","frequency":5}`, i))
		}
		return strings.Join(b, ",")
	}
	for _, tc := range []struct {
		name   string
		ct     string
		body   string
		status int
	}{
		{"body over limit", "application/json", hdr + `,"elements":[` + els(100) + `]}`, 413},
		{"too many elements", "application/json", hdr + `,"elements":[` + els(4) + `]}`, 413},
		{"frequency over limit", "application/json", hdr + `,"elements":[{"key":"a","frequency":1001}]}`, 422},
		{"key over limit", "application/json", hdr + `,"elements":[{"key":"abcdefghi","frequency":1}]}`, 422},
		{"ndjson line over limit", "application/x-ndjson", hdr + "}\n" + `{"key":"` + strings.Repeat("x", 400) + `","frequency":1}` + "\n", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, "/v1/samples", tc.ct, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			r.problem(t)
		})
	}
}

// createSampleID posts a small frequencies sample and returns its id.
func createSampleID(t *testing.T, ts *testServer) string {
	t.Helper()
	r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":0.01},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":100},{"key":"b","frequency":300},{"key":"c","frequency":200}]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("creating a sample: %d %s", r.status, r.body)
	}
	var v struct{ ID string }
	r.json(t, &v)
	return v.ID
}

// TestQueryIsStrict: every GET route refuses unknown and repeated
// single-valued parameters with a 400 naming them, never a 5xx; values that
// are not finite, or results that overflow, are 422s naming the parameter.
func TestQueryIsStrict(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	id := createSampleID(t, ts)
	s := "/v1/samples/" + id
	const tbl = "epsilon=1&delta=0.01"
	for _, tc := range []struct {
		name, path string
		status     int
		field      string
		message    string
	}{
		{"unknown parameter names it and suggests", s + "/estimate?keyprefix=a", 400, "keyprefix", "did you mean key_prefix?"},
		{"repeated single-valued", s + "/estimate?estimator=mle&estimator=unbiased", 400, "estimator", "is given 2 times"},
		{"repeatable key may repeat", s + "/estimate?key=a&key=b", 200, "", ""},
		{"unknown on a table", "/v1/tables/reporting?" + tbl + "&frequency=3", 400, "frequency", "is not a parameter"},
		{"any parameter on a route without any", "/healthz?verbose=1", 400, "verbose", "is not a parameter"},
		{"limit is not a parameter of estimate", s + "/estimate?limit=3", 400, "limit", "is not a parameter"},
		// A parameter a route does not read is refused, not silently ignored
		// (the sample routes used to accept each other's parameters).
		{"estimator is not a parameter of top", s + "/top?estimator=unbiased", 400, "estimator", "is not a parameter"},
		{"level is not a parameter of rank", s + "/rank?key=a&level=0.9", 400, "level", "is not a parameter"},
		{"group_by is not a parameter of quantiles", s + "/quantiles?q=0.5&group_by=prefix", 400, "group_by", "is not a parameter"},
		{"population is not a parameter of estimate", s + "/estimate?population=reported", 400, "population", "is not a parameter"},
		{"level is not a parameter of a sample", s + "?level=0.9", 400, "level", "is not a parameter"},
		{"the planner's sweep range is accepted by the summary", "/v1/plan/summary?" + tbl + "&distribution=zipf&alpha=1&n=50&sweep_from=0.01&sweep_to=0.5", 200, "", ""},
		{"q=NaN", s + "/quantiles?q=NaN", 422, "q[0]", "must be a number in [0, 1]"},
		{"q=Inf", s + "/quantiles?q=0.5&q=Inf", 422, "q[1]", "must be a number in [0, 1]"},
		{"g=power:400 on a sample", s + "/estimate?g=power:400", 422, "g", "out of range"},
		{"g=power:1e308 on a sample", s + "/estimate?g=power:1e308", 422, "g", "out of range"},
		{"g=power:400 on the estimators table", "/v1/tables/estimators?" + tbl + "&g=power:400", 422, "g", "out of range"},
		{"g=power:1e308 on the estimators table", "/v1/tables/estimators?" + tbl + "&g=power:1e308", 422, "g", "out of range"},
		{"epsilon=1e400 is out of range", "/v1/tables/reporting?epsilon=1e400&delta=0.1", 422, "epsilon", "out of range"},
		{"epsilon=NaN", "/v1/tables/reporting?epsilon=NaN&delta=0.1", 422, "epsilon", "finite"},
		{"unknown sample", "/v1/samples/nope/top", 404, "", `sample "nope" does not exist`},
		{"unreported key", s + "/rank?key=zzz", 404, "", `key "zzz" is not in this sample`},
		{"unknown dataset", "/v1/datasets/nope", 404, "", `dataset "nope" does not exist`},
		{"unknown stream", "/v1/streams/nope", 404, "", `stream "nope" does not exist`},
		{"unknown counter", "/v1/counters/nope", 404, "", `counter "nope" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.get(t, tc.path)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status < 400 {
				return
			}
			p := r.problem(t)
			if tc.field != "" && !slices.Contains(p.fields(), tc.field) {
				t.Errorf("errors name %v, want %s", p.fields(), tc.field)
			}
			said := p.Detail
			for _, e := range p.Errors {
				said += "\n" + e.Message
			}
			if !strings.Contains(said, tc.message) {
				t.Errorf("problem %s does not say %q", r.body, tc.message)
			}
			if p.RequestID == "" {
				t.Errorf("problem without request_id: %s", r.body)
			}
		})
	}
	// An unknown dataset named in a POST body is named as such.
	r := ts.postJSON(t, "/v1/samples", `{"dataset":"nope","privacy":{"epsilon":1,"delta":0.01},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`)
	if r.status != 404 || !strings.Contains(r.problem(t).Detail, `dataset "nope" does not exist`) {
		t.Errorf("unknown dataset in the body: %d %s", r.status, r.body)
	}
}

// TestHTTPSemantics: 405 lists Allow, HEAD answers every GET route without
// a body, 401 carries WWW-Authenticate: Bearer, the scheme is matched
// case-insensitively, and the request id in a problem is the one in the log.
func TestHTTPSemantics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens":[{"token":"0123456789abcdef","role":"writer"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := api.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, nil, func(d *api.Deps) { d.Tokens = toks })
	auth := []string{"Authorization", "Bearer 0123456789abcdef"}

	t.Run("405 with Allow", func(t *testing.T) {
		r := ts.do(t, http.MethodPut, "/v1/samples/x", "", "", auth...)
		if r.status != 405 || r.header.Get("Allow") != "GET, HEAD, DELETE" {
			t.Fatalf("status %d Allow %q", r.status, r.header.Get("Allow"))
		}
		if r.problem(t).RequestID == "" {
			t.Errorf("405 without request_id")
		}
		if r := ts.do(t, http.MethodDelete, "/v1/tables/reporting", "", "", auth...); r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("Allow %q on a table", r.header.Get("Allow"))
		}
	})
	t.Run("HEAD on GET routes", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/openapi.json", "/v1/tables/reporting?epsilon=1&delta=0.1"} {
			r := ts.do(t, http.MethodHead, p, "", "", auth...)
			if r.status != 200 || len(r.body) != 0 || r.header.Get("Content-Type") == "" {
				t.Errorf("HEAD %s: %d, %d bytes, Content-Type %q", p, r.status, len(r.body), r.header.Get("Content-Type"))
			}
		}
	})
	t.Run("401 with WWW-Authenticate", func(t *testing.T) {
		for _, h := range [][]string{nil, {"Authorization", "Bearer wrong-token-0000000"}, {"Authorization", "Basic 0123456789abcdef"}} {
			r := ts.do(t, http.MethodGet, "/v1/datasets/x", "", "", h...)
			if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%v: status %d WWW-Authenticate %q", h, r.status, r.header.Get("WWW-Authenticate"))
			}
			if r.problem(t).RequestID == "" {
				t.Errorf("401 without request_id")
			}
		}
	})
	t.Run("scheme is case-insensitive", func(t *testing.T) {
		for _, s := range []string{"bearer", "BEARER", "Bearer"} {
			if r := ts.do(t, http.MethodGet, "/v1/tables/reporting?epsilon=1&delta=0.1", "", "", "Authorization", s+" 0123456789abcdef"); r.status != 200 {
				t.Errorf("%s: status %d", s, r.status)
			}
		}
	})
	t.Run("request_id matches the log", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/samples/none", "", "", auth...)
		p := r.problem(t)
		if p.RequestID == "" || !strings.Contains(ts.logs.String(), `"request_id":"`+p.RequestID+`"`) {
			t.Errorf("request_id %q not in the log", p.RequestID)
		}
	})
}

// TestBodyErrorsNameThePath: body errors name the JSON path exactly as the
// client wrote it (never a Go type name), NDJSON errors add the line,
// integral frequencies written as 5.0 or 1e2 are accepted while strings are
// not, invalid UTF-8 is a 422 naming the element, and out-of-range numbers
// say so.
func TestBodyErrorsNameThePath(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	stream := ts.postJSON(t, "/v1/streams", `{"estimator":"density","epsilon":0.5,"universe_size":100,"sample_size":10}`)
	if stream.status != 201 {
		t.Fatalf("creating a stream: %d %s", stream.status, stream.body)
	}
	events := "/v1/streams/" + strings.TrimPrefix(stream.header.Get("Location"), "/v1/streams/") + "/events"
	const hdr = `"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"none"}`
	nd := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	for _, tc := range []struct {
		name, path, ct, body string
		status               int
		field                string
		line                 int
		msg                  string
	}{
		{"frequency 5.0 and 1e2 accepted", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","frequency":5.0},{"key":"b","frequency":1e2}]}`, 201, "", 0, ""},
		{"frequency as a string refused", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","frequency":3},{"key":"b","frequency":"900"}]}`, 422, "elements[1].frequency", 0, "not a string"},
		{"frequency 2.5", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","frequency":2.5}]}`, 422, "elements[0].frequency", 0, "must be an integer"},
		{"frequency 1e400", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","frequency":1e400}]}`, 422, "elements[0].frequency", 0, "out of range"},
		{"epsilon 1e400", "/v1/samples", "application/json", `{"privacy":{"epsilon":1e400,"delta":0.1},"sampling":{"scheme":"none"}}`, 422, "privacy.epsilon", 0, "out of range"},
		{"epsilon as a string", "/v1/samples", "application/json", `{"privacy":{"epsilon":"0.5","delta":0.1},"sampling":{"scheme":"none"}}`, 422, "privacy.epsilon", 0, "must be number, not a string (write numbers and booleans without quotes)"},
		{"misspelt member suggests", "/v1/samples", "application/json", `{"privacy":{"epsilon":0.5,"delta":0.1},"sampling":{"scheme":"ppswor","threshhold":0.1}}`, 400, "sampling.threshhold", 0, "is not a known field; did you mean threshold?"},
		{"invalid epsilon named without Go types", "/v1/samples", "application/json", `{"privacy":{"epsilon":0,"delta":0.1},"sampling":{"scheme":"none"},"elements":[]}`, 422, "privacy.epsilon", 0, ""},
		{"unknown nested field", "/v1/samples", "application/json", `{"privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"ppswor","threshhold":0.1}}`, 400, "sampling.threshhold", 0, "not a known field"},
		{"unknown element field", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","weight":3}]}`, 400, "elements[0].weight", 0, "not a known field"},
		{"field names are case-sensitive", "/v1/samples", "application/json", `{"Privacy":{"epsilon":1,"delta":0.1},"sampling":{"scheme":"none"}}`, 400, "Privacy", 0, "not a known field"},
		{"duplicate member", "/v1/samples", "application/json", `{` + hdr + `,"elements":[{"key":"a","key":"b","frequency":1}]}`, 400, "elements[0].key", 0, "more than once"},
		{"invalid UTF-8 key", "/v1/samples", "application/json", "{" + hdr + `,"elements":[{"key":"a","frequency":1},{"key":"` + "\xff" + `","frequency":1},{"key":"` + "\xfe" + `","frequency":1}]}`, 422, "elements[1].key", 0, "valid UTF-8"},
		{"ndjson invalid UTF-8 key", "/v1/samples", "application/x-ndjson", nd("{"+hdr+"}", `{"key":"a","frequency":1}`, `{"key":"`+"\xff"+`","frequency":1}`), 422, "elements[1].key", 3, "valid UTF-8"},
		{"ndjson bad frequency has line and index", "/v1/samples", "application/x-ndjson", nd("{"+hdr+"}", `{"key":"a","frequency":1}`, "", `{"key":"b","frequency":0}`), 422, "elements[1].frequency", 4, "at least 1"},
		{"ndjson malformed line has line and index", "/v1/samples", "application/x-ndjson", nd("{"+hdr+"}", `{"key":"a","frequency":1}`, `{"key":}`), 400, "elements[1].key", 3, "not valid JSON"},
		{"ndjson unknown element field", "/v1/samples", "application/x-ndjson", nd("{"+hdr+"}", `{"key":"a","frequency":1,"weight":2}`), 400, "elements[0].weight", 2, "not a known field"},
		{"ndjson header error has line 1", "/v1/samples", "application/x-ndjson", nd(`{"privacy":{"epsilon":-1,"delta":0.1},"sampling":{"scheme":"none"}}`), 422, "privacy.epsilon", 1, ""},
		{"universe_size 1e18", "/v1/streams", "application/json", `{"estimator":"density","epsilon":0.5,"universe_size":1e18}`, 422, "universe_size", 0, "integer >= 0"},
		{"user null", events, "application/json", `{"events":[{"user":1},{"user":null}]}`, 422, "events[1].user", 0, "is required"},
		{"ndjson user null", events, "application/x-ndjson", nd(`{"user":1}`, `{"user":null}`), 422, "events[1].user", 2, "is required"},
		{"empty body", "/v1/samples", "application/json", ``, 400, "(body)", 0, "empty"},
		{"truncated body", "/v1/samples", "application/json", `{"privacy":{"epsilon":1`, 400, "", 0, "truncated"},
		{"trailing data", "/v1/samples", "application/json", `{` + hdr + `} {}`, 400, "(body)", 0, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, tc.path, tc.ct, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status < 400 {
				return
			}
			var p struct {
				Detail string
				Errors []api.FieldError
			}
			r.problem(t)
			r.json(t, &p)
			found := false
			for _, e := range p.Errors {
				if strings.ContainsAny(e.Field[:min(1, len(e.Field))], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && tc.field != "Privacy" {
					t.Errorf("field %q names a Go type", e.Field)
				}
				if (tc.field == "" || e.Field == tc.field) && e.Line == tc.line && strings.Contains(e.Message, tc.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("errors %+v, want field %q line %d saying %q", p.Errors, tc.field, tc.line, tc.msg)
			}
		})
	}
}

// TestStrictQueryIsLoggedByRoute: a 400 for an unknown parameter is logged
// and counted under its route pattern, never the raw query.
func TestStrictQueryIsLoggedByRoute(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	if r := ts.get(t, "/v1/tables/reporting?SECRETPARAM=1"); r.status != 400 {
		t.Fatalf("status %d", r.status)
	}
	logs := ts.logs.String()
	if !strings.Contains(logs, `"route":"/v1/tables/reporting","status":400`) || strings.Contains(logs, "SECRETPARAM") {
		t.Errorf("the 400 is not logged by route pattern alone: %s", logs)
	}
	counted := false
	for _, line := range strings.Split(string(ts.get(t, "/metrics").body), "\n") {
		if strings.HasPrefix(line, "pwsd_http_requests_total") && strings.Contains(line, `route="/v1/tables/reporting"`) && strings.Contains(line, `status="400"`) {
			counted = true
		}
	}
	if !counted {
		t.Errorf("the 400 is not counted under its route")
	}
}

// TestOutOfRangeIntegers: integers beyond their Go type say "out of range"
// with the range, never "must be of type".
func TestOutOfRangeIntegers(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, tc := range []struct{ path, body, field, want string }{
		{"/v1/streams", `{"estimator":"density","epsilon":0.5,"universe_size":100000000000000000000}`, "universe_size", "must be from 0 to 18446744073709551615"},
		{"/v1/counters", `{"epsilon":1,"horizon":99999999999999999999}`, "horizon", "must be from -9223372036854775808 to 9223372036854775807"},
		{"/v1/counters", `{"epsilon":1e999,"horizon":10}`, "epsilon", "out of range"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			r := ts.postJSON(t, tc.path, tc.body)
			var p struct{ Errors []api.FieldError }
			r.problem(t)
			r.json(t, &p)
			if r.status != 422 || len(p.Errors) != 1 || p.Errors[0].Field != tc.field || !strings.Contains(p.Errors[0].Message, tc.want) {
				t.Errorf("%d %s, want 422 naming %s: %s", r.status, r.body, tc.field, tc.want)
			}
		})
	}
}
