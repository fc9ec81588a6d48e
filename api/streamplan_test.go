package api_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestStreamPlanRoutes: GET /v1/plan/streams answers the three algorithms
// with their sample size, theorem, predicted and simulated MSE and a
// recommendation, the same for the same seed; GET /v1/plots/streams answers
// an SVG on both axes; every invalid parameter is a 422 naming it.
func TestStreamPlanRoutes(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	const q = "universe_size=20000&epsilon=0.5&alpha=0.1&beta=0.05&density=0.3&reps=20&seed=4"
	var first []byte
	for range 2 {
		r := ts.get(t, "/v1/plan/streams?"+q)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if first != nil && string(r.body) != string(first) {
			t.Fatalf("the same seed gave two answers:\n%s\n%s", first, r.body)
		}
		first = r.body
	}
	var res struct {
		Recommended string `json:"recommended"`
		Reason      string `json:"reason"`
		Reps        int    `json:"reps"`
		Algorithms  []struct {
			Algorithm    string  `json:"algorithm"`
			SampleSize   int     `json:"sample_size"`
			MeetsBound   bool    `json:"meets_bound"`
			TheoremMSE   float64 `json:"theorem_mse"`
			PredictedMSE float64 `json:"predicted_mse"`
			Simulated    *struct {
				MSE float64 `json:"mse"`
			} `json:"simulated"`
		} `json:"algorithms"`
	}
	if err := json.Unmarshal(first, &res); err != nil {
		t.Fatal(err)
	}
	var algs []string
	for _, a := range res.Algorithms {
		algs = append(algs, a.Algorithm)
		if a.SampleSize < 1 || !a.MeetsBound || !(a.PredictedMSE > 0) || !(a.TheoremMSE > 0) || a.Simulated == nil || !(a.Simulated.MSE > 0) {
			t.Errorf("%+v", a)
		}
	}
	if !slices.Equal(algs, []string{"dwork", "optbern", "ppds"}) || res.Reps != 20 || !slices.Contains(algs, res.Recommended) || res.Reason == "" {
		t.Fatalf("answer %s", first)
	}
	// Without simulation (reps=0) there is no simulated field.
	if r := ts.get(t, "/v1/plan/streams?universe_size=1000&epsilon=0.5&alpha=0.1&beta=0.05&reps=0"); r.status != 200 || strings.Contains(string(r.body), `"simulated"`) {
		t.Fatalf("reps=0: %d %s", r.status, r.body)
	}
	for _, x := range []string{"", "&x=epsilon", "&x=sample_size"} {
		r := ts.get(t, "/v1/plots/streams?"+q+x)
		if r.status != 200 || r.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(r.body), "ppds (predicted)") {
			t.Fatalf("plot %q: %d %.300s", x, r.status, r.body)
		}
	}
	for _, c := range []struct {
		route, query string
		fields       []string
	}{
		{"/v1/plan/streams", "", []string{"universe_size", "epsilon", "alpha", "beta"}},
		{"/v1/plan/streams", "universe_size=1000&epsilon=0.7&alpha=1&beta=0.05", []string{"epsilon", "alpha"}},
		{"/v1/plan/streams", "universe_size=-3&epsilon=0.5&alpha=0.1&beta=0.05", []string{"universe_size"}},
		{"/v1/plan/streams", "universe_size=1000&epsilon=x&alpha=0.1&beta=0.05&density=2", []string{"epsilon"}},
		{"/v1/plan/streams", "universe_size=1000&epsilon=0.5&alpha=0.1&beta=0.05&density=2&release_noise=loud", []string{"density", "release_noise"}},
		{"/v1/plan/streams", "universe_size=1000&epsilon=0.5&alpha=0.1&beta=0.05&sample_size=1001", []string{"sample_size"}},
		{"/v1/plan/streams", "universe_size=1000000&epsilon=0.5&alpha=0.1&beta=0.05&reps=1000", []string{"reps"}},
		{"/v1/plan/streams", "universe_size=1000&epsilon=0.5&alpha=0.1&beta=0.05&reps=-1", []string{"reps"}},
		{"/v1/plots/streams", "universe_size=1000&epsilon=0.5&alpha=0.1&beta=0.05&x=time", []string{"x"}},
		{"/v1/plots/streams", "universe_size=0&epsilon=0.5&alpha=0.1&beta=0.05", []string{"universe_size"}},
	} {
		r := ts.get(t, c.route+"?"+c.query)
		if r.status != 422 {
			t.Fatalf("%s?%s: %d %s", c.route, c.query, r.status, r.body)
		}
		if got := r.problem(t).fields(); !slices.Equal(got, c.fields) {
			t.Errorf("%s?%s: fields %v, want %v", c.route, c.query, got, c.fields)
		}
	}
}
