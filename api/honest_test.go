package api_test

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

type estimateResp struct {
	Selected      int     `json:"selected"`
	Estimate      float64 `json:"estimate"`
	StandardError float64 `json:"standard_error"`
	Interval      struct {
		Level, Lower, Upper float64
	} `json:"interval"`
	Reliability struct {
		Reliable      bool   `json:"reliable"`
		SupportedFrom int64  `json:"supported_from"`
		Note          string `json:"note"`
	} `json:"reliability"`
	Groups []struct {
		Group         string  `json:"group"`
		Selected      int     `json:"selected"`
		Estimate      float64 `json:"estimate"`
		StandardError float64 `json:"standard_error"`
		Interval      struct {
			Level, Lower, Upper float64
		} `json:"interval"`
	} `json:"groups"`
}

// honestSample posts 300 keys a/…, b/…, c/… with frequencies 200..499 at
// eps = 1, delta = 1e-6 (L about 14: every key is reported with near
// certainty) and returns its id.
func honestSample(t *testing.T, ts *testServer, query string) (sampleResp, response) {
	t.Helper()
	var els []string
	for i := 0; i < 300; i++ {
		els = append(els, fmt.Sprintf(`{"key":"%c/k%03d","frequency":%d}`, "abc"[i%3], i, 200+i))
	}
	r := ts.postJSON(t, "/v1/samples"+query, `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[`+strings.Join(els, ",")+`]}`)
	var s sampleResp
	if r.status == http.StatusCreated {
		r.json(t, &s)
	}
	return s, r
}

// TestSampleEstimatorChoice: the per-key contribution follows estimator=
// (mle by default, biased_down on request, on POST and GET alike), the
// frequency does not, and the answer names the estimator; unbiased and
// unknown names are 422s naming estimator.
func TestSampleEstimatorChoice(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	bd, r := honestSample(t, ts, "?estimator=biased_down")
	if r.status != http.StatusCreated || bd.Estimator != "biased_down" || len(bd.Elements) < 250 {
		t.Fatalf("POST biased_down: %d %.300s", r.status, r.body)
	}
	var ml sampleResp
	g := ts.get(t, "/v1/samples/"+bd.ID)
	g.json(t, &ml)
	if ml.Estimator != "mle" || len(ml.Elements) != len(bd.Elements) {
		t.Fatalf("GET default: estimator %q", ml.Estimator)
	}
	lower := 0
	for i, e := range bd.Elements {
		m := ml.Elements[i]
		if e.Key != m.Key || *e.Frequency != *m.Frequency || e.Estimate != nil {
			t.Fatalf("element %d: %s/%s frequency %v vs %v", i, e.Key, m.Key, *e.Frequency, *m.Frequency)
		}
		if *e.Contribution < *m.Contribution {
			lower++
		}
	}
	if lower == 0 {
		t.Error("biased_down contributions never below the MLE ones: the parameter has no effect")
	}
	var bd2 sampleResp
	ts.get(t, "/v1/samples/"+bd.ID+"?estimator=biased_down").json(t, &bd2)
	if bd2.Estimator != "biased_down" || *bd2.Elements[0].Contribution != *bd.Elements[0].Contribution {
		t.Errorf("GET biased_down differs from POST biased_down")
	}
	for _, q := range []string{"?estimator=unbiased", "?estimator=nope"} {
		for _, r := range []response{ts.get(t, "/v1/samples/"+bd.ID+q), func() response { _, r := honestSample(t, ts, q); return r }()} {
			if r.status != http.StatusUnprocessableEntity || !slices.Contains(r.problem(t).fields(), "estimator") {
				t.Errorf("%s: %d %s", q, r.status, r.body)
			}
		}
	}
}

// TestGroupBySumsAddUp: group estimates and variances over a partition add
// up to the ungrouped ones (keys are independent, so variances add), groups
// appear only for reported keys, delimiter and length group alike here, and
// every estimate carries an interval at the asked level.
func TestGroupBySumsAddUp(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	s, r := honestSample(t, ts, "")
	if r.status != http.StatusCreated {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for _, g := range []string{"identity", "count", "cap:300"} {
		var all estimateResp
		ts.get(t, "/v1/samples/"+s.ID+"/estimate?g="+g+"&level=0.9").json(t, &all)
		// count: every key is reported with pi ~ 1, so its SE may be ~0.
		if all.Interval.Level != 0.9 || !(all.Interval.Lower <= all.Estimate && all.Estimate <= all.Interval.Upper) || !(all.StandardError > 0 || g == "count") {
			t.Fatalf("%s: interval %+v around %g", g, all.Interval, all.Estimate)
		}
		for _, by := range []string{"delimiter=/", "length=1"} {
			var gr estimateResp
			rr := ts.get(t, "/v1/samples/"+s.ID+"/estimate?g="+g+"&level=0.9&group_by=prefix&"+by)
			rr.json(t, &gr)
			if rr.status != 200 || len(gr.Groups) != 3 {
				t.Fatalf("%s %s: %d %.400s", g, by, rr.status, rr.body)
			}
			var sum, v float64
			n := 0
			for k, x := range gr.Groups {
				if x.Group != string("abc"[k]) {
					t.Errorf("group %d is %q", k, x.Group)
				}
				sum += x.Estimate
				v += x.StandardError * x.StandardError
				n += x.Selected
			}
			if math.Abs(sum-all.Estimate) > 1e-9*all.Estimate || math.Abs(v-all.StandardError*all.StandardError) > 1e-9*v || n != all.Selected {
				t.Errorf("%s %s: groups add to %g (var %g, %d keys), ungrouped %g (var %g, %d keys)", g, by, sum, v, n, all.Estimate, all.StandardError*all.StandardError, all.Selected)
			}
			if gr.Estimate != all.Estimate {
				t.Errorf("%s %s: the overall answer changed with grouping", g, by)
			}
		}
	}
	var sel estimateResp
	ts.get(t, "/v1/samples/"+s.ID+"/estimate?key_prefix=a/&group_by=prefix&delimiter=/").json(t, &sel)
	if len(sel.Groups) != 1 || sel.Groups[0].Group != "a" {
		t.Errorf("groups come from selected reported keys only: %+v", sel.Groups)
	}
}

// TestEstimateQueryErrors: bad level and group-by parameters are 422s
// naming the parameter; a non-finite estimate is a 422 naming g, not a 500.
func TestEstimateQueryErrors(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	s, r := honestSample(t, ts, "")
	if r.status != http.StatusCreated {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for q, field := range map[string]string{
		"level=1":                              "level",
		"level=0":                              "level",
		"level=NaN":                            "level",
		"level=x":                              "level",
		"group_by=suffix&delimiter=/":          "group_by",
		"delimiter=/":                          "group_by",
		"group_by=prefix":                      "delimiter",
		"group_by=prefix&delimiter=/&length=2": "delimiter",
		"group_by=prefix&length=0":             "length",
		"g=power:400":                          "g",
		"g=power:400&group_by=prefix&delimiter=/": "g",
	} {
		rr := ts.get(t, "/v1/samples/"+s.ID+"/estimate?"+q)
		if rr.status != http.StatusUnprocessableEntity || !slices.Contains(rr.problem(t).fields(), field) {
			t.Errorf("%s: %d %s, want a 422 naming %s", q, rr.status, rr.body, field)
		}
	}
}

// TestQuantilesPopulation: quantiles report frequencies (MLE, near the truth
// here since every key is well above L), say from which frequency they are
// supported, and answer over reported keys on request.
func TestQuantilesPopulation(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	s, r := honestSample(t, ts, "")
	if r.status != http.StatusCreated {
		t.Fatalf("%d %s", r.status, r.body)
	}
	for _, pop := range []string{"", "&population=all", "&population=reported"} {
		var v struct {
			Population    string `json:"population"`
			SupportedFrom int64  `json:"supported_from"`
			Quantiles     []struct {
				Q, Frequency float64
				Supported    bool
			} `json:"quantiles"`
		}
		rr := ts.get(t, "/v1/samples/"+s.ID+"/quantiles?q=0.5&q=0.9"+pop)
		rr.json(t, &v)
		want := strings.TrimPrefix(pop, "&population=")
		if want == "" {
			want = "all"
		}
		if rr.status != 200 || v.Population != want || v.SupportedFrom < 1 || v.SupportedFrom > 100 || len(v.Quantiles) != 2 {
			t.Fatalf("%q: %d %s", pop, rr.status, rr.body)
		}
		for k, truth := range []float64{349, 469} { // 200+149, 200+269
			if q := v.Quantiles[k]; math.Abs(q.Frequency-truth) > 0.05*truth || !q.Supported {
				t.Errorf("%q: quantile %g = %g (supported %v), truth %g", pop, q.Q, q.Frequency, q.Supported, truth)
			}
		}
	}
	if rr := ts.get(t, "/v1/samples/"+s.ID+"/quantiles?q=0.5&population=some"); rr.status != 422 || !slices.Contains(rr.problem(t).fields(), "population") {
		t.Errorf("bad population: %d %s", rr.status, rr.body)
	}
}

// TestCounterMonotone: postprocess=monotone publishes beside each raw output
// a count within [0, t], non-decreasing across batches, and GET shows the
// latest one beside the raw count; an unknown postprocess is a 422.
func TestCounterMonotone(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	c := ts.postJSON(t, "/v1/counters", `{"epsilon":0.5,"horizon":1000,"algorithm":"simple","postprocess":"monotone"}`)
	var cv struct {
		ID          string `json:"id"`
		Postprocess string `json:"postprocess"`
	}
	c.json(t, &cv)
	if c.status != 201 || cv.Postprocess != "monotone" {
		t.Fatalf("create: %d %s", c.status, c.body)
	}
	prev, step := 0.0, 0
	for batch := 0; batch < 5; batch++ {
		var sv struct {
			Outputs  []float64 `json:"outputs"`
			Monotone []float64 `json:"monotone"`
		}
		r := ts.postJSON(t, "/v1/counters/"+cv.ID+"/steps", `{"bits":[0,1,1,0,1,0,0,1]}`)
		r.json(t, &sv)
		if r.status != 200 || len(sv.Outputs) != 8 || len(sv.Monotone) != 8 {
			t.Fatalf("steps: %d %s", r.status, r.body)
		}
		for _, m := range sv.Monotone {
			step++
			if m < prev || m < 0 || m > float64(step) {
				t.Fatalf("step %d: monotone %g after %g", step, m, prev)
			}
			prev = m
		}
	}
	var gv struct {
		Count         float64  `json:"count"`
		MonotoneCount *float64 `json:"monotone_count"`
	}
	ts.get(t, "/v1/counters/"+cv.ID).json(t, &gv)
	if gv.MonotoneCount == nil || *gv.MonotoneCount != prev {
		t.Fatalf("GET: monotone_count %v, want %g", gv.MonotoneCount, prev)
	}
	plain := ts.postJSON(t, "/v1/counters", `{"epsilon":0.5,"horizon":10}`)
	var pv struct{ ID string }
	plain.json(t, &pv)
	if r := ts.postJSON(t, "/v1/counters/"+pv.ID+"/steps", `{"bits":[1]}`); strings.Contains(string(r.body), "monotone") {
		t.Errorf("no postprocess asked, yet: %s", r.body)
	}
	if r := ts.postJSON(t, "/v1/counters", `{"epsilon":0.5,"horizon":10,"postprocess":"smooth"}`); r.status != 422 || !slices.Contains(r.problem(t).fields(), "postprocess") {
		t.Errorf("bad postprocess: %d %s", r.status, r.body)
	}
}

// TestZipfFlaggedUnreliable: on 20,000 Zipf keys (most of frequency below L)
// the number of keys (g = count) and the quantiles of all keys are flagged
// unreliable with a note, every quantile unsupported. So is the sum of
// frequencies (issue 23): keys below L hold a quarter of it, almost never
// reported, and its interval lies far below the truth (before, it was
// passed as reliable).
func TestZipfFlaggedUnreliable(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	var b strings.Builder
	b.WriteString(`{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"}}` + "\n")
	for k := 1; k <= 20000; k++ {
		fmt.Fprintf(&b, `{"key":"item-%d","frequency":%d}`+"\n", k, (20000+k-1)/k)
	}
	r := ts.do(t, "POST", "/v1/samples", "application/x-ndjson", b.String())
	var s sampleResp
	r.json(t, &s)
	if r.status != http.StatusCreated {
		t.Fatalf("%d %.300s", r.status, r.body)
	}
	truth := map[string]float64{"count": 20000}
	for k := 1; k <= 20000; k++ {
		truth["identity"] += float64((20000 + k - 1) / k)
	}
	for _, g := range []string{"count", "identity"} {
		var ev estimateResp
		ts.get(t, "/v1/samples/"+s.ID+"/estimate?g="+g).json(t, &ev)
		if ev.Interval.Upper >= truth[g] {
			t.Fatalf("g=%s: interval %+v reaches the truth %.0f: no missing mass to flag", g, ev.Interval, truth[g])
		}
		if ev.Reliability.Reliable || ev.Reliability.Note == "" || ev.Reliability.SupportedFrom < 1 {
			t.Errorf("g=%s: interval %+v misses the truth %.0f, reliability %+v, want reliable=false with a note", g, ev.Interval, truth[g], ev.Reliability)
		}
	}
	var qv struct {
		Reliable  bool   `json:"reliable"`
		Note      string `json:"note"`
		Quantiles []struct {
			Supported bool `json:"supported"`
		} `json:"quantiles"`
	}
	ts.get(t, "/v1/samples/"+s.ID+"/quantiles?q=0.5&q=0.99").json(t, &qv)
	if qv.Reliable || qv.Note == "" || len(qv.Quantiles) != 2 || qv.Quantiles[0].Supported || qv.Quantiles[1].Supported {
		t.Errorf("Zipf quantiles of all keys must be flagged: %+v", qv)
	}
}

// TestIntegerFrequenciesAsIntegers: the MLE frequency of a key is an
// integer and is written as one in JSON, NDJSON and CSV (10000000, never
// 1e+07, which the shortest 'g' format wrote before).
func TestIntegerFrequenciesAsIntegers(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"none"},"elements":[{"key":"a","frequency":10000000},{"key":"b","frequency":3000000}]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	var s sampleResp
	r.json(t, &s)
	if len(s.Elements) != 2 {
		t.Fatalf("want both keys reported: %s", r.body)
	}
	for _, form := range []struct{ accept, freq string }{
		{"application/json", `"frequency":`},
		{"application/x-ndjson", `"frequency":`},
		{"text/csv", ","},
	} {
		g := ts.get(t, "/v1/samples/"+s.ID, "Accept", form.accept)
		if g.status != http.StatusOK {
			t.Fatalf("%s: %d %s", form.accept, g.status, g.body)
		}
		if strings.Contains(string(g.body), "e+") || strings.Contains(string(g.body), "E+") {
			t.Errorf("%s: a number in exponent notation: %s", form.accept, g.body)
		}
	}
	for _, e := range s.Elements {
		if f := *e.Frequency; f != math.Trunc(f) || f < 2e6 {
			t.Errorf("key %s: frequency %v is not the integer MLE", e.Key, f)
		}
	}
}

// TestEstimateFewKeysNotReliable (issue 32) over HTTP: a ppswor release at
// tau 1e-3 whose selections hold no key, one key, or a group of one key is
// never called reliable; the answer states effective_keys and unseen_weight
// (about 2/tau for g = identity, the same for every group of the request)
// and an interval whose upper end allows for an unseen key: never "0 ± 0,
// reliable".
func TestEstimateFewKeysNotReliable(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	var els []string
	for i := 0; i < 40; i++ {
		els = append(els, fmt.Sprintf(`{"key":"k/%03d","frequency":%d}`, i, 300+10*i))
	}
	els = append(els, `{"key":"solo/x","frequency":400}`)
	r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":1e-3},"elements":[`+strings.Join(els, ",")+`]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("POST: %d %.300s", r.status, r.body)
	}
	var s sampleResp
	r.json(t, &s)
	type rel struct {
		Reliable      bool    `json:"reliable"`
		EffectiveKeys float64 `json:"effective_keys"`
		Note          string  `json:"note"`
	}
	type answer struct {
		Selected     int     `json:"selected"`
		Estimate     float64 `json:"estimate"`
		UnseenWeight float64 `json:"unseen_weight"`
		Interval     struct{ Lower, Upper float64 }
		Reliability  rel `json:"reliability"`
		Groups       []struct {
			Group        string  `json:"group"`
			Selected     int     `json:"selected"`
			UnseenWeight float64 `json:"unseen_weight"`
			Reliability  rel     `json:"reliability"`
		} `json:"groups"`
	}
	for _, c := range []struct {
		query    string
		selected int
	}{
		{"key_prefix=none/", 0},
		{"key=solo/x", 1},
	} {
		var a answer
		g := ts.get(t, "/v1/samples/"+s.ID+"/estimate?"+c.query)
		g.json(t, &a)
		if a.Selected != c.selected || a.Reliability.Reliable || a.Reliability.Note == "" || a.Reliability.EffectiveKeys != float64(c.selected) ||
			!(a.UnseenWeight > 1500 && a.UnseenWeight < 2001) || !(a.Interval.Upper > a.Estimate+a.UnseenWeight) {
			t.Errorf("%s: %.600s, want %d selected, not reliable, with a note, unseen weight about 2/tau and an upper end beyond it", c.query, g.body, c.selected)
		}
	}
	var a answer
	g := ts.get(t, "/v1/samples/"+s.ID+"/estimate?group_by=prefix&delimiter=/")
	g.json(t, &a)
	for _, gr := range a.Groups {
		if gr.UnseenWeight != a.UnseenWeight || (gr.Selected <= 1 && gr.Reliability.Reliable) {
			t.Errorf("group %s: %+v, want the request's unseen weight %g and, with %d key, not reliable", gr.Group, gr, a.UnseenWeight, gr.Selected)
		}
	}
}
