package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/store"
)

// noPrivacySample is a sample release with delta = 1, no sampling and the
// discrete method, so every key is reported with its value: the tests can
// compare samples exactly.
func noPrivacySample(dataset string, n int) string { return sampleBody(dataset, n, 1) }

// sampleBody is a release of n keys at (0.25, delta) without sampling.
func sampleBody(dataset string, n int, delta float64) string {
	var els []string
	for i := 1; i <= n; i++ {
		els = append(els, fmt.Sprintf(`{"key":"k%03d","frequency":%d}`, i, i))
	}
	ds := ""
	if dataset != "" {
		ds = `"dataset":"` + dataset + `",`
	}
	return `{` + ds + fmt.Sprintf(`"privacy":{"epsilon":0.25,"delta":%g},"sampling":{"scheme":"none"},"method":"discrete","elements":[`, delta) + strings.Join(els, ",") + `]}`
}

type datasetResp struct {
	Name  string `json:"name"`
	Spent struct {
		Epsilon float64 `json:"epsilon"`
		Delta   float64 `json:"delta"`
	} `json:"spent"`
	Releases []struct {
		Kind string `json:"kind"`
		Ref  string `json:"ref"`
	} `json:"releases"`
}

func (ts *testServer) dataset(t *testing.T, name string) datasetResp {
	t.Helper()
	r := ts.get(t, "/v1/datasets/"+name)
	if r.status != http.StatusOK {
		t.Fatalf("dataset %s: %d %s", name, r.status, r.body)
	}
	var d datasetResp
	r.json(t, &d)
	return d
}

// TestIdempotentRetries: with Idempotency-Key, concurrent and sequential
// duplicates of a charging POST run it exactly once — one ledger entry, one
// sample — and all get the first answer byte for byte (status, Location,
// body); the same key with another body is a 422 that changes nothing; keys
// are per caller. Over both stores.
func TestIdempotentRetries(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"d","epsilon_budget":10,"delta_budget":1}`); r.status != http.StatusCreated {
			t.Fatalf("dataset: %d %s", r.status, r.body)
		}
		body := sampleBody("d", 200, 0.01)
		const n = 8
		res := make([]response, n)
		var wg sync.WaitGroup
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = ts.postJSON(t, "/v1/samples", body, "Idempotency-Key", "retry-1")
			}()
		}
		wg.Wait()
		replayed := 0
		for i, r := range res {
			if r.status != http.StatusCreated || !bytes.Equal(r.body, res[0].body) || r.header.Get("Location") != res[0].header.Get("Location") {
				t.Fatalf("answer %d differs from answer 0: %d %s vs %d %.80s", i, r.status, r.header.Get("Location"), res[0].status, res[0].header.Get("Location"))
			}
			if r.header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		if replayed != n-1 {
			t.Fatalf("%d answers replayed, want %d (exactly one request runs)", replayed, n-1)
		}
		// A later retry gets the same answer too.
		again := ts.postJSON(t, "/v1/samples", body, "Idempotency-Key", "retry-1")
		if again.status != http.StatusCreated || !bytes.Equal(again.body, res[0].body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("sequential retry: %d %s", again.status, again.header)
		}
		// The replay names the request that produced it, not itself.
		firstID := ""
		for _, r := range res {
			if r.header.Get("Idempotent-Replayed") == "" {
				firstID = r.header.Get("X-Request-Id")
			}
		}
		if got := again.header.Get("Idempotent-Original-Request-Id"); got == "" || got != firstID || got == again.header.Get("X-Request-Id") {
			t.Fatalf("replay's Idempotent-Original-Request-Id %q, want the first request's id %q", got, firstID)
		}
		d := ts.dataset(t, "d")
		if len(d.Releases) != 1 || d.Spent.Epsilon != 0.25 {
			t.Fatalf("dataset charged %d times (spent %g), want once", len(d.Releases), d.Spent.Epsilon)
		}
		// Same key, different body: 422 naming the header, nothing charged.
		other := ts.postJSON(t, "/v1/samples", sampleBody("d", 199, 0.01), "Idempotency-Key", "retry-1")
		if other.status != http.StatusUnprocessableEntity || other.problem(t).fields()[0] != "Idempotency-Key" {
			t.Fatalf("reused key with another body: %d %s", other.status, other.body)
		}
		// Same key and body from another caller is another request.
		mine := ts.postJSON(t, "/v1/samples", body, "Idempotency-Key", "retry-1", "Authorization", "Bearer someone-else-entirely")
		if mine.status != http.StatusCreated || mine.header.Get("Idempotent-Replayed") != "" || bytes.Equal(mine.body, res[0].body) {
			t.Fatalf("another caller's key: %d replayed=%q", mine.status, mine.header.Get("Idempotent-Replayed"))
		}
		if d := ts.dataset(t, "d"); len(d.Releases) != 2 {
			t.Fatalf("%d releases, want 2", len(d.Releases))
		}
		// A refused release is an answer too: replayed, never run again.
		small := `{"name":"tiny","epsilon_budget":0.1,"delta_budget":1}`
		if r := ts.postJSON(t, "/v1/datasets", small); r.status != http.StatusCreated {
			t.Fatal(r.status)
		}
		b409 := noPrivacySample("tiny", 3)
		first := ts.postJSON(t, "/v1/samples", b409, "Idempotency-Key", "k409")
		second := ts.postJSON(t, "/v1/samples", b409, "Idempotency-Key", "k409")
		if first.status != http.StatusConflict || second.status != http.StatusConflict || !bytes.Equal(first.body, second.body) || second.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("409 replay: %d %d", first.status, second.status)
		}
		// Bad keys are a 400.
		for _, k := range []string{"", strings.Repeat("x", 256), "has space"} {
			if r := ts.postJSON(t, "/v1/samples", body, "Idempotency-Key", k); r.status != http.StatusBadRequest {
				t.Fatalf("key %q: %d", k, r.status)
			}
		}
		// Stream releases charge too: a retried release is not charged again.
		sr := ts.postJSON(t, "/v1/streams", `{"dataset":"d","estimator":"density","epsilon":0.5,"universe_size":1000,"sample_size":100}`, "Idempotency-Key", "s1")
		var sv struct{ ID string }
		sr.json(t, &sv)
		r1 := ts.postJSON(t, "/v1/streams/"+sv.ID+"/releases", "", "Idempotency-Key", "rel-1")
		r2 := ts.postJSON(t, "/v1/streams/"+sv.ID+"/releases", "", "Idempotency-Key", "rel-1")
		if r1.status != http.StatusOK || !bytes.Equal(r1.body, r2.body) {
			t.Fatalf("release retry: %d %s / %s", r1.status, r1.body, r2.body)
		}
		if d := ts.dataset(t, "d"); len(d.Releases) != 3 {
			t.Fatalf("after a retried stream release %d releases, want 3", len(d.Releases))
		}
		// Deleting the sample redacts its recorded answer: a repeat of the
		// request that created it gets a 409 and is still not run.
		del := ts.do(t, http.MethodDelete, res[0].header.Get("Location"), "", "")
		if del.status != http.StatusNoContent {
			t.Fatalf("delete: %d", del.status)
		}
		gone := ts.postJSON(t, "/v1/samples", body, "Idempotency-Key", "retry-1")
		if gone.status != http.StatusConflict || gone.header.Get("Idempotent-Replayed") != "true" || strings.Contains(string(gone.body), `"elements"`) {
			t.Fatalf("repeat after delete: %d %.200s", gone.status, gone.body)
		}
		// Its 409 was produced by the DELETE: it carries the DELETE's id
		// (it had an empty request_id).
		delID := del.header.Get("X-Request-Id")
		if p := gone.problem(t); delID == "" || p.RequestID != delID || gone.header.Get("Idempotent-Original-Request-Id") != delID {
			t.Fatalf("repeat after delete: request_id %q, Idempotent-Original-Request-Id %q, want the DELETE's %q",
				p.RequestID, gone.header.Get("Idempotent-Original-Request-Id"), delID)
		}
		if d := ts.dataset(t, "d"); len(d.Releases) != 3 {
			t.Fatalf("after a repeat of a deleted sample's request %d releases, want 3", len(d.Releases))
		}
		// Intrusions do not take a key (their answer is never kept).
		if r := ts.postJSON(t, "/v1/streams/"+sv.ID+"/intrusions", "", "Idempotency-Key", "i1"); r.status != http.StatusBadRequest {
			t.Fatalf("intrusion with a key: %d", r.status)
		}
	})
}

// TestBudgetConflictBeforeSanitizing: an overspending release is refused
// before its body is read — an invalid element after the header does not
// turn the 409 into a 422 — and the 409 says requested, spent, remaining.
func TestBudgetConflictBeforeSanitizing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		ts.postJSON(t, "/v1/datasets", `{"name":"b","epsilon_budget":1,"delta_budget":0.001,"accounting":"basic"}`)
		if r := ts.postJSON(t, "/v1/samples", noPrivacySample("", 1)[:1]+`"dataset":"b",`+`"privacy":{"epsilon":0.75,"delta":0.0001},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":3}]}`); r.status != http.StatusCreated {
			t.Fatalf("first release: %d %s", r.status, r.body)
		}
		nd := `{"dataset":"b","privacy":{"epsilon":0.5,"delta":0.0001},"sampling":{"scheme":"none"}}` + "\n" + `{"key":"a","frequency":"not a number"}` + "\n"
		r := ts.do(t, http.MethodPost, "/v1/samples", "application/x-ndjson", nd)
		if r.status != http.StatusConflict {
			t.Fatalf("overspend with a bad element: %d %s, want 409 before the element is read", r.status, r.body)
		}
		p := r.problem(t)
		for _, want := range []string{"asks epsilon 0.5 and delta 0.0001", "spent epsilon 0.75 and delta 0.0001", "remaining epsilon 0.25 and delta 0.0009"} {
			if !strings.Contains(p.Detail, want) {
				t.Errorf("409 detail %q lacks %q", p.Detail, want)
			}
		}
		if d := ts.dataset(t, "b"); len(d.Releases) != 1 {
			t.Fatalf("refused release was charged: %d releases", len(d.Releases))
		}
	})
}

type listResp struct {
	Items []struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Reported *int            `json:"reported"`
		Releases json.RawMessage `json:"releases"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// listAll pages through a listing with limit and returns ids (or names).
func (ts *testServer) listAll(t *testing.T, path string, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := ts.get(t, path+"?"+q.Encode())
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var l listResp
		r.json(t, &l)
		if len(l.Items) > limit {
			t.Fatalf("%d items on a page of %d", len(l.Items), limit)
		}
		for _, it := range l.Items {
			out = append(out, it.ID+it.Name)
		}
		if l.NextCursor == "" {
			return out
		}
		cursor = l.NextCursor
	}
	t.Fatal("listing never ended")
	return nil
}

// TestListAndDelete: each listing pages through every resource exactly once
// for any page size; DELETE is 204 then 404; deleting a sample or stream
// keeps its ledger entries; a foreign or forged cursor is a 422.
func TestListAndDelete(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		ts.postJSON(t, "/v1/datasets", `{"name":"d","epsilon_budget":100,"delta_budget":1}`)
		ts.postJSON(t, "/v1/datasets", `{"name":"e","epsilon_budget":1,"delta_budget":1}`)
		var samples, streams, counters []string
		for i := 0; i < 5; i++ {
			var v struct{ ID string }
			ts.postJSON(t, "/v1/samples", sampleBody("d", 3, 0.01)).json(t, &v)
			samples = append(samples, v.ID)
			ts.postJSON(t, "/v1/streams", `{"dataset":"d","estimator":"density","epsilon":0.25,"universe_size":100,"sample_size":10,"continual":true,"horizon":10}`).json(t, &v)
			streams = append(streams, v.ID)
			ts.postJSON(t, "/v1/counters", `{"epsilon":1,"horizon":100}`).json(t, &v)
			counters = append(counters, v.ID)
		}
		sorted := func(x []string) string { y := append([]string(nil), x...); sort.Strings(y); return fmt.Sprint(y) }
		for _, tc := range []struct {
			path string
			want []string
		}{{"/v1/samples", samples}, {"/v1/streams", streams}, {"/v1/counters", counters}, {"/v1/datasets", []string{"d", "e"}}} {
			for _, limit := range []int{1, 2, 5, 1000} {
				got := ts.listAll(t, tc.path, limit)
				if sorted(got) != sorted(tc.want) || len(got) != len(tc.want) {
					t.Fatalf("%s limit %d: %v, want %v", tc.path, limit, got, tc.want)
				}
			}
		}
		var l listResp
		ts.get(t, "/v1/datasets").json(t, &l)
		var ledger []any
		_ = json.Unmarshal(l.Items[0].Releases, &ledger)
		if len(ledger) != 10 { // 5 samples and 5 continual streams
			t.Fatalf("dataset d lists %d releases, want 10", len(ledger))
		}
		ts.get(t, "/v1/samples?limit=1").json(t, &l)
		if l.Items[0].Reported == nil || *l.Items[0].Reported > 3 {
			t.Fatalf("sample listing lacks reported: %+v", l.Items[0])
		}
		for _, tc := range []struct{ kind, id string }{{"samples", samples[2]}, {"streams", streams[1]}, {"counters", counters[0]}} {
			p := "/v1/" + tc.kind + "/" + tc.id
			if r := ts.do(t, http.MethodDelete, p, "", ""); r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Fatalf("DELETE %s: %d %s", p, r.status, r.body)
			}
			if r := ts.do(t, http.MethodDelete, p, "", ""); r.status != http.StatusNotFound {
				t.Fatalf("second DELETE %s: %d", p, r.status)
			}
			if r := ts.get(t, p); r.status != http.StatusNotFound {
				t.Fatalf("GET deleted %s: %d", p, r.status)
			}
			if got := ts.listAll(t, "/v1/"+tc.kind, 2); len(got) != 4 {
				t.Fatalf("%s after a delete: %d listed", tc.kind, len(got))
			}
		}
		if d := ts.dataset(t, "d"); len(d.Releases) != 10 {
			t.Fatalf("ledger after deletes holds %d releases, want 10 (never deleted)", len(d.Releases))
		}
		// Cursors are tied to their listing, and limits are bounded.
		ts.get(t, "/v1/samples?limit=1").json(t, &l)
		for _, q := range []string{"/v1/streams?cursor=" + l.NextCursor, "/v1/samples?cursor=garbage", "/v1/samples?limit=0", "/v1/samples?limit=1001"} {
			if r := ts.get(t, q); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("GET %s: %d, want 422", q, r.status)
			}
		}
	})
}

// TestSampleElementsPagedAndCSV: pages of elements concatenate to the whole
// sample; a CSV upload equals the same JSON upload (delta = 1: every key
// reported with its exact value), and the CSV answer holds the same rows as
// the JSON one; CSV errors name the query parameter or line.
func TestSampleElementsPagedAndCSV(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	var full sampleResp
	r := ts.postJSON(t, "/v1/samples", noPrivacySample("", 250))
	r.json(t, &full)
	var paged []string
	cursor := ""
	for {
		p := "/v1/samples/" + full.ID + "?limit=60"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		var page struct {
			sampleResp
			NextCursor string `json:"next_cursor"`
		}
		ts.get(t, p).json(t, &page)
		for _, e := range page.Elements {
			paged = append(paged, e.Key)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	var all []string
	for _, e := range full.Elements {
		all = append(all, e.Key)
	}
	if fmt.Sprint(paged) != fmt.Sprint(all) || len(all) != 250 {
		t.Fatalf("pages hold %d keys, the sample %d", len(paged), len(all))
	}
	if r := ts.get(t, "/v1/samples/"+full.ID+"?limit=5", "Accept", "application/x-ndjson"); r.status != http.StatusBadRequest {
		t.Fatalf("paged NDJSON: %d", r.status)
	}

	var rows strings.Builder
	rows.WriteString("frequency,key\n")
	for i := 1; i <= 250; i++ {
		fmt.Fprintf(&rows, "%d,k%03d\n", i, i)
	}
	q := "?epsilon=0.25&delta=1&scheme=none&method=discrete"
	c := ts.do(t, http.MethodPost, "/v1/samples"+q, "text/csv", rows.String())
	if c.status != http.StatusCreated {
		t.Fatalf("CSV upload: %d %s", c.status, c.body)
	}
	var fromCSV sampleResp
	c.json(t, &fromCSV)
	values := func(s sampleResp) map[string]float64 {
		m := map[string]float64{}
		for _, e := range s.Elements {
			m[e.Key] = *e.Value
		}
		return m
	}
	if fmt.Sprint(values(fromCSV)) != fmt.Sprint(values(full)) {
		t.Fatal("CSV upload and JSON upload of the same sample differ")
	}
	out := ts.get(t, "/v1/samples/"+fromCSV.ID, "Accept", "text/csv")
	if !strings.HasPrefix(out.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV answer Content-Type %q", out.header.Get("Content-Type"))
	}
	recs, err := csv.NewReader(bytes.NewReader(out.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recs[0]) != "[key value frequency contribution]" || len(recs) != 251 {
		t.Fatalf("CSV answer: header %v, %d rows", recs[0], len(recs)-1)
	}
	for i, rec := range recs[1:] {
		e := fromCSV.Elements[i]
		if rec[0] != e.Key || rec[1] != fmt.Sprint(*e.Value) || rec[2] != fmt.Sprint(*e.Frequency) || rec[3] != fmt.Sprint(*e.Contribution) {
			t.Fatalf("CSV row %d %v differs from JSON %s %g %g %g", i, rec, e.Key, *e.Value, *e.Frequency, *e.Contribution)
		}
	}
	for _, tc := range []struct {
		query, body string
		status      int
		field       string
	}{
		{"?delta=1&scheme=none", "key,frequency\na,1\n", 422, "epsilon"},
		{"?epsilon=x&delta=1&scheme=none", "key,frequency\na,1\n", 422, "epsilon"},
		{q, "key,weight\na,1\n", 400, ""},
		{q, ",key,frequency\n0,a,1\n", 400, ""},
		{q, "key,frequency\na,1\nb,0\n", 422, "elements[1].frequency"},
		{q, "key,frequency\na,1\nb\n", 400, ""},
		{q, "", 400, ""},
	} {
		r := ts.do(t, http.MethodPost, "/v1/samples"+tc.query, "text/csv", tc.body)
		if r.status != tc.status {
			t.Fatalf("CSV %s %q: %d %s, want %d", tc.query, tc.body, r.status, r.body, tc.status)
		}
		if p := r.problem(t); tc.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tc.field) {
			t.Fatalf("CSV %s %q: fields %v, want %s", tc.query, tc.body, p.fields(), tc.field)
		}
	}
	if r := ts.postJSON(t, "/v1/samples?epsilon=1", noPrivacySample("", 2)); r.status != http.StatusBadRequest {
		t.Fatalf("CSV parameters on a JSON upload: %d", r.status)
	}
}

// TestIdempotencyKeepsNoServerErrors: an answer with a 5xx status (here a
// request past PWSD_REQUEST_TIMEOUT, which stores nothing) is not kept, so a
// retry with the same key runs again instead of replaying the failure.
func TestIdempotencyKeepsNoServerErrors(t *testing.T) {
	t.Parallel()
	st := store.NewMemory()
	ts := newServer(t, st, withLimits(func(l *api.Limits) { l.RequestTimeout = time.Nanosecond }))
	for i := 0; i < 2; i++ {
		r := ts.postJSON(t, "/v1/samples", noPrivacySample("", 3), "Idempotency-Key", "k5xx")
		if r.status != http.StatusServiceUnavailable || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("attempt %d: %d replayed=%q, want a fresh 503", i, r.status, r.header.Get("Idempotent-Replayed"))
		}
	}
	n, err := st.PurgeExpired(context.Background(), time.Now().Add(1000*time.Hour))
	if err != nil || n.IdempotencyKeys != 0 {
		t.Fatalf("%d idempotency keys kept after server errors (%v), want 0", n.IdempotencyKeys, err)
	}
}
