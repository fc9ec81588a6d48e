package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
)

func TestMain(m *testing.M) { pgtestMain(m) }

// stores runs f against the real router over each store implementation.
func stores(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory()) })
	t.Run("postgres", func(t *testing.T) {
		p, err := store.OpenPostgres(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		f(t, p)
	})
}

type sampleResp struct {
	ID       string `json:"id"`
	Release  string `json:"release"`
	Method   string `json:"method"`
	Elements []struct {
		Key          string   `json:"key"`
		Value        *float64 `json:"value"`
		Frequency    *float64 `json:"frequency"`
		Contribution *float64 `json:"contribution"`
		Estimate     *float64 `json:"estimate"` // dropped by "Honest answers": must stay nil
	} `json:"elements"`
	Estimator string `json:"estimator"`
}

// TestSampleLifecycle: sanitize (JSON and NDJSON both ways), read back,
// estimate, rank, top, quantiles — over both stores.
func TestSampleLifecycle(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		// delta = 1 and no sampling: every key is reported (no privacy).
		var els []string
		for i := 1; i <= 300; i++ {
			els = append(els, fmt.Sprintf(`{"key":"k%03d","frequency":%d}`, i, i))
		}
		r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":1},"sampling":{"scheme":"none"},"method":"discrete","elements":[`+strings.Join(els, ",")+`]}`)
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "/v1/samples/") {
			t.Fatalf("Location %q", loc)
		}
		var s sampleResp
		r.json(t, &s)
		if len(s.Elements) != 300 || s.Release != "frequencies" || s.Method != "discrete" {
			t.Fatalf("delta = 1 must report every key: got %d, release %s", len(s.Elements), s.Release)
		}
		// With delta = 1 the discrete sanitizer is the identity: value =
		// frequency = contribution = the true frequency; no per-key "estimate".
		if s.Estimator != "mle" {
			t.Fatalf("the answer must name its estimator: %q", s.Estimator)
		}
		for _, e := range s.Elements {
			var f float64
			fmt.Sscanf(e.Key, "k%03f", &f)
			if e.Value == nil || e.Frequency == nil || e.Contribution == nil || e.Estimate != nil || *e.Value != f ||
				*e.Frequency != f || math.Abs(*e.Contribution-f) > 1e-9 {
				t.Fatalf("element %s: value %v frequency %v contribution %v estimate %v", e.Key, e.Value, e.Frequency, e.Contribution, e.Estimate)
			}
		}
		g := ts.get(t, "/v1/samples/"+s.ID)
		var back sampleResp
		g.json(t, &back)
		if g.status != 200 || len(back.Elements) != 300 {
			t.Fatalf("GET sample: %d, %d elements", g.status, len(back.Elements))
		}
		for _, tc := range []struct {
			query string
			want  float64
			n     int
		}{
			{"", 300 * 301 / 2, 300},
			{"?estimator=biased_down&g=count", 300, 300},
			{"?estimator=unbiased&key_prefix=k00", 45, 9},
			{"?key=k010&key=k020", 30, 2},
			{"?key_regex=^k29[0-9]$&g=cap:295", 290 + 291 + 292 + 293 + 294 + 5*295, 10},
		} {
			e := ts.get(t, "/v1/samples/"+s.ID+"/estimate"+tc.query)
			var ev struct {
				Selected int     `json:"selected"`
				Estimate float64 `json:"estimate"`
			}
			e.json(t, &ev)
			if e.status != 200 || ev.Selected != tc.n || math.Abs(ev.Estimate-tc.want) > 1e-6*tc.want {
				t.Errorf("estimate%s: %d %s, want %d keys and %g", tc.query, e.status, e.body, tc.n, tc.want)
			}
		}
		top := ts.get(t, "/v1/samples/"+s.ID+"/top?k=3")
		if !strings.Contains(string(top.body), `"key":"k300"`) || top.status != 200 {
			t.Errorf("top: %s", top.body)
		}
		rank := ts.get(t, "/v1/samples/"+s.ID+"/rank?key=k298")
		if !strings.Contains(string(rank.body), `"rank":3`) {
			t.Errorf("rank: %s", rank.body)
		}
		q := ts.get(t, "/v1/samples/"+s.ID+"/quantiles?q=0.5&q=1")
		var qv struct {
			Quantiles []struct{ Q, Frequency float64 } `json:"quantiles"`
		}
		q.json(t, &qv)
		if q.status != 200 || len(qv.Quantiles) != 2 || qv.Quantiles[1].Frequency != 300 || math.Abs(qv.Quantiles[0].Frequency-150) > 1 {
			t.Errorf("quantiles: %s", q.body)
		}
		for path, status := range map[string]int{
			"/v1/samples/nope/estimate":                                               404,
			"/v1/samples/" + s.ID + "/estimate?g=log":                                 422,
			"/v1/samples/" + s.ID + "/estimate?key_regex=(":                           422,
			"/v1/samples/" + s.ID + "/estimate?estimator=x":                           422,
			"/v1/samples/" + s.ID + "/rank?key=missing":                               404,
			"/v1/samples/" + s.ID + "/quantiles?q=2":                                  422,
			"/v1/samples/" + s.ID + "/estimate?key_regex=" + strings.Repeat("a", 300): 422,
		} {
			if r := ts.get(t, path); r.status != status {
				t.Errorf("GET %s: %d, want %d", path, r.status, status)
			} else {
				r.problem(t)
			}
		}

		// A keys release carries no values; estimating from it is a 422.
		k := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":1,"delta":0.5},"sampling":{"scheme":"none"},"release":"keys","elements":[{"key":"a","frequency":40}]}`)
		var ks sampleResp
		k.json(t, &ks)
		if k.status != 201 || len(ks.Elements) != 1 || ks.Elements[0].Value != nil || ks.Elements[0].Frequency != nil ||
			ks.Elements[0].Contribution != nil || ks.Estimator != "" {
			t.Fatalf("keys release: %d %s", k.status, k.body)
		}
		if r := ts.get(t, "/v1/samples/"+ks.ID+"/estimate"); r.status != 422 {
			t.Errorf("estimate on keys release: %d", r.status)
		}

		// NDJSON in, NDJSON out.
		var nd bytes.Buffer
		nd.WriteString(`{"privacy":{"epsilon":0.5,"delta":1e-3},"sampling":{"scheme":"priority","threshold":0.05}}` + "\n")
		for i := 0; i < 2000; i++ {
			fmt.Fprintf(&nd, `{"key":"n%d","frequency":%d}`+"\n", i, 1+i%200)
		}
		r = ts.do(t, "POST", "/v1/samples", "application/x-ndjson", nd.String(), "Accept", "application/x-ndjson")
		if r.status != 201 || r.header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("ndjson: %d %s", r.status, r.body[:min(200, len(r.body))])
		}
		sc := bufio.NewScanner(bytes.NewReader(r.body))
		lines := 0
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %d: %v", lines, err)
			}
			if lines == 0 && m["id"] == nil {
				t.Fatalf("first line must be the header: %s", sc.Bytes())
			}
			if lines > 0 && (m["key"] == nil || m["value"] == nil || m["frequency"] == nil || m["contribution"] == nil || m["estimate"] != nil) {
				t.Fatalf("element line %s", sc.Bytes())
			}
			lines++
		}
		if lines < 100 || lines > 2001 {
			t.Fatalf("%d lines", lines)
		}
	})
}

// TestTablesEndpoints: reporting, frequencies and estimators tables answer
// with rows that obey the oracles, and identical parameters are cached.
func TestTablesEndpoints(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		ts := newServer(t, st)
		r := ts.get(t, "/v1/tables/reporting?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.1&max_frequency=80")
		var rep struct {
			L      float64   `json:"L"`
			Q      []float64 `json:"q"`
			PiReal []float64 `json:"pi"`
		}
		r.json(t, &rep)
		if r.status != 200 || len(rep.PiReal) != 80 || rep.L <= 0 {
			t.Fatalf("reporting: %d %.300s", r.status, r.body)
		}
		for i := range rep.PiReal {
			if rep.PiReal[i] > rep.Q[i]+1e-15 || (i > 0 && rep.PiReal[i] < rep.PiReal[i-1]) {
				t.Fatalf("pi_%d = %g, q = %g", i+1, rep.PiReal[i], rep.Q[i])
			}
		}
		for _, m := range []string{"discrete", "max_separation"} {
			f := ts.get(t, "/v1/tables/frequencies?epsilon=0.5&delta=1e-6&scheme=none&method="+m+"&frequency=40-42")
			var fv struct {
				Rows []struct {
					Frequency int64   `json:"frequency"`
					Reported  float64 `json:"reported"`
					Outcomes  []struct {
						Lo, Hi, Probability float64
						MLE                 float64 `json:"mle_contribution"`
						BiasedDown          float64 `json:"biased_down_contribution"`
					} `json:"outcomes"`
				} `json:"rows"`
			}
			f.json(t, &fv)
			if f.status != 200 || len(fv.Rows) != 3 {
				t.Fatalf("frequencies %s: %d %.300s", m, f.status, f.body)
			}
			// Per-token estimates are contributions (issue 23), named so.
			if strings.Contains(string(f.body), `"mle":`) || strings.Contains(string(f.body), `"biased_down":`) {
				t.Fatalf("frequencies %s: per-token fields not named as contributions: %.300s", m, f.body)
			}
			for _, row := range fv.Rows {
				sum := 0.0
				for _, o := range row.Outcomes {
					sum += o.Probability
					if o.Hi <= o.Lo || o.Hi > float64(row.Frequency) || !(o.MLE > 0) {
						t.Fatalf("bad outcome %+v", o)
					}
				}
				if math.Abs(sum-row.Reported) > 1e-9 {
					t.Fatalf("%s row %d sums to %g, reported %g", m, row.Frequency, sum, row.Reported)
				}
			}
		}
		e := ts.get(t, "/v1/tables/estimators?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.1&method=discrete&estimator=biased_down&max_frequency=60")
		var ev struct {
			Rows []struct {
				Frequency                                        int64
				Expected, Bias, Variance, MSE, ReferenceVariance float64
			} `json:"rows"`
		}
		e.json(t, &ev)
		if e.status != 200 || len(ev.Rows) != 60 {
			t.Fatalf("estimators: %d %.300s", e.status, e.body)
		}
		for _, row := range ev.Rows {
			if row.Expected > float64(row.Frequency)*(1+1e-9) {
				t.Fatalf("biased-down over-estimates at %d: %g", row.Frequency, row.Expected)
			}
		}
		for path, field := range map[string]string{
			"/v1/tables/reporting?delta=1e-6":                                              "epsilon",
			"/v1/tables/reporting?epsilon=1&delta=0":                                       "delta",
			"/v1/tables/reporting?epsilon=1&delta=0.1&scheme=ppswor":                       "threshold",
			"/v1/tables/reporting?epsilon=1&delta=0.1&max_frequency=99999999999":           "max_frequency",
			"/v1/tables/frequencies?epsilon=1&delta=0.1":                                   "frequency",
			"/v1/tables/frequencies?epsilon=1&delta=0.1&frequency=1-100000":                "frequency",
			"/v1/tables/frequencies?epsilon=1&delta=0.1&frequency=5&method=x":              "method",
			"/v1/tables/estimators?epsilon=1&delta=0.1&g=sqrt":                             "g",
			"/v1/tables/reporting?epsilon=1&delta=0.1&scheme=custom&probabilities=0.5,0.2": "probabilities[1]",
		} {
			r := ts.get(t, path)
			if r.status != 422 {
				t.Errorf("%s: %d, want 422", path, r.status)
				continue
			}
			p := r.problem(t)
			if !strings.Contains(strings.Join(p.fields(), ","), field) {
				t.Errorf("%s names %v, want %s", path, p.fields(), field)
			}
		}
	})
}

// TestConcurrentFirstRequestsComputeOnce: identical table requests arriving
// together are computed once and stored once.
func TestConcurrentFirstRequestsComputeOnce(t *testing.T) {
	t.Parallel()
	st := &countingStore{Store: store.NewMemory()}
	ts := newServer(t, st)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// epsilon 0.50 and 0.5 are one canonical key.
			eps := []string{"0.5", "0.50", "5e-1"}[i%3]
			if r := ts.get(t, "/v1/tables/reporting?epsilon="+eps+"&delta=1e-6&scheme=none&max_frequency=500"); r.status != 200 {
				t.Errorf("status %d", r.status)
			}
		}()
	}
	wg.Wait()
	if n := st.puts(); n != 1 {
		t.Fatalf("%d table computations for one parameter set, want 1", n)
	}
}

// countingStore counts table computations (every computed table is put once).
type countingStore struct {
	store.Store
	mu sync.Mutex
	n  int
}

func (c *countingStore) PutTable(ctx context.Context, key string, data []byte) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Store.PutTable(ctx, key, data)
}

func (c *countingStore) puts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestHugeFrequency: a key of frequency 10^9 (q = 1) is sanitized from the
// stationary row shifted to 10^9 — its value and estimate sit just below it —
// and the frequencies table answers for that row too.
func TestHugeFrequency(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	for _, m := range []string{"discrete", "max_separation"} {
		r := ts.postJSON(t, "/v1/samples", `{"privacy":{"epsilon":0.5,"delta":1e-3},"sampling":{"scheme":"none"},"method":"`+m+`","elements":[{"key":"big","frequency":1000000000}]}`)
		var s sampleResp
		r.json(t, &s)
		if r.status != 201 || len(s.Elements) != 1 {
			t.Fatalf("%s: %d %s", m, r.status, r.body)
		}
		v, e, c := *s.Elements[0].Value, *s.Elements[0].Frequency, *s.Elements[0].Contribution
		if v > 1e9 || v < 1e9-100 || math.Abs(e-1e9) > 100 || math.Abs(c-1e9) > 100 {
			t.Fatalf("%s: value %v frequency %v contribution %v for frequency 1e9", m, v, e, c)
		}
		f := ts.get(t, "/v1/tables/frequencies?epsilon=0.5&delta=1e-3&scheme=none&method="+m+"&frequency=1000000000")
		if f.status != 200 || !strings.Contains(string(f.body), `"frequency":1000000000`) || !strings.Contains(string(f.body), `"hi":1000000000,`) {
			t.Fatalf("%s: frequencies row 1e9: %d %.400s", m, f.status, f.body)
		}
	}
}

// TestTablesSurviveRestartsAndReplicas: a table computed by one pwsd is read,
// not recomputed, by another pwsd (a replica, or the same after a restart)
// sharing the PostgreSQL database.
func TestTablesSurviveRestartsAndReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	open := func() *countingStore {
		p, err := store.OpenPostgres(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return &countingStore{Store: p}
	}
	paths := []string{
		"/v1/tables/reporting?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.01&max_frequency=300",
		"/v1/tables/frequencies?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.01&frequency=100-102",
		"/v1/tables/estimators?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=0.01&estimator=biased_down&max_frequency=200",
	}
	first, second := open(), open()
	a, b := newServer(t, first), newServer(t, second)
	var bodies []string
	for _, p := range paths {
		r := a.get(t, p)
		if r.status != 200 {
			t.Fatalf("%s: %d", p, r.status)
		}
		bodies = append(bodies, string(r.body))
	}
	if first.puts() == 0 {
		t.Fatal("the first replica computed nothing")
	}
	for i, p := range paths {
		r := b.get(t, p)
		if r.status != 200 || string(r.body) != bodies[i] {
			t.Fatalf("%s: replica answered differently", p)
		}
	}
	if n := second.puts(); n != 0 {
		t.Fatalf("the second replica recomputed %d tables", n)
	}
}

// TestUnstableUnbiasedIsA422: the unbiased estimator's numerical limit is a
// property of the parameters, answered as a 422 naming the estimator.
func TestUnstableUnbiasedIsA422(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	r := ts.get(t, "/v1/tables/estimators?epsilon=0.5&delta=1e-6&scheme=none&method=discrete&estimator=unbiased&max_frequency=500")
	if r.status != 422 || !strings.Contains(strings.Join(r.problem(t).fields(), ","), "estimator") {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
