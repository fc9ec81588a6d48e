package api_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestStreamAndCounterBoundsAreTheDomains: the numeric bounds of stream and
// counter parameters are checked once, by the panprivate constructors (the
// request DTOs only check presence and enumerations). Every out-of-range
// value still gets a 422 naming the field as the client wrote it, and
// creates nothing.
func TestStreamAndCounterBoundsAreTheDomains(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	const density = `"estimator":"density","epsilon":0.5,"universe_size":100`
	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"stream epsilon zero", "/v1/streams", `{"estimator":"density","epsilon":0,"universe_size":100}`, "epsilon"},
		{"stream epsilon negative", "/v1/streams", `{"estimator":"density","epsilon":-1,"universe_size":100}`, "epsilon"},
		{"universe size zero", "/v1/streams", `{"estimator":"density","epsilon":0.5,"universe_size":0}`, "universe_size"},
		{"sample size negative", "/v1/streams", `{` + density + `,"sample_size":-5}`, "sample_size"},
		{"sample size above universe", "/v1/streams", `{` + density + `,"sample_size":1000}`, "sample_size"},
		{"max releases negative", "/v1/streams", `{` + density + `,"max_releases":-1}`, "max_releases"},
		{"cropped mean t negative", "/v1/streams", `{"estimator":"cropped_mean","epsilon":0.5,"universe_size":100,"t":-2}`, "t"},
		{"heavy hitters k negative", "/v1/streams", `{"estimator":"heavy_hitters","epsilon":0.5,"universe_size":100,"max_occurrences":8,"k":-1}`, "k"},
		{"incidence rho negative", "/v1/streams", `{"estimator":"incidence","epsilon":0.5,"universe_size":100,"rho":-0.5}`, "rho"},
		{"accuracy alpha zero", "/v1/streams", `{"estimator":"density","epsilon":0.5,"universe_size":100000,"accuracy":{"alpha":0,"beta":0.05}}`, "accuracy.alpha"},
		{"accuracy beta one", "/v1/streams", `{"estimator":"density","epsilon":0.5,"universe_size":100000,"accuracy":{"alpha":0.05,"beta":1}}`, "accuracy.beta"},
		{"counter epsilon zero", "/v1/counters", `{"epsilon":0,"horizon":100}`, "epsilon"},
		{"counter horizon zero", "/v1/counters", `{"epsilon":1,"horizon":0}`, "horizon"},
		{"counter horizon negative", "/v1/counters", `{"epsilon":1,"horizon":-3}`, "horizon"},
		{"cascading d negative", "/v1/counters", `{"epsilon":1,"horizon":100,"algorithm":"cascading","d":-1}`, "d"},
		{"cascading l negative", "/v1/counters", `{"epsilon":1,"horizon":100,"algorithm":"cascading","l":-1}`, "l"},
		{"kappa negative", "/v1/counters", `{"epsilon":1,"horizon":100,"algorithm":"cascading","kappa":-1}`, "kappa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, http.MethodPost, tc.path, "application/json", tc.body)
			if r.status != http.StatusUnprocessableEntity {
				t.Fatalf("status %d, want 422: %s", r.status, r.body)
			}
			if p := r.problem(t); !slices.Contains(p.fields(), tc.field) {
				t.Fatalf("problem names %v, want %q: %s", p.fields(), tc.field, r.body)
			}
		})
	}
	for _, path := range []string{"/v1/streams", "/v1/counters"} {
		if ids := ts.listAll(t, path, 10); len(ids) != 0 {
			t.Fatalf("GET %s after refused requests lists %v", path, ids)
		}
	}
}
