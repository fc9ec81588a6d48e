package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// TestPrebuild: POST /v1/tables/prebuild builds a parameter set's chunks
// once (a second call builds none), and refuses bad input with a 422
// naming the field, on the contract-checked server.
func TestPrebuild(t *testing.T) {
	t.Parallel()
	ts := newServer(t, store.NewMemory())
	body := `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-5},"method":"discrete","max_frequency":5000}`
	var first, second struct {
		ChunkSize int64 `json:"chunk_size"`
		Chunks    int64 `json:"chunks"`
		Built     int64 `json:"built"`
	}
	r := ts.postJSON(t, "/v1/tables/prebuild", body)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	r.json(t, &first)
	if first.Chunks < 1 || first.Built != first.Chunks {
		t.Errorf("first prebuild %+v: want every chunk built", first)
	}
	ts.postJSON(t, "/v1/tables/prebuild", body).json(t, &second)
	if second.Built != 0 || second.Chunks != first.Chunks {
		t.Errorf("second prebuild %+v: want nothing built", second)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-5},"max_frequency":0}`, "max_frequency"},
		{`{"privacy":{"epsilon":-1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-5},"max_frequency":10}`, "privacy.epsilon"},
		{`{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-5},"max_frequency":99999999999}`, "max_frequency"},
	} {
		r := ts.postJSON(t, "/v1/tables/prebuild", tc.body)
		if r.status != http.StatusUnprocessableEntity || !slices.Contains(r.problem(t).fields(), tc.field) {
			t.Errorf("%s: status %d %s, want 422 naming %s", tc.body, r.status, r.body, tc.field)
		}
	}
}
