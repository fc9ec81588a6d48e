package planner

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/panprivate"
)

// DensityFigureOptions sizes the reproduction of the improved-density
// paper's figures. The zero value is the paper's setting.
type DensityFigureOptions struct {
	// Universe is |U| = T, the universe size and the stream length; 0 means
	// the paper's 10^5.
	Universe uint64
	// Reps, when positive, replaces the paper's repetitions per point (1000
	// for Figure 4, 300 for Figures 5-7), for a quicker, noisier look.
	Reps int
	// Seed fixes the streams and the estimators' randomness.
	Seed uint64
}

// The settings of Section 6 of Digalakis et al.
const (
	paperDensityUniverse = 100_000 // |U| = T
	paperFig4Reps        = 1000
	paperMSEReps         = 300
	paperFig4Alpha       = 0.1  // desired accuracy of Figure 4
	paperFig4Fraction    = 0.05 // m = 0.05 |U| in Figure 4
	paperFig7Epsilon     = 0.2
)

// paperEpsilons is the privacy budgets of Figures 4-6 (the x axis, up to the
// theorems' 1/2).
var paperEpsilons = []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5}

// paperFractions is Figure 5's and 6's sample sizes as fractions of |U|.
var paperFractions = []float64{0.001, 0.01}

// paperPercentages is Figure 7's sample percentages, 1/1000 to 1.
var paperPercentages = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}

// DensityFigures regenerates Figures 4-7 of Digalakis, Karystinos and
// Garofalakis, "Improved pan-private stream density estimation", by running
// the estimators of package panprivate (with the papers' release noise, as
// the paper does) on a uniform and a Zipf(1) stream of T = |U| events:
//
//   - Figure 4: the empirical probability of error P(|d~ - d(S)| >= 0.1)
//     against epsilon, dwork and optbern, m = 0.05|U|;
//   - Figure 5: the theoretical (exact, panprivate.DensityMSE) and empirical
//     MSE against epsilon, dwork and optbern, m = 0.001|U| and 0.01|U|;
//   - Figure 6: the empirical MSE against epsilon, all three, same m;
//   - Figure 7: the empirical MSE against the sample size m/|U|, all three,
//     epsilon = 0.2.
//
// Each chart is handed to save (a file name ending in .svg); the numbers the
// paper states in words are printed to w beside ours.
func DensityFigures(ctx context.Context, w io.Writer, save func(name string, c Chart) error, o DensityFigureOptions) error {
	if o.Universe == 0 {
		o.Universe = paperDensityUniverse
	}
	if o.Universe < 1000 {
		return fmt.Errorf("planner: density figures need a universe of at least 1000 users (m = 0.001|U| >= 1), got %d", o.Universe)
	}
	if o.Reps < 0 {
		return fmt.Errorf("planner: density figures: reps must not be negative, got %d", o.Reps)
	}
	f := &figures{ctx: ctx, w: w, saveChart: save}
	n := o.Universe
	streams := []struct{ name, title string }{{"uniform", "uniform stream"}, {"zipf", "Zipf stream"}}
	evs := make(map[string][]panprivate.Event, 2)
	dens := make(map[string]float64, 2)
	for k, s := range streams {
		rng := dprand.Seeded(o.Seed + uint64(k) + 1)
		var ids []uint64
		if s.name == "zipf" {
			ids = zipfUsers(rng, n, int(n))
		} else {
			ids = uniformUsers(rng, n, int(n))
		}
		evs[s.name], dens[s.name] = appearances(ids, n)
	}
	f.printf("Improved pan-private density estimation (Digalakis et al.), Section 6: |U| = T = %d; stream densities: uniform %.3f (paper 0.63), Zipf %.3f (paper 0.25)\n",
		n, dens["uniform"], dens["zipf"])
	reps := func(paper int) int {
		if o.Reps > 0 {
			return o.Reps
		}
		return paper
	}
	sim := &densitySim{ctx: ctx, n: n, evs: evs, dens: dens, seed: o.Seed}

	// Figure 4.
	m4 := fractionOf(n, paperFig4Fraction)
	two := densityAlgorithms[:2]
	r4 := reps(paperFig4Reps)
	f.printf("Figure 4: P(|d~ - d(S)| >= %g) against epsilon, m = %g|U| = %d, %d repetitions\n", paperFig4Alpha, paperFig4Fraction, m4, r4)
	for _, s := range streams {
		pts, err := sim.run(two, paperEpsilons, []int{m4}, s.name, r4)
		if err != nil {
			return err
		}
		c := Chart{Title: fmt.Sprintf("Figure 4 (%s): probability of error, m = %g|U|, α = %g", s.title, paperFig4Fraction, paperFig4Alpha),
			XLabel: "ε", YLabel: "P(|d̃ − d| ≥ α)", LegendRight: true}
		for _, alg := range two {
			c.Curves = append(c.Curves, Curve{Label: string(alg) + " (empirical)", Series: densitySeries(alg), X: paperEpsilons, Y: pts.series(alg, m4, func(s *SimulatedError) float64 { return s.ErrorProbability })})
		}
		below := 0
		for _, eps := range paperEpsilons {
			if pts.get(panprivate.AlgorithmOptBern, eps, m4).ErrorProbability <= pts.get(panprivate.AlgorithmDwork, eps, m4).ErrorProbability {
				below++
			}
		}
		f.printf("  %s: at eps = 0.1 dwork %.3f, optbern %.3f; optbern at or below dwork at %d of %d epsilons (paper: at every epsilon)\n", s.name,
			pts.get(panprivate.AlgorithmDwork, 0.1, m4).ErrorProbability, pts.get(panprivate.AlgorithmOptBern, 0.1, m4).ErrorProbability, below, len(paperEpsilons))
		if err := f.save(fmt.Sprintf("density-fig4-%s.svg", s.name), c); err != nil {
			return err
		}
	}

	// Figures 5 and 6 share their runs.
	r56 := reps(paperMSEReps)
	ms := make([]int, len(paperFractions))
	for i, fr := range paperFractions {
		ms[i] = fractionOf(n, fr)
	}
	f.printf("Figures 5 and 6: MSE against epsilon, m = %v, %d repetitions\n", ms, r56)
	for _, s := range streams {
		pts, err := sim.run(densityAlgorithms[:], paperEpsilons, ms, s.name, r56)
		if err != nil {
			return err
		}
		for i, m := range ms {
			c5 := Chart{Title: fmt.Sprintf("Figure 5 (%s): theoretical and empirical MSE, m = %g|U|", s.title, paperFractions[i]),
				XLabel: "ε", YLabel: "MSE", LogY: true, LegendRight: true}
			c6 := Chart{Title: fmt.Sprintf("Figure 6 (%s): empirical MSE, m = %g|U|", s.title, paperFractions[i]),
				XLabel: "ε", YLabel: "MSE", LogY: true, LegendRight: true}
			worst, ratios, points := 0.0, 0.0, 0
			for _, alg := range densityAlgorithms {
				emp := pts.series(alg, m, func(s *SimulatedError) float64 { return s.MSE })
				c6.Curves = append(c6.Curves, Curve{Label: string(alg), Series: densitySeries(alg), X: paperEpsilons, Y: emp})
				if alg == panprivate.AlgorithmPPDS {
					continue
				}
				theory := make([]float64, len(paperEpsilons))
				for k, eps := range paperEpsilons {
					v, err := panprivate.DensityMSE(alg, eps, panprivate.NoisePaper, n, uint64(m), dens[s.name])
					if err != nil {
						return fmt.Errorf("planner: figure 5: %w", err)
					}
					theory[k] = v
					worst = math.Max(worst, math.Abs(emp[k]/v-1))
					ratios += emp[k] / v
					points++
				}
				c5.Curves = append(c5.Curves,
					Curve{Label: string(alg) + " (empirical)", Series: densitySeries(alg), X: paperEpsilons, Y: emp},
					Curve{Label: string(alg) + " (theoretical)", Series: densitySeries(alg), X: paperEpsilons, Y: theory, Dashed: true})
			}
			f.printf("  %s, m = %d: empirical/theoretical MSE %.3f on average over dwork and optbern, at most %.1f%% off at one point (paper: they coincide); at eps = 0.2 MSE dwork %.4g, optbern %.4g, ppds %.4g\n",
				s.name, m, ratios/float64(points), 100*worst, pts.get(panprivate.AlgorithmDwork, 0.2, m).MSE, pts.get(panprivate.AlgorithmOptBern, 0.2, m).MSE, pts.get(panprivate.AlgorithmPPDS, 0.2, m).MSE)
			if err := f.save(fmt.Sprintf("density-fig5-%s-m%g.svg", s.name, paperFractions[i]), c5); err != nil {
				return err
			}
			if err := f.save(fmt.Sprintf("density-fig6-%s-m%g.svg", s.name, paperFractions[i]), c6); err != nil {
				return err
			}
		}
	}

	// Figure 7.
	r7 := reps(paperMSEReps)
	m7 := make([]int, len(paperPercentages))
	for i, fr := range paperPercentages {
		m7[i] = fractionOf(n, fr)
	}
	f.printf("Figure 7: MSE against the sample percentage m/|U|, eps = %g, %d repetitions\n", paperFig7Epsilon, r7)
	for _, s := range streams {
		pts, err := sim.run(densityAlgorithms[:], []float64{paperFig7Epsilon}, m7, s.name, r7)
		if err != nil {
			return err
		}
		c := Chart{Title: fmt.Sprintf("Figure 7 (%s): empirical MSE, ε = %g", s.title, paperFig7Epsilon),
			XLabel: "sample percentage m/|U|", YLabel: "MSE", LogX: true, LogY: true, LegendRight: true}
		for _, alg := range densityAlgorithms {
			y := make([]float64, len(m7))
			for i, m := range m7 {
				y[i] = pts.get(alg, paperFig7Epsilon, m).MSE
			}
			c.Curves = append(c.Curves, Curve{Label: string(alg), Series: densitySeries(alg), X: paperPercentages, Y: y})
		}
		last := m7[len(m7)-1]
		f.printf("  %s: at m/|U| = 0.01 MSE dwork %.4g, optbern %.4g, ppds %.4g; at m = |U| optbern %.4g, ppds %.4g (paper: identical there)\n", s.name,
			pts.get(panprivate.AlgorithmDwork, paperFig7Epsilon, fractionOf(n, 0.01)).MSE, pts.get(panprivate.AlgorithmOptBern, paperFig7Epsilon, fractionOf(n, 0.01)).MSE,
			pts.get(panprivate.AlgorithmPPDS, paperFig7Epsilon, fractionOf(n, 0.01)).MSE,
			pts.get(panprivate.AlgorithmOptBern, paperFig7Epsilon, last).MSE, pts.get(panprivate.AlgorithmPPDS, paperFig7Epsilon, last).MSE)
		if err := f.save(fmt.Sprintf("density-fig7-%s.svg", s.name), c); err != nil {
			return err
		}
	}
	return f.err
}

// fractionOf returns round(fr n), at least 1.
func fractionOf(n uint64, fr float64) int {
	return max(1, int(math.Round(fr*float64(n))))
}

// densitySim runs the simulations of the density figures.
type densitySim struct {
	ctx  context.Context
	n    uint64
	evs  map[string][]panprivate.Event
	dens map[string]float64
	seed uint64
}

// simKey names one simulated point.
type simKey struct {
	alg panprivate.Algorithm
	eps float64
	m   int
}

// simPoints holds the simulated points of one run.
type simPoints map[simKey]*SimulatedError

func (p simPoints) get(alg panprivate.Algorithm, eps float64, m int) *SimulatedError {
	if s, ok := p[simKey{alg, eps, m}]; ok {
		return s
	}
	return &SimulatedError{MSE: math.NaN(), ErrorProbability: math.NaN()}
}

// series returns field of the points of alg at sample size m over
// paperEpsilons.
func (p simPoints) series(alg panprivate.Algorithm, m int, field func(*SimulatedError) float64) []float64 {
	y := make([]float64, len(paperEpsilons))
	for i, eps := range paperEpsilons {
		y[i] = field(p.get(alg, eps, m))
	}
	return y
}

// run simulates every (algorithm, epsilon, m) on the named stream, reps
// releases each, in parallel. Each point's seed depends on the point alone,
// so the result does not depend on the scheduling.
func (s *densitySim) run(algs []panprivate.Algorithm, epss []float64, ms []int, stream string, reps int) (simPoints, error) {
	out := make(simPoints)
	type job struct {
		key  simKey
		seed uint64
		res  *SimulatedError
	}
	var jobs []*job
	for ai, alg := range algs {
		for ei, eps := range epss {
			for mi, m := range ms {
				seed := s.seed ^ uint64(1+ai)<<40 ^ uint64(1+ei)<<20 ^ uint64(1+mi)<<8 ^ uint64(len(stream))
				jobs = append(jobs, &job{key: simKey{alg, eps, m}, seed: seed})
			}
		}
	}
	g, ctx := errgroup.WithContext(s.ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		g.Go(func() error {
			cfg := densityConfig(j.key.alg, j.key.eps, s.n, j.key.m, panprivate.NoisePaper)
			r, err := simulateDensity(ctx, cfg, s.evs[stream], s.dens[stream], paperFig4Alpha, reps, j.seed)
			j.res = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, j := range jobs {
		out[j.key] = j.res
	}
	return out, nil
}

// uniformUsers returns T user ids drawn uniformly from [0, n).
func uniformUsers(rng *rand.Rand, n uint64, T int) []uint64 {
	ids := make([]uint64, T)
	for i := range ids {
		ids[i] = rng.Uint64N(n)
	}
	return ids
}

// zipfUsers returns T user ids drawn from Zipf(1) on [0, n): user u with
// probability proportional to 1/(u+1).
func zipfUsers(rng *rand.Rand, n uint64, T int) []uint64 {
	cdf := make([]float64, n)
	var s float64
	for u := range cdf {
		s += 1 / float64(u+1)
		cdf[u] = s
	}
	ids := make([]uint64, T)
	for i := range ids {
		ids[i] = min(uint64(sort.SearchFloat64s(cdf, rng.Float64()*s)), n-1)
	}
	return ids
}

// appearances returns the stream of appearances of ids and its density: the
// fraction of the n users that appear.
func appearances(ids []uint64, n uint64) ([]panprivate.Event, float64) {
	evs := make([]panprivate.Event, len(ids))
	seen := make(map[uint64]struct{}, len(ids))
	for i, u := range ids {
		evs[i] = panprivate.Event{User: panprivate.UserID(u)}
		seen[u] = struct{}{}
	}
	return evs, float64(len(seen)) / float64(n)
}
