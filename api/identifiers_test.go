package api_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// unsafeIDs are path segments no identifier may be (issue 25, defect 1):
// invalid UTF-8, NUL, an overlong NUL, a UTF-16 surrogate, a C1 control and
// an id past checks.MaxIdentifierBytes.
var unsafeIDs = []string{"%FF", "%00", "a%00b", "%C0%80", "%ED%A0%80", "%C2%85", "x%7F", strings.Repeat("a", 129)}

// idRoutes are the routes that name a resource in their path, with a body
// for the POSTs (which must not be read).
var idRoutes = []struct{ method, path, body string }{
	{"GET", "/v1/samples/ID", ""},
	{"DELETE", "/v1/samples/ID", ""},
	{"GET", "/v1/samples/ID/estimate", ""},
	{"GET", "/v1/samples/ID/top", ""},
	{"GET", "/v1/samples/ID/rank?key=a", ""},
	{"GET", "/v1/samples/ID/quantiles?q=0.5", ""},
	{"GET", "/v1/streams/ID", ""},
	{"DELETE", "/v1/streams/ID", ""},
	{"POST", "/v1/streams/ID/events", `{"events":[{"user":1}]}`},
	{"POST", "/v1/streams/ID/releases", ""},
	{"POST", "/v1/streams/ID/intrusions", ""},
	{"GET", "/v1/counters/ID", ""},
	{"DELETE", "/v1/counters/ID", ""},
	{"POST", "/v1/counters/ID/steps", `{"bits":[1]}`},
	{"GET", "/v1/datasets/ID", ""},
	{"POST", "/v1/datasets/ID/charges", `{"epsilon":0.1,"delta":0}`},
}

// TestUnsafeIdentifiers: an unsafe path id or cursor is answered 404 (ids)
// or 422 naming cursor (cursors) on every route and both stores, never a
// 500, and never logged. On PostgreSQL the old code answered 500
// (SQLSTATE 22021) for %FF, %00, a%00b and %C0%80 on every route and for a
// cursor holding NUL on every listing; the memory store listed a page for
// such a cursor.
func TestUnsafeIdentifiers(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newRawServer(t, st)
		for _, rt := range idRoutes {
			for _, id := range unsafeIDs {
				path := strings.Replace(rt.path, "ID", id, 1)
				ct := ""
				if rt.body != "" {
					ct = "application/json"
				}
				r := ts.do(t, rt.method, path, ct, rt.body)
				if r.status != http.StatusNotFound {
					t.Errorf("%s %s: %d, want 404: %s", rt.method, path, r.status, r.body)
					continue
				}
				r.problem(t)
			}
		}
		// Cursors: each listing's own kind with an unsafe id, a foreign
		// alphabet and an oversized cursor; and the elements cursor.
		if r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"},"release":"keys","elements":[{"key":"a","frequency":5}]}`); r.status != 201 {
			t.Fatalf("sample: %d %s", r.status, r.body)
		}
		var list struct {
			Items []struct{ ID string } `json:"items"`
		}
		ts.get(t, "/v1/samples").json(t, &list)
		sampleID := list.Items[0].ID
		cur := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		for _, tc := range []struct{ path, kind string }{
			{"/v1/samples", "s"}, {"/v1/datasets", "d"}, {"/v1/streams", "t"}, {"/v1/counters", "c"}, {"/v1/samples/" + sampleID, "e"},
		} {
			for _, c := range []string{cur(tc.kind + ".1.\x00"), cur(tc.kind + ".1.a\x00b"), cur(tc.kind + ".1.\xff"), cur(tc.kind + ".1." + strings.Repeat("a", 200)), "%FF", "a%00", "a.b", strings.Repeat("A", 5000)} {
				r := ts.get(t, tc.path+"?cursor="+c)
				if r.status != http.StatusUnprocessableEntity {
					t.Errorf("%s?cursor=%.40s: %d, want 422: %.300s", tc.path, c, r.status, r.body)
					continue
				}
				if p := r.problem(t); len(p.fields()) != 1 || p.fields()[0] != "cursor" {
					t.Errorf("%s: problem names %v, want cursor", tc.path, p.fields())
				}
			}
		}
		// Text the database cannot hold inside a body (jsonb refuses
		// \u0000, SQLSTATE 22P05; the old code answered 500 on
		// PostgreSQL and 201 in memory) is a 422 naming the field.
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"ok","epsilon_budget":1,"delta_budget":0}`); r.status != 201 {
			t.Fatalf("dataset: %d %s", r.status, r.body)
		}
		wantField(t, ts.postJSON(t, "/v1/datasets/ok/charges", `{"epsilon":0.1,"delta":0,"description":"a\u0000b"}`), http.StatusUnprocessableEntity, "description")
		// The driver's errors say "(SQLSTATE 22021)"; the bare code would
		// also match the nanoseconds of a log line's time (it did:
		// "03:40:36.022021217Z").
		logs := ts.logs.String()
		for _, bad := range []string{`\u0000`, `\ufffd`, "\xff", `"level":"ERROR"`, "SQLSTATE", "invalid byte sequence"} {
			if strings.Contains(logs, bad) {
				t.Fatalf("the log carries %q:\n%s", bad, logs)
			}
		}
	})
}
