package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestZipfMatchesDefinition checks that Zipf[alpha] on n keys gives the key
// of rank r the frequency floor((n/r)^alpha), against a brute-force count.
func TestZipfMatchesDefinition(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		alpha float64
		n     int64
	}{{1, 10}, {0.5, 1000}, {1, 5000}, {2, 1000}, {1.3, 777}} {
		t.Run(fmt.Sprintf("alpha=%g,n=%d", c.alpha, c.n), func(t *testing.T) {
			dist, err := Zipf(c.alpha, c.n)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]float64{}
			for r := int64(1); r <= c.n; r++ {
				want[int64(math.Floor(math.Pow(float64(c.n)/float64(r), c.alpha)))]++
			}
			got := map[int64]float64{}
			for j, fc := range dist {
				if j > 0 && fc.Frequency <= dist[j-1].Frequency {
					t.Fatalf("alpha=%g n=%d: frequencies not strictly increasing", c.alpha, c.n)
				}
				got[fc.Frequency] = fc.Keys
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("alpha=%g n=%d: distribution differs from floor((n/r)^alpha)", c.alpha, c.n)
			}
		})
	}
	d, _ := Zipf(1, 10)
	if !reflect.DeepEqual(d, []estimate.FrequencyCount{{Frequency: 1, Keys: 5}, {Frequency: 2, Keys: 2}, {Frequency: 3, Keys: 1}, {Frequency: 5, Keys: 1}, {Frequency: 10, Keys: 1}}) {
		t.Fatalf("Zipf(1, 10) = %v", d)
	}
}

// TestUniformSpreadsKeys checks the uniform distribution's counts.
func TestUniformSpreadsKeys(t *testing.T) {
	t.Parallel()
	d, err := uniform(3, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, []estimate.FrequencyCount{{Frequency: 3, Keys: 2.5}, {Frequency: 4, Keys: 2.5}, {Frequency: 5, Keys: 2.5}, {Frequency: 6, Keys: 2.5}}) {
		t.Fatalf("Uniform(3, 6, 10) = %v", d)
	}
}

func mustG(t testing.TB, s string) estimate.G {
	t.Helper()
	g, err := estimate.ParseG(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustPlan(t *testing.T, r PlanRequest) *PlanResult {
	t.Helper()
	res, err := Plan(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkFractions(t *testing.T, where string, c Comparison) {
	t.Helper()
	for _, v := range []float64{c.PWS, c.SbH, c.NonPrivate} {
		if !(v >= 0 && v <= 1) {
			t.Fatalf("%s: fraction %g outside [0, 1] in %+v", where, v, c)
		}
	}
	if c.PWS < c.SbH*(1-1e-12) {
		t.Fatalf("%s: PWS reports fewer keys than SbH: %+v", where, c)
	}
	if c.PWS > c.NonPrivate*(1+1e-12) {
		t.Fatalf("%s: PWS reports more keys than the non-private sample: %+v", where, c)
	}
}

// TestPlanFractions checks that expected reported fractions lie in [0, 1]
// and are ordered SbH <= PWS <= non-private, at the request's threshold and
// across a sweep, for both distributions.
func TestPlanFractions(t *testing.T) {
	t.Parallel()
	for _, r := range []PlanRequest{
		{Privacy: mustPrivacy(t, 0.1, 1e-3), Sampling: mustSampling(t, sanitize.SchemePPSWOR, 0.01, 1, nil), Distribution: "zipf", Alpha: 1, N: 2000, Sweep: true, SweepPoints: 5},
		{Privacy: mustPrivacy(t, 0.5, 1e-6), Sampling: mustSampling(t, sanitize.SchemePriority, 0.05, 1, nil), Distribution: "uniform", A: 1, B: 300, Sweep: true, SweepPoints: 4, Method: sanitize.MethodDiscrete},
		{Privacy: mustPrivacy(t, 1, 1e-4), Distribution: "zipf", Alpha: 2, N: 3000, G: mustG(t, "count"), Estimator: estimate.BiasedDown},
	} {
		t.Run(fmt.Sprintf("%s,%s", r.Sampling.Scheme, r.Distribution), func(t *testing.T) {
			res := mustPlan(t, r)
			checkFractions(t, res.Description, res.ReportedFraction)
			for _, pt := range res.Sweep {
				checkFractions(t, res.Description, pt.ReportedFraction)
			}
			if r.Sweep && len(res.Sweep) != r.SweepPoints {
				t.Fatalf("%d sweep points, want %d", len(res.Sweep), r.SweepPoints)
			}
			for _, v := range []float64{res.NRMSE.PWS, res.NRMSE.SbH, res.NRMSE.NonPrivate} {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("%s: NRMSE %+v", res.Description, res.NRMSE)
				}
			}
		})
	}
}

// TestPlanSummaryFields checks the summary against direct computations: L,
// where pi reaches q, the reported fractions and the eq. 12 NRMSE of the
// non-private reference.
func TestPlanSummaryFields(t *testing.T) {
	t.Parallel()
	req := PlanRequest{Privacy: mustPrivacy(t, 0.2, 1e-4), Sampling: mustSampling(t, sanitize.SchemePPSWOR, 0.02, 1, nil), Distribution: "uniform", A: 5, B: 400, N: 10000}
	res := mustPlan(t, req)
	p := mustPrivacy(t, 0.2, 1e-4)
	s := mustSampling(t, sanitize.SchemePPSWOR, 0.02, 1, nil)
	if res.L != sanitize.L(p) {
		t.Fatalf("L = %g, want %g", res.L, sanitize.L(p))
	}
	pi := sanitize.ReportingProbabilities(p, s, 2000)
	var at int64
	for i := int64(len(pi)); i >= 1 && pi[i-1] >= s.Q(i)*(1-1e-12); i-- {
		at = i
	}
	if res.PiReachesQAt == nil || *res.PiReachesQAt != at || at < 2 {
		t.Fatalf("pi_reaches_q_at = %v, want %d", res.PiReachesQAt, at)
	}
	dist, _ := uniform(5, 400, 10000)
	b := mustSbH(t, p, s)
	var pk, sk, nk, stat, refVar float64
	for _, fc := range dist {
		pk += fc.Keys * pi[fc.Frequency-1]
		sk += fc.Keys * b.Reporting(fc.Frequency)
		q := s.Q(fc.Frequency)
		nk += fc.Keys * q
		w := float64(fc.Frequency)
		stat += fc.Keys * w
		refVar += fc.Keys * w * w * (1 - q) / q
	}
	want := Comparison{PWS: pk / 10000, SbH: sk / 10000, NonPrivate: nk / 10000}
	got := res.ReportedFraction
	if relErr(got.PWS, want.PWS) > 1e-12 || relErr(got.SbH, want.SbH) > 1e-12 || relErr(got.NonPrivate, want.NonPrivate) > 1e-12 {
		t.Fatalf("fractions %+v, want %+v", got, want)
	}
	if relErr(res.NRMSE.NonPrivate, math.Sqrt(refVar)/stat) > 1e-12 || relErr(res.Statistic, stat) > 1e-12 {
		t.Fatalf("non-private NRMSE %g, want %g", res.NRMSE.NonPrivate, math.Sqrt(refVar)/stat)
	}
	if res.ApproximatedKeys != 0 || res.ExactUpTo != 400 || res.MaxFrequency != 400 {
		t.Fatalf("exactness fields: %+v", res)
	}

	// The JSON contract of GET /v1/plan/summary.
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"L", "pi_reaches_q_at", "reported_fraction", "nrmse"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("summary JSON lacks %q: %s", k, raw)
		}
	}
	for _, k := range []string{"reported_fraction", "nrmse"} {
		sub, _ := m[k].(map[string]any)
		keys := make([]string, 0, len(sub))
		for key := range sub {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"nonprivate", "pws", "sbh"}) {
			t.Fatalf("%s has keys %v", k, keys)
		}
	}
	if _, ok := m["sweep"]; ok {
		t.Fatal("summary without sweep carries a sweep")
	}
}

// TestPlanNRMSEDecreasesWithThreshold checks Figure 8 (bottom)'s shape on the
// paper's selection (2x10^5 keys uniform on [1, 200], priority, delta =
// 2^-20, eps = 0.25): the NRMSE of non-private sampling and of sampled-SbH
// decreases as tau grows (until q = 1 makes it constant), PWS decreases while
// the variance dominates (small tau), and PWS beats SbH at tau = 1.
func TestPlanNRMSEDecreasesWithThreshold(t *testing.T) {
	t.Parallel()
	res := mustPlan(t, PlanRequest{Privacy: mustPrivacy(t, 0.25, math.Pow(2, -20)), Sampling: mustSampling(t, sanitize.SchemePriority, 1, 1, nil), Method: sanitize.MethodDiscrete,
		Distribution: "uniform", A: 1, B: 200, N: 200000, Sweep: true, SweepFrom: 1e-6, SweepTo: 1, SweepPoints: 7})
	sw := res.Sweep
	for k := 1; k < len(sw); k++ {
		a, b := sw[k-1].NRMSE, sw[k].NRMSE
		if b.NonPrivate > a.NonPrivate*(1+1e-12) || b.SbH > a.SbH*(1+1e-9) {
			t.Fatalf("NRMSE grows from tau=%g to %g: %+v -> %+v", sw[k-1].Threshold, sw[k].Threshold, a, b)
		}
		if sw[k].Threshold <= 1e-4 && b.PWS >= a.PWS {
			t.Fatalf("PWS NRMSE does not decrease at small tau: %+v -> %+v", a, b)
		}
	}
	if first, last := sw[0].NRMSE, sw[len(sw)-1].NRMSE; !(last.SbH < first.SbH/2 && last.PWS < last.SbH) {
		t.Fatalf("unexpected NRMSE ends: %+v, %+v", first, last)
	}
}

// TestFigure5Gains checks Figure 5 qualitatively on a smaller support (PWS
// reports more keys than sampled-SbH, gains ordered alpha = 0.5 > 1 > 2 at
// every threshold), and that the paper's support size reproduces the quoted
// gains (230%, 97%, 37%) on the plateau at tau = 1.
func TestFigure5Gains(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.1, 0.001)
	gain := func(alpha float64, n int64, tau float64) float64 {
		dist, err := Zipf(alpha, n)
		if err != nil {
			t.Fatal(err)
		}
		c, err := fractions(p, mustSampling(t, sanitize.SchemePPSWOR, tau, 1, nil), dist)
		if err != nil {
			t.Fatal(err)
		}
		return c.PWS/c.SbH - 1
	}
	for _, tau := range []float64{1e-4, 1e-2, 1} {
		g := []float64{gain(0.5, 20000, tau), gain(1, 20000, tau), gain(2, 20000, tau)}
		if !(g[2] > 0 && g[0] > g[1] && g[1] > g[2]) {
			t.Fatalf("tau=%g: gains for alpha 0.5, 1, 2 = %v", tau, g)
		}
	}
	for _, c := range []struct{ alpha, paper float64 }{{0.5, 2.30}, {1, 0.97}, {2, 0.37}} {
		t.Run(fmt.Sprintf("alpha=%g", c.alpha), func(t *testing.T) {
			if g := gain(c.alpha, figureSupport, 1); math.Abs(g-c.paper) > 0.015 {
				t.Fatalf("alpha=%g: gain %.3f at tau=1, paper %.2f", c.alpha, g, c.paper)
			}
		})
	}
}

// TestPlanValidation checks that every invalid planner parameter is
// reported, by its query name, in one checks.Errors, before any work. The
// privacy, sampling, method, g and estimator are typed values checked by
// their constructors (the api tests cover their query names); Plan still
// refuses a request without a privacy and a typed value that bypassed its
// constructor.
func TestPlanValidation(t *testing.T) {
	t.Parallel()
	ok := PlanRequest{Privacy: mustPrivacy(t, 0.5, 1e-6), Sampling: mustSampling(t, sanitize.SchemePPSWOR, 0.1, 1, nil), Distribution: "zipf", Alpha: 1, N: 100}
	bigL := mustPrivacy(t, 0.001, 1e-9)
	cases := []struct {
		name   string
		mut    func(*PlanRequest)
		fields []string
	}{
		{"privacy absent", func(r *PlanRequest) { r.Privacy = sanitize.Privacy{} }, []string{"epsilon"}},
		{"privacy bypassing its constructor", func(r *PlanRequest) { r.Privacy = sanitize.Privacy{Epsilon: -1, Delta: 2} }, []string{"epsilon", "delta"}},
		{"sampling bypassing its constructor", func(r *PlanRequest) { r.Sampling = sanitize.Sampling{Scheme: "bernoulli"} }, []string{"scheme"}},
		{"method bypassing its constructor", func(r *PlanRequest) { r.Method = "fast" }, []string{"method"}},
		{"g bypassing its constructor", func(r *PlanRequest) { r.G = estimate.G{Kind: "cube"} }, []string{"g"}},
		{"estimator bypassing its constructor", func(r *PlanRequest) { r.Estimator = "best" }, []string{"estimator"}},
		{"L too large", func(r *PlanRequest) { r.Privacy = bigL }, []string{"epsilon"}},
		{"distribution", func(r *PlanRequest) { r.Distribution = "pareto" }, []string{"distribution"}},
		{"alpha", func(r *PlanRequest) { r.Alpha = 0 }, []string{"alpha"}},
		{"alpha huge", func(r *PlanRequest) { r.Alpha = 4; r.N = 1000000 }, []string{"alpha"}},
		{"n", func(r *PlanRequest) { r.N = maxZipfKeys + 1 }, []string{"n"}},
		{"a", func(r *PlanRequest) { r.Distribution = "uniform"; r.A = 0; r.B = 10 }, []string{"a"}},
		{"b", func(r *PlanRequest) { r.Distribution = "uniform"; r.A = 5; r.B = 4 }, []string{"b"}},
		{"b large", func(r *PlanRequest) { r.Distribution = "uniform"; r.A = 1; r.B = maxUniformFrequency + 1 }, []string{"b"}},
		{"sweep_from", func(r *PlanRequest) { r.Sweep = true; r.SweepFrom = -1 }, []string{"sweep_from"}},
		{"sweep_to", func(r *PlanRequest) { r.Sweep = true; r.SweepFrom = 0.1; r.SweepTo = 0.01 }, []string{"sweep_to"}},
		{"sweep_points", func(r *PlanRequest) { r.Sweep = true; r.SweepPoints = 1000 }, []string{"sweep_points"}},
		{"sweep custom", func(r *PlanRequest) {
			r.Sweep = true
			r.Sampling = mustSampling(t, sanitize.SchemeCustom, 0, 0, []float64{0.5})
		}, []string{"scheme"}},
		{"several", func(r *PlanRequest) { r.Privacy = bigL; r.Distribution = ""; r.Sweep = true; r.SweepPoints = 1 }, []string{"epsilon", "distribution", "sweep_points"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.mut(&r)
			_, err := Plan(context.Background(), r)
			var ve checks.Errors
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a checks.Errors", err)
			}
			var got []string
			for _, f := range ve {
				got = append(got, f.Field)
			}
			if !slices.Equal(got, c.fields) {
				t.Fatalf("fields %v, want %v", got, c.fields)
			}
		})
	}
	if _, err := Plan(context.Background(), ok); err != nil {
		t.Fatalf("valid request rejected: %v", err)
	}
}

// TestPlanValidateSkipsAbsentPrivacy checks that Validate names the
// planner's own invalid parameters while the privacy is absent (a caller
// that could not read it reports that itself) and checks the L bound once
// the privacy is valid.
func TestPlanValidateSkipsAbsentPrivacy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		req    PlanRequest
		fields []string
	}{
		{"no privacy, bad distribution", PlanRequest{Distribution: "pareto"}, []string{"distribution"}},
		{"no privacy, valid rest", PlanRequest{Distribution: "zipf", Alpha: 1}, nil},
		{"L too large", PlanRequest{Privacy: mustPrivacy(t, 0.001, 1e-9), Distribution: "zipf", Alpha: 1}, []string{"epsilon"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := checks.Fields(c.req.Validate())
			var got []string
			for _, f := range fs {
				got = append(got, f.Field)
			}
			if !slices.Equal(got, c.fields) {
				t.Fatalf("fields %v, want %v", got, c.fields)
			}
		})
	}
}

// TestPlanDefaults checks that zero typed values take the documented
// defaults: the same answer as the defaults given explicitly.
func TestPlanDefaults(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 1, 1e-4)
	implicit := mustPlan(t, PlanRequest{Privacy: p, Distribution: "zipf", Alpha: 1, N: 200})
	explicit := mustPlan(t, PlanRequest{Privacy: p, Sampling: mustSampling(t, sanitize.DefaultScheme, 0, 0, nil), Method: sanitize.DefaultMethod,
		G: mustG(t, string(estimate.DefaultG)), Estimator: estimate.DefaultEstimator, Distribution: "zipf", Alpha: 1, N: 200})
	if !reflect.DeepEqual(implicit, explicit) {
		t.Fatalf("defaults differ:\n%+v\n%+v", implicit, explicit)
	}
}

// TestPlanHonoursContext checks that a cancelled request stops.
func TestPlanHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Plan(ctx, PlanRequest{Privacy: mustPrivacy(t, 0.5, 1e-6), Distribution: "zipf", Alpha: 1, Sweep: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestPlanApproximatesOnlyAboveCap checks that keys above exactFrequencyCap
// use the stationary tail when q reaches 1 (exact) and are counted as
// approximated otherwise.
func TestPlanApproximatesOnlyAboveCap(t *testing.T) {
	t.Parallel()
	exact := mustPlan(t, PlanRequest{Privacy: mustPrivacy(t, 1, 1e-6), Distribution: "zipf", Alpha: 2, N: 300})
	if exact.ApproximatedKeys != 0 || exact.MaxFrequency != 90000 {
		t.Fatalf("no sampling: %+v", exact)
	}
	approx := mustPlan(t, PlanRequest{Privacy: mustPrivacy(t, 1, 1e-6), Sampling: mustSampling(t, sanitize.SchemePPSWOR, 1e-6, 1, nil), Distribution: "zipf", Alpha: 2, N: 300})
	if want := 3.0; approx.ApproximatedKeys != want { // floor((300/r)^2) > 8192 for r <= 3
		t.Fatalf("ppswor 1e-6: %g approximated keys, want %g", approx.ApproximatedKeys, want)
	}
}
