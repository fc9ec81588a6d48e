package planner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Planning limits.
const (
	// maxZipfKeys bounds n for a Zipf distribution (its distinct
	// frequencies, each evaluated exactly, grow like n^(alpha/(alpha+1))).
	maxZipfKeys = 1_000_000
	// exactFrequencyCap is the largest frequency for which the PWS estimator
	// statistics of a plan are computed exactly; keys above it use the
	// estimator table's stationary tail when q has reached 1 and otherwise
	// the non-private reference statistics (counted in ApproximatedKeys).
	exactFrequencyCap = 1 << 13
	// maxReportingFrequency bounds the PWS reporting table of a plan; keys
	// above it are reported with probability q_i (pi has reached q there for
	// every scheme whose q increases slowly enough to allow it).
	maxReportingFrequency = 1 << 20
	// maxSweepPoints bounds the number of thresholds of a sweep.
	maxSweepPoints = 50
	// MaxPlanL bounds L(eps, delta): the PWS estimator tables cost O(L)
	// time per row and O(L^2) memory (eps = 0.01 with delta = 1e-6 gives
	// L = 852).
	MaxPlanL = 1000
)

// Defaults of a PlanRequest's zero fields (see also sanitize.DefaultScheme,
// sanitize.DefaultMethod, estimate.DefaultG and estimate.DefaultEstimator).
const (
	defaultZipfKeys    = 1000 // n of a Zipf distribution
	defaultSweepFrom   = 1e-6 // smallest threshold of a sweep
	defaultSweepTo     = 1    // largest threshold of a sweep
	defaultSweepPoints = 13   // thresholds in a sweep
)

// PlanRequest asks for the expected reporting and estimation quality of PWS,
// sampled-SbH and non-private sampling on a synthetic frequency
// distribution. The privacy, sampling, method, g and estimator are typed
// domain values, valid by construction (sanitize.NewPrivacy,
// sanitize.NewSampling, estimate.ParseG, ...); Plan checks the planner's own
// parameters and names invalid ones (in a checks.Errors) by the parameter
// names given in the comments. Zero values take the documented defaults,
// except Privacy, which is required.
type PlanRequest struct {
	Privacy   sanitize.Privacy   // epsilon, delta: required
	Sampling  sanitize.Sampling  // zero value: sanitize.DefaultScheme
	Method    sanitize.Method    // zero value: sanitize.DefaultMethod
	G         estimate.G         // zero value: estimate.DefaultG
	Estimator estimate.Estimator // zero value: estimate.DefaultEstimator

	Distribution string  // distribution: zipf | uniform
	Alpha        float64 // alpha: zipf exponent in (0, 4]
	N            int64   // n: number of keys: default 1000 (zipf), b-a+1 (uniform)
	A            int64   // a: uniform: smallest frequency >= 1
	B            int64   // b: uniform: largest frequency <= 131072

	// Sweep asks for the same quantities at SweepPoints thresholds tau,
	// log-spaced from SweepFrom (default 1e-6) to SweepTo (default 1),
	// SweepPoints default 13. The sweep uses the request's scheme (ppswor or
	// priority) and priority sampling when the scheme is none. The
	// parameters are sweep_from, sweep_to and sweep_points.
	Sweep       bool
	SweepFrom   float64
	SweepTo     float64
	SweepPoints int
}

// Comparison holds one quantity for the three methods.
type Comparison struct {
	PWS        float64 `json:"pws"`
	SbH        float64 `json:"sbh"`
	NonPrivate float64 `json:"nonprivate"`
}

// PlanPoint is the comparison at one threshold of a sweep.
type PlanPoint struct {
	Threshold        float64    `json:"threshold"`
	ReportedFraction Comparison `json:"reported_fraction"`
	NRMSE            Comparison `json:"nrmse"`
}

// PlanResult is the answer of Plan.
type PlanResult struct {
	// L is L(eps, delta) of Lemma 4.2.
	L float64 `json:"L"`
	// PiReachesQAt is the smallest frequency from which pi_i = q_i
	// (to 1e-12) for every larger frequency computed, or nil when pi is
	// still below q at the largest computed frequency.
	PiReachesQAt *int64 `json:"pi_reaches_q_at"`
	// ReportedFraction is the expected fraction of the distribution's keys
	// that each method reports.
	ReportedFraction Comparison `json:"reported_fraction"`
	// NRMSE is eq. 12's sqrt(MSE)/s for the estimate of s = sum_x g(w_x)
	// over all keys of the distribution.
	NRMSE Comparison `json:"nrmse"`

	SbHThreshold float64 `json:"sbh_threshold"` // T of SbH
	Keys         float64 `json:"keys"`          // keys in the distribution
	Statistic    float64 `json:"statistic"`     // s = sum_x g(w_x)
	MaxFrequency int64   `json:"max_frequency"` // largest frequency in the distribution
	// ExactUpTo is the largest frequency with exact PWS estimator
	// statistics; ApproximatedKeys counts keys above it that used the
	// non-private reference statistics instead.
	ExactUpTo        int64   `json:"exact_up_to"`
	ApproximatedKeys float64 `json:"approximated_keys"`
	Description      string  `json:"description"`

	SweepScheme string      `json:"sweep_scheme,omitempty"`
	Sweep       []PlanPoint `json:"sweep,omitempty"`
}

// plan is a validated request.
type plan struct {
	privacy   sanitize.Privacy
	sampling  sanitize.Sampling
	method    sanitize.Method
	g         estimate.G
	estimator estimate.Estimator
	dist      []estimate.FrequencyCount
	distName  string
	keys      float64
	maxFreq   int64
	sweep     []float64
	sweepSch  sanitize.Scheme
}

// Validate checks the planner's own parameters: L(epsilon, delta) at most
// MaxPlanL (named epsilon), the distribution and its alpha, n, a and b, the
// sweep's settings and that a sweep's scheme is not custom. The error names
// every invalid parameter (checks.Errors). The typed values are not checked
// again (their constructors did), and the L bound is skipped while Privacy
// is not a valid guarantee, so that a caller that could not build one can
// still name the planner's other invalid parameters in the same answer;
// Plan refuses such a request.
func (r PlanRequest) Validate() error {
	_, err := r.validate(false)
	return err
}

// validate checks r and collects all errors; complete also refuses typed
// values that are absent (Privacy) or invalid (a literal bypassing its
// constructor), by the domain's own Validate.
func (r PlanRequest) validate(complete bool) (*plan, error) {
	var ve checks.Errors
	pl := &plan{privacy: r.Privacy, sampling: r.Sampling, method: r.Method, g: r.G, estimator: r.Estimator}
	var err error
	if pl.sampling.Scheme == "" {
		if pl.sampling, err = sanitize.NewSampling(sanitize.DefaultScheme, 0, 0, nil); err != nil {
			return nil, fmt.Errorf("planner: default sampling: %w", err)
		}
	}
	if pl.method == "" {
		pl.method = sanitize.DefaultMethod
	}
	if pl.g == (estimate.G{}) {
		if pl.g, err = estimate.NewG(estimate.DefaultG, 0); err != nil {
			return nil, fmt.Errorf("planner: default g: %w", err)
		}
	}
	if pl.estimator == "" {
		pl.estimator = estimate.DefaultEstimator
	}
	if complete {
		if pl.privacy == (sanitize.Privacy{}) {
			ve.Add("epsilon", "is required")
		} else {
			ve.AddErr("epsilon", pl.privacy.Validate())
		}
		ve.AddErr("scheme", pl.sampling.Validate())
		ve.AddErr("method", pl.method.Validate())
		addErr(&ve, "g", pl.g.Validate())
		addErr(&ve, "estimator", pl.estimator.Validate())
	}
	if pl.privacy.Validate() == nil {
		if l := sanitize.L(pl.privacy); l > MaxPlanL {
			ve.Add("epsilon", fmt.Sprintf("gives L(epsilon, delta) = %.0f with this delta; the planner handles L up to %d (raise epsilon or delta)", l, MaxPlanL))
		}
	}
	switch r.Distribution {
	case "zipf":
		n := r.N
		if n == 0 {
			n = defaultZipfKeys
		}
		switch {
		case n < 1 || n > maxZipfKeys:
			ve.Add("n", "must be an integer from 1 to "+strconv.Itoa(maxZipfKeys))
		case !(r.Alpha > 0) || r.Alpha > maxZipfAlpha:
			ve.Add("alpha", "must be greater than 0 and at most 4")
		case r.Alpha*math.Log2(float64(n)) > 53:
			ve.Add("alpha", "must keep the largest frequency n^alpha at most 2^53")
		default:
			if pl.dist, err = Zipf(r.Alpha, n); err != nil {
				addErr(&ve, "alpha", err)
			}
			pl.distName = fmt.Sprintf("Zipf α=%s on %d keys", fmtNum(r.Alpha), n)
		}
	case "uniform":
		n := r.N
		if n == 0 && r.B >= r.A {
			n = r.B - r.A + 1
		}
		if pl.dist, err = uniform(r.A, r.B, n); err != nil {
			addErr(&ve, "a", err)
		}
		pl.distName = fmt.Sprintf("uniform [%d, %d], %d keys", r.A, r.B, n)
	default:
		ve.Add("distribution", "must be zipf or uniform")
	}
	if r.Sweep {
		pl.sweepSch = pl.sampling.Scheme
		switch pl.sweepSch {
		case sanitize.SchemeNone:
			pl.sweepSch = sanitize.SchemePriority
		case sanitize.SchemeCustom:
			ve.Add("scheme", "a threshold sweep needs scheme ppswor, priority or none")
		}
		from, to, pts := r.SweepFrom, r.SweepTo, r.SweepPoints
		if from == 0 {
			from = defaultSweepFrom
		}
		if to == 0 {
			to = defaultSweepTo
		}
		if pts == 0 {
			pts = defaultSweepPoints
		}
		switch {
		case !(from > 0) || math.IsInf(from, 0):
			ve.Add("sweep_from", "must be a finite number greater than 0")
		case !(to > from) || to > 1e6:
			ve.Add("sweep_to", "must be greater than sweep_from and at most 1e6")
		case pts < 2 || pts > maxSweepPoints:
			ve.Add("sweep_points", "must be an integer from 2 to "+strconv.Itoa(maxSweepPoints))
		default:
			for k := 0; k < pts; k++ {
				pl.sweep = append(pl.sweep, from*math.Pow(to/from, float64(k)/float64(pts-1)))
			}
		}
	}
	if len(ve) > 0 {
		return nil, ve
	}
	if pl.keys, pl.maxFreq, err = distStats(pl.dist); err != nil {
		return nil, err
	}
	return pl, nil
}

// Plan computes, for the request's parameters and synthetic distribution,
// L, the frequency from which pi reaches q, the expected fraction of keys
// reported and the NRMSE of the sum estimate (eq. 12) for PWS (the
// request's method, g and estimator), sampled-SbH (Appendix G) and
// non-private sampling (eq. 8); with Sweep, the same comparison at each
// threshold of the sweep. Invalid input yields a checks.Errors naming
// every bad field. Plan is deterministic and honours ctx between steps.
func Plan(ctx context.Context, req PlanRequest) (*PlanResult, error) {
	pl, err := req.validate(true)
	if err != nil {
		return nil, err
	}
	res := &PlanResult{
		L:            sanitize.L(pl.privacy),
		SbHThreshold: sbhThreshold(pl.privacy),
		Keys:         pl.keys,
		MaxFrequency: pl.maxFreq,
		Description:  describe(pl.privacy, pl.sampling) + "; " + pl.distName + "; g=" + pl.g.String(),
	}
	pt, ev, err := pl.evaluate(ctx, pl.sampling)
	if err != nil {
		return nil, err
	}
	res.ReportedFraction, res.NRMSE = pt.ReportedFraction, pt.NRMSE
	res.PiReachesQAt = ev.reachesAt
	res.Statistic = ev.statistic
	res.ExactUpTo = ev.exactUpTo
	res.ApproximatedKeys = ev.approxKeys
	if pl.sweep == nil {
		return res, nil
	}
	res.SweepScheme = string(pl.sweepSch)
	res.Sweep = make([]PlanPoint, len(pl.sweep))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(min(runtime.GOMAXPROCS(0), 2)) // each PWS table build may hold O(L^2) memory
	for k, tau := range pl.sweep {
		g.Go(func() error {
			s, err := sanitize.NewSampling(pl.sweepSch, tau, pl.sampling.Power, nil)
			if err != nil {
				return fmt.Errorf("planner: sweep threshold %g: %w", tau, err)
			}
			pt, _, err := pl.evaluate(gctx, s)
			if err != nil {
				return err
			}
			pt.Threshold = tau
			res.Sweep[k] = pt
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return res, nil
}

// evaluation carries the by-products of one evaluation.
type evaluation struct {
	reachesAt  *int64
	statistic  float64
	exactUpTo  int64
	approxKeys float64
}

// evaluate compares the three methods for sampling s.
func (pl *plan) evaluate(ctx context.Context, s sanitize.Sampling) (PlanPoint, evaluation, error) {
	var pt PlanPoint
	var ev evaluation
	if err := ctx.Err(); err != nil {
		return pt, ev, err
	}
	pi, reaches := pwsReporting(pl.privacy, s, pl.maxFreq)
	ev.reachesAt = reaches
	pwsKeys, npKeys := expectedReported(pi, s, pl.dist)
	b, err := newSbH(pl.privacy, s)
	if err != nil {
		return pt, ev, err
	}
	var sbhKeys, sbhBias, sbhVar, sbhStat float64
	for k, fc := range pl.dist {
		if k%256 == 0 {
			if err := ctx.Err(); err != nil {
				return pt, ev, err
			}
		}
		st, err := b.stats(pl.g, fc.Frequency)
		if err != nil {
			return pt, ev, err
		}
		sbhKeys += fc.Keys * st.Reported
		sbhBias += fc.Keys * st.Bias
		sbhVar += fc.Keys * st.Variance
		sbhStat += fc.Keys * st.G
	}
	pt.ReportedFraction = Comparison{PWS: pwsKeys / pl.keys, SbH: sbhKeys / pl.keys, NonPrivate: npKeys / pl.keys}

	ref, err := estimate.NewNonPrivateBaseline(pl.g, s)
	if err != nil {
		return pt, ev, err
	}
	refSum, err := ref.SumStats(pl.dist)
	if err != nil {
		return pt, ev, err
	}
	if err := ctx.Err(); err != nil {
		return pt, ev, err
	}
	ev.exactUpTo = min(pl.maxFreq, exactFrequencyCap)
	et, err := pwsEstimatorTable(pl.privacy, s, pl.method, pl.g, pl.estimator, ev.exactUpTo)
	if err != nil {
		return pt, ev, err
	}
	var bias, variance, stat float64
	for k, fc := range pl.dist {
		if k%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return pt, ev, err
			}
		}
		var st estimate.FrequencyStats
		if fc.Frequency <= ev.exactUpTo {
			st = et.Frequencies[fc.Frequency-1]
		} else if st, err = et.Stats(fc.Frequency); err != nil {
			if !errors.Is(err, estimate.ErrOutOfRange) {
				return pt, ev, fmt.Errorf("planner: pws statistics: %w", err)
			}
			if st, err = ref.Stats(fc.Frequency); err != nil {
				return pt, ev, err
			}
			ev.approxKeys += fc.Keys
		}
		bias += fc.Keys * st.Bias
		variance += fc.Keys * st.Variance
		stat += fc.Keys * st.G
	}
	ev.statistic = stat
	pt.NRMSE = Comparison{
		PWS:        math.Sqrt(variance+bias*bias) / stat,
		SbH:        math.Sqrt(sbhVar+sbhBias*sbhBias) / sbhStat,
		NonPrivate: refSum.NRMSE,
	}
	return pt, ev, nil
}

// pwsReporting returns pi_1..pi_N for N covering maxFreq (capped) and the
// point where pi has reached q, doubling N (up to maxReportingFrequency)
// until pi_N = q_N.
func pwsReporting(p sanitize.Privacy, s sanitize.Sampling, maxFreq int64) ([]float64, *int64) {
	n := max(min(maxFreq, maxReportingFrequency), 2*int64(math.Ceil(sanitize.L(p)))+64)
	for {
		n = min(n, maxReportingFrequency)
		pi := sanitize.ReportingProbabilities(p, s, int(n))
		if at := reachesQ(pi, s); at != nil || n == maxReportingFrequency {
			return pi, at
		}
		n *= 2
	}
}

// reachesQ returns the smallest i with pi_h = q_h (to 1e-12) for all h in
// i..len(pi), or nil when pi ends below q.
func reachesQ(pi []float64, s sanitize.Sampling) *int64 {
	at := int64(0)
	for i := int64(len(pi)); i >= 1; i-- {
		if pi[i-1] < s.Q(i)*(1-1e-12) {
			break
		}
		at = i
	}
	if at == 0 {
		return nil
	}
	return &at
}

// PlanChart is the NRMSE chart: the NRMSE of the sum estimate
// against the sampling threshold of the sweep (Figure 8, bottom).
func PlanChart(res *PlanResult) Chart {
	c := Chart{Title: "NRMSE of the sum: " + res.Description, XLabel: "sampling threshold τ (" + res.SweepScheme + ")",
		YLabel: "NRMSE", LogX: true, LogY: true, LegendBottom: true, LegendRight: true}
	return c.withSweep(res, func(p PlanPoint) Comparison { return p.NRMSE })
}

// FractionChart is the reported-fraction chart: the expected fraction
// of keys reported against the sampling threshold (Figure 5).
func FractionChart(res *PlanResult) Chart {
	c := Chart{Title: "Keys reported: " + res.Description, XLabel: "sampling threshold τ (" + res.SweepScheme + ")",
		YLabel: "fraction of keys reported", LogX: true, LogY: true, LegendBottom: true, LegendRight: true}
	return c.withSweep(res, func(p PlanPoint) Comparison { return p.ReportedFraction })
}

func (c Chart) withSweep(res *PlanResult, f func(PlanPoint) Comparison) Chart {
	n := len(res.Sweep)
	np := Curve{Label: "non-private", Series: SeriesNonPrivate, X: make([]float64, n), Y: make([]float64, n)}
	pws := Curve{Label: "PWS", Series: SeriesPWS, X: make([]float64, n), Y: make([]float64, n)}
	sbh := Curve{Label: "sampled-SbH", Series: SeriesSbH, X: make([]float64, n), Y: make([]float64, n)}
	for k, p := range res.Sweep {
		v := f(p)
		np.X[k], pws.X[k], sbh.X[k] = p.Threshold, p.Threshold, p.Threshold
		np.Y[k], pws.Y[k], sbh.Y[k] = v.NonPrivate, v.PWS, v.SbH
	}
	c.Curves = []Curve{np, pws, sbh}
	return c
}
