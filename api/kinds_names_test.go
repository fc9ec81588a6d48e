package api_test

import (
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// TestUnknownKindNamesTheField: with the names checked by the registry
// alone, an unknown estimator or algorithm is still a 422 naming the field
// as the client wrote it and listing the registry's names, and creates
// nothing.
func TestUnknownKindNamesTheField(t *testing.T) {
	t.Parallel()
	ts := newServer(t, store.NewMemory())
	var kinds []string
	for _, k := range panprivate.Kinds() {
		kinds = append(kinds, string(k.Kind))
	}
	for _, tc := range []struct {
		body, field string
		names       []string
	}{
		{`{"estimator":"densty","epsilon":0.25,"universe_size":100}`, "estimator", kinds},
		{`{"estimator":"density","algorithm":"optbernn","epsilon":0.25,"universe_size":100,"sample_size":10}`, "algorithm", []string{"optbern"}},
	} {
		r := ts.postJSON(t, "/v1/streams", tc.body)
		var p struct {
			Errors []struct {
				Field, Message string
			} `json:"errors"`
		}
		r.json(t, &p)
		if r.status != 422 || len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
			t.Fatalf("%s: %d %s, want a 422 naming %s", tc.body, r.status, r.body, tc.field)
		}
		for _, n := range tc.names {
			if !strings.Contains(p.Errors[0].Message, n) {
				t.Errorf("%s: reason %q does not list %s", tc.body, p.Errors[0].Message, n)
			}
		}
	}
	if r := ts.get(t, "/v1/streams"); !strings.Contains(string(r.body), `"items":[]`) {
		t.Errorf("a refused stream was created: %s", r.body)
	}
}
