package planner

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/panprivate"
)

// densityAlgorithms are the pan-private density algorithms the stream
// planner compares, in the papers' order.
var densityAlgorithms = [...]panprivate.Algorithm{panprivate.AlgorithmDwork, panprivate.AlgorithmOptBern, panprivate.AlgorithmPPDS}

// MaxSimulationEvents bounds the work of a stream plan's simulation: reps
// times the events of the synthetic stream plus the sampled users, summed
// over the three algorithms (about a second of one core).
const MaxSimulationEvents = 1 << 25

// StreamPlanRequest asks which pan-private density algorithm (dwork,
// optbern, ppds) and which sample size to use for a stream over a universe
// of UniverseSize users at Epsilon, for an (Alpha, Beta) accuracy target:
// the estimate within Alpha of the density with probability at least
// 1 - Beta. The parameter names in the comments are those StreamPlan's
// errors use (the API's query parameters).
type StreamPlanRequest struct {
	UniverseSize uint64  // universe_size: 1 <= |U| <= 2^53
	Epsilon      float64 // epsilon: (0, 0.5], the streams' epsilon
	Alpha        float64 // alpha: accuracy, 0 < alpha < 1
	Beta         float64 // beta: failure probability, 0 < beta < 1
	// SampleSize (sample_size) fixes m for every algorithm; 0 chooses m* of
	// the (Alpha, Beta) bound, as a stream created with an accuracy does.
	SampleSize int
	// Density (density) is the density d in [0, 1] the predictions and the
	// simulation assume (the MSE depends on it weakly; PPDS's level more).
	Density float64
	// ReleaseNoise (release_noise) is the streams' release noise; empty
	// means calibrated, the streams' default.
	ReleaseNoise panprivate.ReleaseNoise
	// Reps (reps) is the number of simulated streams per algorithm; 0 skips
	// the simulation. Seed (seed) fixes its randomness.
	Reps int
	Seed uint64
}

// StreamPlanResult is the answer of StreamPlan.
type StreamPlanResult struct {
	// Recommended is the algorithm with the smallest predicted MSE among
	// those whose sample size meets the (alpha, beta) bound within the
	// universe (all of them when none does).
	Recommended panprivate.Algorithm `json:"recommended"`
	// Reason says why, in words.
	Reason string `json:"reason"`
	// Algorithms holds the plan of dwork, optbern and ppds, in that order.
	Algorithms []StreamAlgorithmPlan `json:"algorithms"`
	// SimulatedStream describes the simulation's synthetic stream: the
	// first round(density * universe_size) users, each appearing once (the
	// sample is a uniformly random subset, so which users appear does not
	// matter). Empty when reps is 0.
	SimulatedStream string `json:"simulated_stream,omitempty"`
	// Reps is the number of simulated streams per algorithm (0: none).
	Reps int `json:"reps"`
	// Seed is the seed of the simulation: the same request and seed give
	// the same answer.
	Seed uint64 `json:"seed"`
}

// StreamAlgorithmPlan is one algorithm's plan.
type StreamAlgorithmPlan struct {
	// Algorithm is dwork, optbern or ppds.
	Algorithm panprivate.Algorithm `json:"algorithm"`
	// SampleSize is m: the sample of dwork and optbern, the bound on the
	// distinct sample of ppds. It is the request's sample_size, else
	// ceil(SampleSizeBound) capped at the universe and MaxSampleSize.
	SampleSize int `json:"sample_size"`
	// SampleSizeBound is m* of Section 3.2 of Digalakis et al. (Theorems
	// 3.3 and 4.3): the smallest sample their (alpha, beta) bound allows
	// (ppds uses optbern's), not rounded. The bound is not tight: the
	// predicted and simulated errors show how much better m does.
	SampleSizeBound float64 `json:"sample_size_bound"`
	// MeetsBound says m >= m*: the (alpha, beta) target is guaranteed by the
	// theorems.
	MeetsBound bool `json:"meets_bound"`
	// UsersRead is the number of users whose bits the release reads: m, or
	// for ppds n_L = floor(|U|/2^L) at the predicted level; the state keeps
	// one bit per user read.
	UsersRead uint64 `json:"users_read"`
	// Level is ppds's predicted level L (panprivate.PPDSLevel); absent for
	// the other algorithms.
	Level *uint `json:"level,omitempty"`
	// ReleaseEpsilon is the epsilon one release spends (epsilon with the
	// calibrated noise, eps/gap with the papers' noise).
	ReleaseEpsilon float64 `json:"release_epsilon"`
	// TheoremMSE is the papers' bound on the MSE about the sample's density
	// with the papers' noise (Theorems 3.2, 4.2, 5.2), at UsersRead.
	TheoremMSE float64 `json:"theorem_mse"`
	// PredictedMSE is the exact MSE about the stream's density at the
	// request's density and release noise (panprivate.DensityMSE): the
	// theorems' variance made exact in the bits, with the sampling term and
	// the noise actually drawn.
	PredictedMSE float64 `json:"predicted_mse"`
	// PredictedRMSE is its square root, comparable with alpha.
	PredictedRMSE float64 `json:"predicted_rmse"`
	// Simulated is the simulation's measurement, absent when reps is 0.
	Simulated *SimulatedError `json:"simulated,omitempty"`
}

// SimulatedError is the error of simulated releases about the synthetic
// stream's density.
type SimulatedError struct {
	// MSE is the mean squared error.
	MSE float64 `json:"mse"`
	// MSEStandardError is the MSE's standard error: the standard
	// deviation of the squared errors over sqrt(reps).
	MSEStandardError float64 `json:"mse_standard_error"`
	// Bias is the mean error (the estimators are unbiased).
	Bias float64 `json:"bias"`
	// ErrorProbability is the fraction of releases at least alpha from the
	// density, to hold against beta.
	ErrorProbability float64 `json:"error_probability"`
}

// streamPlan is a validated StreamPlanRequest.
type streamPlan struct {
	StreamPlanRequest
	events uint64 // users appearing in the simulated stream
	// noBound skips m* (a numerical minimization) when SampleSize is given
	// and only the MSEs are wanted (StreamChart's grid points).
	noBound bool
}

// validate checks every parameter and names each invalid one.
func (r StreamPlanRequest) validate() (*streamPlan, error) {
	var ve checks.Errors
	if r.UniverseSize < 1 || r.UniverseSize > 1<<53 {
		ve.Add("universe_size", "must be an integer from 1 to 2^53")
	}
	if !(r.Epsilon > 0 && r.Epsilon <= panprivate.MaxDensityEpsilon) {
		ve.Add("epsilon", fmt.Sprintf("must be greater than 0 and at most %g for density (the papers' privacy theorems need it)", panprivate.MaxDensityEpsilon))
	}
	if !(r.Alpha > 0 && r.Alpha < 1) {
		ve.Add("alpha", "must be greater than 0 and less than 1")
	}
	if !(r.Beta > 0 && r.Beta < 1) {
		ve.Add("beta", "must be greater than 0 and less than 1")
	}
	if r.SampleSize < 0 || r.SampleSize > panprivate.MaxSampleSize || (r.UniverseSize >= 1 && uint64(r.SampleSize) > r.UniverseSize) {
		ve.Add("sample_size", fmt.Sprintf("must be from 1 to min(universe_size, %d), or absent to choose it from alpha and beta", panprivate.MaxSampleSize))
	}
	if !(r.Density >= 0 && r.Density <= 1) {
		ve.Add("density", "must be from 0 to 1")
	}
	switch r.ReleaseNoise {
	case "":
		r.ReleaseNoise = panprivate.NoiseCalibrated
	case panprivate.NoisePaper, panprivate.NoiseCalibrated:
	default:
		ve.Add("release_noise", "must be paper or calibrated")
	}
	if r.Reps < 0 {
		ve.Add("reps", "must not be negative")
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	p := &streamPlan{StreamPlanRequest: r, events: uint64(math.Round(r.Density * float64(r.UniverseSize)))}
	return p, nil
}

// StreamPlan plans a pan-private density stream: for each of dwork, optbern
// and ppds the sample size (m* of the (alpha, beta) bound, or the request's),
// the papers' MSE bound, the exact predicted MSE at the request's density and
// release noise, and, with reps > 0, the MSE and error probability measured
// by running the estimators themselves (package panprivate) on a synthetic
// stream of that density with seeded randomness. It recommends the
// algorithm with the smallest predicted MSE among those that meet the bound.
// Invalid parameters are named in a checks.Errors.
func StreamPlan(ctx context.Context, req StreamPlanRequest) (*StreamPlanResult, error) {
	p, err := req.validate()
	if err != nil {
		return nil, err
	}
	res := &StreamPlanResult{Reps: p.Reps, Seed: p.Seed}
	for _, alg := range densityAlgorithms {
		ap, err := p.algorithm(alg)
		if err != nil {
			return nil, err
		}
		res.Algorithms = append(res.Algorithms, ap)
	}
	if p.Reps > 0 {
		var work uint64
		for _, ap := range res.Algorithms {
			work += uint64(p.Reps) * (p.events + ap.UsersRead)
		}
		if work > MaxSimulationEvents {
			return nil, checks.Errorf("reps", "makes the simulation process %d events and sampled users, more than %d: lower reps (0 skips the simulation), density or universe_size",
				work, MaxSimulationEvents)
		}
		res.SimulatedStream = fmt.Sprintf("%d of %d users, each appearing once (density %.6g)", p.events, p.UniverseSize, float64(p.events)/float64(p.UniverseSize))
		stream := firstUsers(p.events)
		d := float64(p.events) / float64(p.UniverseSize)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for i := range res.Algorithms {
			ap := &res.Algorithms[i]
			cfg := densityConfig(ap.Algorithm, p.Epsilon, p.UniverseSize, ap.SampleSize, p.ReleaseNoise)
			g.Go(func() error {
				s, err := simulateDensity(gctx, cfg, stream, d, p.Alpha, p.Reps, p.Seed+uint64(i)*1_000_003)
				ap.Simulated = s
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	res.Recommended, res.Reason = recommend(res.Algorithms)
	return res, nil
}

// algorithm computes alg's plan without simulation.
func (p *streamPlan) algorithm(alg panprivate.Algorithm) (StreamAlgorithmPlan, error) {
	ap := StreamAlgorithmPlan{Algorithm: alg}
	boundAlg := alg
	if alg == panprivate.AlgorithmPPDS {
		boundAlg = panprivate.AlgorithmOptBern
	}
	mStar := math.NaN()
	if !p.noBound || p.SampleSize == 0 {
		var err error
		if mStar, err = panprivate.OptimalSampleSize(boundAlg, p.Epsilon, p.Alpha, p.Beta); err != nil {
			return ap, fmt.Errorf("planner: sample size of %s: %w", alg, err)
		}
	}
	ap.SampleSizeBound = mStar
	m := p.SampleSize
	if m == 0 {
		m = int(min(math.Ceil(mStar), float64(p.UniverseSize), panprivate.MaxSampleSize))
	}
	ap.SampleSize = m
	ap.MeetsBound = float64(m) >= mStar
	ap.UsersRead = uint64(m)
	if alg == panprivate.AlgorithmPPDS {
		level, err := panprivate.PPDSLevel(p.Epsilon, p.UniverseSize, uint64(m), p.Density)
		if err != nil {
			return ap, fmt.Errorf("planner: ppds level: %w", err)
		}
		ap.Level = &level
		ap.UsersRead = p.UniverseSize >> level
	}
	var err error
	if ap.ReleaseEpsilon, err = panprivate.DensityReleaseEpsilon(alg, p.Epsilon, p.ReleaseNoise); err != nil {
		return ap, fmt.Errorf("planner: %w", err)
	}
	if ap.TheoremMSE, err = panprivate.DensityTheoremMSE(alg, p.Epsilon, ap.UsersRead); err != nil {
		return ap, fmt.Errorf("planner: %w", err)
	}
	if ap.PredictedMSE, err = panprivate.DensityMSE(alg, p.Epsilon, p.ReleaseNoise, p.UniverseSize, ap.UsersRead, p.Density); err != nil {
		return ap, fmt.Errorf("planner: %w", err)
	}
	ap.PredictedRMSE = math.Sqrt(ap.PredictedMSE)
	return ap, nil
}

// recommend picks the algorithm with the smallest predicted MSE among those
// that meet the bound (all when none does).
func recommend(aps []StreamAlgorithmPlan) (panprivate.Algorithm, string) {
	best, anyMeets := -1, false
	for _, ap := range aps {
		anyMeets = anyMeets || ap.MeetsBound
	}
	for i, ap := range aps {
		if anyMeets && !ap.MeetsBound {
			continue
		}
		if best < 0 || ap.PredictedMSE < aps[best].PredictedMSE {
			best = i
		}
	}
	b := aps[best]
	why := fmt.Sprintf("%s has the smallest predicted MSE (%.3g, RMSE %.3g) with m = %d", b.Algorithm, b.PredictedMSE, b.PredictedRMSE, b.SampleSize)
	if !anyMeets {
		why += "; no algorithm's sample meets the (alpha, beta) bound within the universe, so the target is not guaranteed"
	}
	return b.Algorithm, why
}

// densitySeries is the series (the colour in every chart) of a density
// algorithm.
func densitySeries(alg panprivate.Algorithm) Series {
	switch alg {
	case panprivate.AlgorithmDwork:
		return SeriesDwork
	case panprivate.AlgorithmOptBern:
		return SeriesOptBern
	default:
		return SeriesPPDS
	}
}

// densityConfig is the configuration of a density stream.
func densityConfig(alg panprivate.Algorithm, eps float64, n uint64, m int, noise panprivate.ReleaseNoise) panprivate.Config {
	return panprivate.Config{Estimator: panprivate.KindDensity, Algorithm: alg, Epsilon: eps, UniverseSize: n, SampleSize: m, ReleaseNoise: noise}
}

// firstUsers returns the stream in which users 0..k-1 appear once each.
func firstUsers(k uint64) []panprivate.Event {
	evs := make([]panprivate.Event, k)
	for u := range evs {
		evs[u] = panprivate.Event{User: panprivate.UserID(uint64(u))}
	}
	return evs
}

// simulateDensity runs reps fresh estimators of cfg over stream, releases
// once from each and measures the error about the density d, within alpha or
// not. All randomness (the sample, the bits, the release noise) comes from
// seed: the simulation protects no data, so it uses the reproducible
// dprandtest sampler, never the secure one.
func simulateDensity(ctx context.Context, cfg panprivate.Config, stream []panprivate.Event, d, alpha float64, reps int, seed uint64) (*SimulatedError, error) {
	rng := dprand.Seeded(seed)
	noise := dprandtest.NewLaplace(dprand.Seeded(seed ^ 0x9e3779b97f4a7c15))
	var sum, sumSq, sumErr float64
	far := 0
	for r := 0; r < reps; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := panprivate.New(cfg, rng)
		if err != nil {
			return nil, fmt.Errorf("planner: simulated %s stream: %w", cfg.Algorithm, err)
		}
		if err := e.Apply(stream); err != nil {
			return nil, fmt.Errorf("planner: simulated %s stream: %w", cfg.Algorithm, err)
		}
		rel, err := e.Release(noise)
		if err != nil {
			return nil, fmt.Errorf("planner: simulated %s release: %w", cfg.Algorithm, err)
		}
		x := rel.Estimate - d
		sumErr += x
		sum += x * x
		sumSq += x * x * x * x
		if math.Abs(x) >= alpha {
			far++
		}
	}
	n := float64(reps)
	mse := sum / n
	se := 0.0
	if reps > 1 {
		se = math.Sqrt(math.Max(sumSq/n-mse*mse, 0) / (n - 1))
	}
	return &SimulatedError{MSE: mse, MSEStandardError: se, Bias: sumErr / n, ErrorProbability: float64(far) / n}, nil
}

// Axes of StreamChart.
const (
	StreamAxisEpsilon    = "epsilon"
	StreamAxisSampleSize = "sample_size"
)

// StreamChart draws the predicted (exact) MSE of the three density
// algorithms, and the papers' theorem bound dashed, at the request's density
// and release noise, against epsilon (axis "epsilon": 0.05 to 0.5, each
// algorithm's sample size held at its plan's, as Figures 5 and 6 of the
// improved-density paper hold m) or against the sample size (axis
// "sample_size": m/|U| from 1/1000 to 1 at the request's epsilon, as Figure
// 7). It draws no simulation (StreamPlan's reps are ignored), so it costs
// microseconds; `pwsd figures --paper improved-density` simulates the
// paper's figures. An invalid axis is named "x".
func StreamChart(req StreamPlanRequest, axis string) (Chart, error) {
	req.Reps = 0
	p, err := req.validate()
	if err == nil && axis != StreamAxisEpsilon && axis != StreamAxisSampleSize {
		err = checks.Errorf("x", "must be epsilon or sample_size")
	}
	if err != nil {
		return Chart{}, err
	}
	noise := string(p.ReleaseNoise)
	c := Chart{XLabel: "ε", YLabel: "MSE", LogY: true, LegendRight: true,
		Title: fmt.Sprintf("Predicted density MSE: |U| = %d, density %g, %s release noise", p.UniverseSize, p.Density, noise)}
	type point struct {
		eps float64
		m   int
	}
	var grid func(alg StreamAlgorithmPlan) []point
	var xs func(pts []point) []float64
	if axis == StreamAxisEpsilon {
		grid = func(ap StreamAlgorithmPlan) []point {
			pts := make([]point, len(paperEpsilons))
			for i, eps := range paperEpsilons {
				pts[i] = point{eps, ap.SampleSize}
			}
			return pts
		}
		xs = func(pts []point) []float64 { return paperEpsilons }
	} else {
		c.XLabel, c.LogX = "sample size m/|U|", true
		c.Title = fmt.Sprintf("Predicted density MSE: |U| = %d, ε = %g, density %g, %s release noise", p.UniverseSize, p.Epsilon, p.Density, noise)
		var ms []int
		for _, fr := range paperPercentages {
			m := min(fractionOf(p.UniverseSize, fr), panprivate.MaxSampleSize)
			if len(ms) == 0 || m > ms[len(ms)-1] {
				ms = append(ms, m)
			}
		}
		grid = func(StreamAlgorithmPlan) []point {
			pts := make([]point, len(ms))
			for i, m := range ms {
				pts[i] = point{p.Epsilon, m}
			}
			return pts
		}
		xs = func(pts []point) []float64 {
			x := make([]float64, len(pts))
			for i, pt := range pts {
				x[i] = float64(pt.m) / float64(p.UniverseSize)
			}
			return x
		}
	}
	for _, alg := range densityAlgorithms {
		base, err := p.algorithm(alg)
		if err != nil {
			return Chart{}, err
		}
		pts := grid(base)
		pred, bound := make([]float64, len(pts)), make([]float64, len(pts))
		for i, pt := range pts {
			q := *p
			q.Epsilon, q.SampleSize, q.noBound = pt.eps, pt.m, true
			ap, err := q.algorithm(alg)
			if err != nil {
				return Chart{}, err
			}
			pred[i], bound[i] = ap.PredictedMSE, ap.TheoremMSE
		}
		c.Curves = append(c.Curves,
			Curve{Label: string(alg) + " (predicted)", Series: densitySeries(alg), X: xs(pts), Y: pred},
			Curve{Label: string(alg) + " (theorem bound)", Series: densitySeries(alg), X: xs(pts), Y: bound, Dashed: true})
	}
	return c, nil
}
