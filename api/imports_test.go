package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/store"
)

// importRelease is a release in the pipeline's shapes: its header line (as
// a map, to be edited per case) and its element lines.
type importRelease struct {
	header   map[string]any
	elements []map[string]any
}

func (r importRelease) body(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, v := range append([]map[string]any{r.header}, r.elements...) {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// clone deep-copies r so a case can edit it.
func (r importRelease) clone(t *testing.T) importRelease {
	t.Helper()
	var c importRelease
	b, _ := json.Marshal([]any{r.header, r.elements})
	var parts [2]json.RawMessage
	if err := json.Unmarshal(b, &parts); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(parts[0], &c.header); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(parts[1], &c.elements); err != nil {
		t.Fatal(err)
	}
	return c
}

// sanitizedRelease sanitizes elements through POST /v1/samples (no
// dataset) and returns the sample's id and its NDJSON answer as the
// pipeline would write it: the header line in the pipeline's shape
// (SampleMeta + privacy_unit, shards, charge_ref) and the element lines.
func sanitizedRelease(t *testing.T, ts *testServer, header, elements string, chargeRef string) (string, importRelease) {
	t.Helper()
	r := ts.do(t, http.MethodPost, "/v1/samples", "application/x-ndjson", header+"\n"+elements, "Accept", "application/x-ndjson")
	if r.status != 201 {
		t.Fatalf("sanitizing: %d %s", r.status, r.body)
	}
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	var rel importRelease
	if err := json.Unmarshal([]byte(lines[0]), &rel.header); err != nil {
		t.Fatal(err)
	}
	id := rel.header["id"].(string)
	p := rel.header["privacy"].(map[string]any)
	rel.header["dataset"] = "logs"
	rel.header["privacy_unit"] = map[string]any{"record": "one record adds 1 to its key's frequency", "max_weight": 1,
		"table_epsilon": p["epsilon"], "table_delta": p["delta"]}
	rel.header["shards"] = 2
	rel.header["charge_ref"] = chargeRef
	for _, l := range lines[1:] {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		rel.elements = append(rel.elements, e)
	}
	return id, rel
}

func charge(t *testing.T, ts *testServer, eps, delta float64) string {
	t.Helper()
	var c struct {
		Ref string `json:"ref"`
	}
	r := ts.postJSON(t, "/v1/datasets/logs/charges", fmt.Sprintf(`{"epsilon":%g,"delta":%g,"description":"pwsd-beam run"}`, eps, delta))
	if r.status != 201 {
		t.Fatalf("charge: %d %s", r.status, r.body)
	}
	r.json(t, &c)
	return c.Ref
}

// TestImportSample: POST /v1/samples:import stores a pipeline release as a
// sample, against both stores. The release here is one pwsd sanitized
// (its NDJSON answer in the pipeline's header shape), so the oracle is
// exact: the imported sample's elements and its estimate equal the
// original's. Each malformed release, or one not tied to an unused charge
// of the same (epsilon, delta), is a 4xx naming the field, stores nothing
// and leaves the charge usable: the valid import that follows succeeds;
// a second import of the same charge is a 409.
func TestImportSample(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		if r := ts.postJSON(t, "/v1/datasets", `{"name":"logs","epsilon_budget":10,"delta_budget":1e-2}`); r.status != 201 {
			t.Fatalf("dataset: %d %s", r.status, r.body)
		}
		var els strings.Builder
		for k := 1; k <= 300; k++ {
			fmt.Fprintf(&els, "{\"key\":\"k%d\",\"frequency\":%d}\n", k, 1+k%40)
		}
		ref := charge(t, ts, 1, 1e-3)
		otherEps := charge(t, ts, 0.5, 1e-3)
		origID, rel := sanitizedRelease(t, ts, `{"privacy":{"epsilon":1,"delta":0.001},"sampling":{"scheme":"none"}}`, els.String(), ref)
		if len(rel.elements) < 10 {
			t.Fatalf("only %d elements reported", len(rel.elements))
		}
		keyRef := charge(t, ts, 1, 1e-3)
		_, keysRel := sanitizedRelease(t, ts, `{"privacy":{"epsilon":1,"delta":0.001},"sampling":{"scheme":"none"},"release":"keys"}`, els.String(), keyRef)

		edit := func(f func(r *importRelease)) string {
			c := rel.clone(t)
			f(&c)
			return c.body(t)
		}
		cases := []struct {
			name, contentType, body string
			status                  int
			field                   string
		}{
			{"not ndjson", "application/json", rel.body(t), 415, ""},
			{"empty", "application/x-ndjson", "", 400, ""},
			{"no charge ref", "", edit(func(r *importRelease) { delete(r.header, "charge_ref") }), 422, "charge_ref"},
			{"unknown charge ref", "", edit(func(r *importRelease) { r.header["charge_ref"] = "0123456789abcdef0123456789abcdef" }), 422, "charge_ref"},
			{"charge of another epsilon", "", edit(func(r *importRelease) { r.header["charge_ref"] = otherEps }), 422, "charge_ref"},
			{"unknown dataset", "", edit(func(r *importRelease) { r.header["dataset"] = "nope" }), 404, ""},
			{"no dataset", "", edit(func(r *importRelease) { delete(r.header, "dataset") }), 422, "dataset"},
			{"weighted release", "", edit(func(r *importRelease) { r.header["privacy_unit"].(map[string]any)["max_weight"] = 3 }), 422, "privacy_unit.max_weight"},
			{"table at other parameters", "", edit(func(r *importRelease) { r.header["privacy_unit"].(map[string]any)["table_epsilon"] = 0.3 }), 422, "privacy_unit.table_epsilon"},
			{"reported count wrong", "", edit(func(r *importRelease) { r.header["reported"] = len(r.elements) + 1 }), 422, "reported"},
			{"raw frequency", "", edit(func(r *importRelease) { r.elements[3]["frequency"] = r.elements[3]["frequency"].(float64) + 1 }), 422, "elements[3].frequency"},
			{"contribution changed", "", edit(func(r *importRelease) { r.elements[2]["contribution"] = 1.0 }), 422, "elements[2].contribution"},
			{"value missing", "", edit(func(r *importRelease) { delete(r.elements[1], "value") }), 422, "elements[1].value"},
			{"value zero", "", edit(func(r *importRelease) { r.elements[0]["value"] = 0 }), 422, "elements[0].value"},
			{"value negative", "", edit(func(r *importRelease) { r.elements[0]["value"] = -2.5 }), 422, "elements[0].value"},
			{"repeated key", "", edit(func(r *importRelease) { r.elements[4]["key"] = r.elements[0]["key"] }), 422, "elements[4].key"},
			{"empty key", "", edit(func(r *importRelease) { r.elements[5]["key"] = "" }), 422, "elements[5].key"},
			{"unknown element member", "", edit(func(r *importRelease) { r.elements[0]["raw_frequency"] = 12 }), 400, "elements[0].raw_frequency"},
			{"discrete release with non-integer tokens", "", edit(func(r *importRelease) {
				r.header["method"] = "discrete"
				for _, e := range r.elements {
					delete(e, "frequency")
					delete(e, "contribution")
				}
			}), 422, "elements[0].value"},
			{"value in a keys release", "", func() string {
				c := keysRel.clone(t)
				c.elements[0]["value"] = 3.5
				return c.body(t)
			}(), 422, "elements[0].value"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ct := c.contentType
				if ct == "" {
					ct = "application/x-ndjson"
				}
				r := ts.do(t, http.MethodPost, "/v1/samples:import", ct, c.body)
				if r.status != c.status {
					t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
				}
				if p := r.problem(t); c.field != "" && !slices.Contains(p.fields(), c.field) {
					t.Fatalf("problem names %v, want %q: %s", p.fields(), c.field, r.body)
				}
			})
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		ts.get(t, "/v1/samples").json(t, &list)
		if len(list.Items) != 2 {
			t.Fatalf("%d samples after the refused imports, want the 2 sanitized ones", len(list.Items))
		}

		// The valid import: stored, and answering as the original.
		r := ts.do(t, http.MethodPost, "/v1/samples:import", "application/x-ndjson", rel.body(t))
		if r.status != 201 {
			t.Fatalf("import: %d %s", r.status, r.body)
		}
		var got api.SampleView
		r.json(t, &got)
		if got.Dataset != "logs" || got.Reported != len(rel.elements) || r.header.Get("Location") != "/v1/samples/"+got.ID || got.ID == origID {
			t.Fatalf("imported sample %+v, Location %q", got.SampleMeta, r.header.Get("Location"))
		}
		for _, q := range []string{"/estimate", "/estimate?g=count&estimator=biased_down", "/top?k=5", "/quantiles?q=0.5"} {
			a, b := ts.get(t, "/v1/samples/"+origID+q), ts.get(t, "/v1/samples/"+got.ID+q)
			if a.status != 200 || b.status != 200 || string(stripIDs(t, a.body)) != string(stripIDs(t, b.body)) {
				t.Fatalf("%s: original %d %s, imported %d %s", q, a.status, a.body, b.status, b.body)
			}
		}
		// The charge is spent on this release: a second import is refused,
		// and the ledger holds no new charge.
		if r := ts.do(t, http.MethodPost, "/v1/samples:import", "application/x-ndjson", rel.body(t)); r.status != 409 {
			t.Fatalf("second import of the charge: %d %s", r.status, r.body)
		}
		var dv struct {
			Releases []json.RawMessage `json:"releases"`
		}
		ts.get(t, "/v1/datasets/logs").json(t, &dv)
		if len(dv.Releases) != 3 {
			t.Fatalf("ledger holds %d releases, want the 3 charges", len(dv.Releases))
		}
		// A keys release imports too.
		if r := ts.do(t, http.MethodPost, "/v1/samples:import", "application/x-ndjson", keysRel.body(t)); r.status != 201 {
			t.Fatalf("keys import: %d %s", r.status, r.body)
		}
	})
}

// stripIDs removes the members that name a sample (id, sample, sample_id) from a
// JSON answer, so that answers about two samples compare.
func stripIDs(t *testing.T, b []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	delete(v, "id")
	delete(v, "sample_id")
	delete(v, "sample")
	out, _ := json.Marshal(v)
	return out
}

// writerReaderTokens loads a tokens file with writer-token-0123456789 (a
// writer) and reader-token-0123456789 (a reader).
func writerReaderTokens(t *testing.T) *api.Tokens {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(f, []byte(`{"tokens":[{"token":"writer-token-0123456789","role":"writer"},{"token":"reader-token-0123456789","role":"reader"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := api.LoadTokens(f)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestImportNeedsWriter: with tokens, a reader token cannot import (403)
// and nothing is stored.
func TestImportNeedsWriter(t *testing.T) {
	t.Parallel()
	tokens := writerReaderTokens(t)
	ts := newServer(t, nil, func(d *api.Deps) { d.Tokens = tokens })
	body := `{"dataset":"logs","privacy":{"epsilon":1,"delta":0.001},"sampling":{"scheme":"none"},"release":"keys","method":"max_separation","reported":0,"privacy_unit":{"max_weight":1,"table_epsilon":1,"table_delta":0.001},"charge_ref":"x"}` + "\n"
	for _, tc := range []struct {
		token  string
		status int
	}{{"", 401}, {"Bearer reader-token-0123456789", 403}} {
		r := ts.do(t, http.MethodPost, "/v1/samples:import", "application/x-ndjson", body, "Authorization", tc.token)
		if r.status != tc.status {
			t.Fatalf("token %q: %d, want %d: %s", tc.token, r.status, tc.status, r.body)
		}
	}
	r := ts.get(t, "/v1/samples", "Authorization", "Bearer writer-token-0123456789")
	if r.status != 200 || strings.Contains(string(r.body), `"id"`) {
		t.Fatalf("samples after refused imports: %d %s", r.status, r.body)
	}
}
