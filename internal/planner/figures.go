package planner

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// figureSupport is the Zipf support size (number of keys) used for the
// paper's Figures 2 and 5; with it, Figure 5's plateau gains reproduce the
// paper's 230%, 97% and 37%.
const figureSupport = 1_000_000

// figureDelta is delta = 2^-20, used by the paper's code for Figures 4, 8
// and 9.
var figureDelta = math.Pow(2, -20)

// Figures regenerates the paper's Figures 1, 2, 4, 5, 8 (top and bottom) and
// 9 from the exact expressions: it hands each chart to save under a file name
// ending in .svg (package plotsvg renders and writes it) and prints to w the
// numbers the paper quotes next to ours.
func Figures(ctx context.Context, w io.Writer, save func(name string, c Chart) error) error {
	f := &figures{ctx: ctx, w: w, saveChart: save}
	steps := []func() error{f.figure1, f.figure2, f.figure4, f.figure5, f.figure8Top, f.figure8Bottom, f.figure9}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

type figures struct {
	ctx       context.Context
	w         io.Writer
	saveChart func(name string, c Chart) error
	err       error // first write error
}

func (f *figures) printf(format string, args ...any) {
	if f.err == nil {
		_, f.err = fmt.Fprintf(f.w, format, args...)
	}
}

// save hands c to the caller's save function as name.
func (f *figures) save(name string, c Chart) error {
	if err := f.saveChart(name, c); err != nil {
		return err
	}
	f.printf("  wrote %s\n", name)
	return f.err
}

func privacyOf(eps, delta float64) sanitize.Privacy {
	return sanitize.Privacy{Epsilon: eps, Delta: delta}
}

// figure1: reporting probability per frequency without sampling, PWS vs SbH,
// and the ratios quoted in Section 8.2.
func (f *figures) figure1() error {
	f.printf("Figure 1: reporting probability without sampling, PWS (Opt) vs SbH\n")
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	for k, pd := range [][2]float64{{0.1, 0.01}, {0.01, 1e-6}} {
		p := privacyOf(pd[0], pd[1])
		eps, delta := pd[0], pd[1]
		T := sbhThreshold(p)
		n := 2 * int64(math.Ceil(T))
		d, err := Reporting(p, none, n, true)
		if err != nil {
			return err
		}
		L := d.L
		lo, hi := math.Inf(1), 0.0
		for j, i := range d.Frequencies {
			if float64(i) <= L {
				r := d.PWS[j] / d.SbH[j]
				lo, hi = math.Min(lo, r), math.Max(hi, r)
			}
		}
		f.printf("  eps=%g delta=%g: L=%.2f, T=%.2f\n", eps, delta, L, T)
		f.printf("    PWS/SbH ratio for i <= L: ours [%.3f, %.3f]; paper [2, 2/eps] = [2, %g] (exact bound 2/(1-e^-eps) = %.3f)\n",
			lo, hi, 2/eps, 2/(1-math.Exp(-eps)))
		var small []string
		for _, i := range []int64{1, 2, 3, 5, 10} {
			small = append(small, fmt.Sprintf("i=%d: %.3f (2i=%d)", i, d.PWS[i-1]/d.SbH[i-1], 2*i))
		}
		f.printf("    small i, paper ~2i: %s\n", strings.Join(small, ", "))
		full := sanitize.ReportingProbabilities(p, none, int(n))
		at := reachesQ(full, none)
		b, err := newSbH(p, none)
		if err != nil {
			return err
		}
		sbhAt := int64(1)
		for b.Reporting(sbhAt) <= 1-delta {
			sbhAt++
		}
		if at != nil {
			f.printf("    PWS reaches 1 at i=%d (2L+2=%.1f; paper 2L ~ (2/eps)ln(eps/delta) = %.1f)\n", *at, 2*L+2, 2/eps*math.Log(eps/delta))
			f.printf("    SbH phi > 1-delta from i=%d (paper ~ (2/eps)ln(1/delta) = %.1f); ratio %.2f, paper ln(1/delta)/ln(eps/delta) = %.2f\n",
				sbhAt, 2/eps*math.Log(1/delta), float64(sbhAt)/float64(*at), math.Log(1/delta)/math.Log(eps/delta))
		}
		c := ReportingChart(d)
		c.Title = fmt.Sprintf("Figure 1%c: reporting probability, no sampling, ε=%g, δ=%g", 'a'+k, eps, delta)
		if err := f.save(fmt.Sprintf("fig1%c.svg", 'a'+k), c); err != nil {
			return err
		}
	}
	return nil
}

// expectedReported returns the expected numbers of keys of dist reported by
// PWS (pi_i, given for i <= len(pi); beyond, pi_i has reached q_i) and by
// non-private sampling (q_i).
func expectedReported(pi []float64, s sanitize.Sampling, dist []estimate.FrequencyCount) (pws, nonPrivate float64) {
	for _, fc := range dist {
		q := s.Q(fc.Frequency)
		nonPrivate += fc.Keys * q
		if fc.Frequency <= int64(len(pi)) {
			pws += fc.Keys * pi[fc.Frequency-1]
		} else {
			pws += fc.Keys * q
		}
	}
	return pws, nonPrivate
}

// fractions returns the expected fraction of keys of dist reported by PWS,
// sampled-SbH and non-private sampling.
func fractions(p sanitize.Privacy, s sanitize.Sampling, dist []estimate.FrequencyCount) (Comparison, error) {
	keys, maxFreq, err := distStats(dist)
	if err != nil {
		return Comparison{}, err
	}
	pi, _ := pwsReporting(p, s, maxFreq)
	b, err := newSbH(p, s)
	if err != nil {
		return Comparison{}, err
	}
	pk, nk := expectedReported(pi, s, dist)
	return Comparison{PWS: pk / keys, SbH: b.reportedKeys(dist) / keys, NonPrivate: nk / keys}, nil
}

// figure2: fraction of keys reported without sampling for Zipf[1], Zipf[2]
// as delta sweeps 1..1e-8, eps = 0.1.
func (f *figures) figure2() error {
	f.printf("Figure 2: fraction of keys reported, no sampling, eps=0.1, Zipf support n=%d, delta from 1 to 1e-8\n", figureSupport)
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	frac := Chart{Title: "Figure 2: keys reported, no sampling, ε=0.1", XLabel: "δ", YLabel: "fraction of keys reported",
		LogX: true, LogY: true, LegendBottom: true, LegendRight: true}
	gain := Chart{Title: "Figure 2: reporting gain PWS/SbH, ε=0.1", XLabel: "δ", YLabel: "× gain", LogX: true, LegendRight: true}
	for _, alpha := range []float64{1, 2} {
		dist, err := Zipf(alpha, figureSupport)
		if err != nil {
			return err
		}
		var deltas, pws, sbh, ratio []float64
		for k := 0; k <= 16; k++ {
			if err := f.ctx.Err(); err != nil {
				return err
			}
			delta := math.Pow(10, -float64(k)/2)
			c, err := fractions(privacyOf(0.1, delta), none, dist)
			if err != nil {
				return err
			}
			deltas, pws, sbh, ratio = append(deltas, delta), append(pws, c.PWS), append(sbh, c.SbH), append(ratio, c.PWS/c.SbH)
		}
		lo, hi := math.Inf(1), 0.0
		for _, r := range ratio[1:] { // delta < 1
			lo, hi = math.Min(lo, r-1), math.Max(hi, r-1)
		}
		f.printf("  alpha=%g: PWS gain over SbH for 1e-8 <= delta < 1: %.0f%% to %.0f%% (at delta=1: %.0f%%); paper: 20%%-300%% overall\n",
			alpha, 100*lo, 100*hi, 100*(ratio[0]-1))
		frac.Curves = append(frac.Curves,
			Curve{Label: fmt.Sprintf("PWS, Zipf α=%g", alpha), X: deltas, Y: pws},
			Curve{Label: fmt.Sprintf("SbH, Zipf α=%g", alpha), X: deltas, Y: sbh})
		gain.Curves = append(gain.Curves, Curve{Label: fmt.Sprintf("Zipf α=%g", alpha), X: deltas, Y: ratio})
	}
	if err := f.save("fig2.svg", frac); err != nil {
		return err
	}
	return f.save("fig2-gain.svg", gain)
}

// figure4: reporting probability per frequency with ppswor sampling.
func (f *figures) figure4() error {
	p := privacyOf(0.1, figureDelta)
	T := sbhThreshold(p)
	n := 10 * int64(T)
	f.printf("Figure 4: reporting probability with ppswor sampling, eps=0.1, delta=2^-20 (T=%.1f, L=%.1f)\n", T, sanitize.L(p))
	for k, tau := range []float64{0.1, 0.01, 0.001} {
		s := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: tau, Power: 1}
		d, err := Reporting(p, s, n, true)
		if err != nil {
			return err
		}
		full := sanitize.ReportingProbabilities(p, s, int(n))
		at := reachesQ(full, s)
		within := func(y []float64) int64 { // first frequency from which y >= 0.99 q
			from := int64(-1)
			for j := len(d.Frequencies) - 1; j >= 0 && y[j] >= 0.99*d.Q[j]; j-- {
				from = d.Frequencies[j]
			}
			return from
		}
		reach := "not within range"
		if at != nil {
			reach = fmt.Sprintf("i=%d", *at)
		}
		f.printf("  tau=%g: within 1%% of q from i=%d (PWS, equal to q from %s) vs i=%d (sampled-SbH); pi/phi at i=1, 10, 50: %.1f, %.1f, %.2f\n",
			tau, within(d.PWS), reach, within(d.SbH), d.PWS[0]/d.SbH[0], d.PWS[9]/d.SbH[9], d.PWS[49]/d.SbH[49])
		c := ReportingChart(d)
		c.Title = fmt.Sprintf("Figure 4%c: reporting probability, ppswor τ=%g, ε=0.1, δ=2^-20", 'a'+k, tau)
		if err := f.save(fmt.Sprintf("fig4%c.svg", 'a'+k), c); err != nil {
			return err
		}
	}
	return nil
}

// figure5: fraction of keys reported for Zipf[alpha] as the ppswor
// threshold sweeps, eps = 0.1, delta = 0.001.
func (f *figures) figure5() error {
	p := privacyOf(0.1, 0.001)
	f.printf("Figure 5: fraction of keys reported, ppswor, eps=0.1, delta=0.001, Zipf support n=%d, tau from 1e-6 to 1\n", figureSupport)
	paper := map[float64]string{0.5: "230%", 1: "97%", 2: "37%"}
	for _, alpha := range []float64{0.5, 1, 2} {
		dist, err := Zipf(alpha, figureSupport)
		if err != nil {
			return err
		}
		res := &PlanResult{Description: fmt.Sprintf("ppswor, ε=0.1, δ=0.001; Zipf α=%g on %d keys", alpha, figureSupport), SweepScheme: "ppswor"}
		minAll, minAt, minHigh := math.Inf(1), 0.0, math.Inf(1)
		for k := 0; k <= 24; k++ {
			if err := f.ctx.Err(); err != nil {
				return err
			}
			tau := math.Pow(10, -6+float64(k)/4)
			c, err := fractions(p, sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: tau, Power: 1}, dist)
			if err != nil {
				return err
			}
			res.Sweep = append(res.Sweep, PlanPoint{Threshold: tau, ReportedFraction: c})
			g := c.PWS/c.SbH - 1
			if g < minAll {
				minAll, minAt = g, tau
			}
			if tau >= 0.01 {
				minHigh = math.Min(minHigh, g)
			}
		}
		last := res.Sweep[len(res.Sweep)-1].ReportedFraction
		f.printf("  alpha=%g: gain PWS over sampled-SbH at tau=1: %.1f%%, at least %.1f%% for tau in [0.01, 1], at least %.1f%% over the sweep (at tau=%.2g); paper: at least %s\n",
			alpha, 100*(last.PWS/last.SbH-1), 100*minHigh, 100*minAll, minAt, paper[alpha])
		if err := f.save(fmt.Sprintf("fig5-alpha%g.svg", alpha), FractionChart(res)); err != nil {
			return err
		}
	}
	return nil
}

// figure8Top: normalized bias of PWS (MLE, Algorithm 4) with priority
// sampling at several thresholds, and of sampled-SbH (independent of q).
func (f *figures) figure8Top() error {
	p := privacyOf(0.1, figureDelta)
	T := sbhThreshold(p)
	n := 10 * int64(T)
	f.printf("Figure 8 (top): normalized bias Bias_i/i, priority sampling, eps=0.1, delta=2^-20, MLE (Algorithm 4)\n")
	c := Chart{Title: "Figure 8 (top): normalized bias, priority sampling, ε=0.1, δ=2^-20", XLabel: "frequency i",
		YLabel: "bias / i", LogX: true, LegendBottom: true, LegendRight: true}
	report := func(name string, st []estimate.FrequencyStats) {
		from := int64(-1)
		for j := len(st) - 1; j >= 0 && math.Abs(normalizedBias(st[j])) <= 0.05; j-- {
			from = st[j].Frequency
		}
		at := func(i int64) float64 { return normalizedBias(st[i-1]) }
		f.printf("  %-22s |bias|/i <= 5%% from i=%d; bias/i at i=50, 100, 150: %.3f, %.3f, %.3f\n", name, from, at(50), at(100), at(150))
	}
	for _, tau := range []float64{1, 0.01, 1e-4, 1e-6} {
		if err := f.ctx.Err(); err != nil {
			return err
		}
		s := sanitize.Sampling{Scheme: sanitize.SchemePriority, Threshold: tau, Power: 1}
		et, err := pwsEstimatorTable(p, s, sanitize.MethodDiscrete, estimate.G{Kind: estimate.GIdentity}, estimate.MLE, n)
		if err != nil {
			return err
		}
		label := fmt.Sprintf("PWS MLE, τ=%g", tau)
		if tau == 1 {
			label = "PWS MLE, no sampling"
		}
		report(label, et.Frequencies)
		c.Curves = append(c.Curves, statsCurve(label, SeriesOther, et.Frequencies, normalizedBias))
	}
	sb, err := SbHEstimatorRows(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, estimate.G{Kind: estimate.GIdentity}, n)
	if err != nil {
		return err
	}
	report("sampled-SbH (any τ)", sb)
	c.Curves = append(c.Curves, statsCurve("sampled-SbH (any τ)", SeriesSbH, sb, normalizedBias))
	f.printf("  paper: bias diminishes for i >> (2/eps)ln(1/delta) = %.0f; PWS lower at lower frequencies; PWS bias decreases with tau\n",
		2/0.1*math.Log(1/figureDelta))
	return f.save("fig8-top.svg", c)
}

// figure8Bottom: NRMSE of the sum over 2x10^5 keys uniform on [1, 200] as the
// priority threshold sweeps.
func (f *figures) figure8Bottom() error {
	f.printf("Figure 8 (bottom): NRMSE of the sum, 2x10^5 keys uniform on [1, 200], priority sampling, delta=2^-20, MLE (Algorithm 4)\n")
	for _, eps := range []float64{0.5, 0.25, 0.1} {
		p, err := sanitize.NewPrivacy(eps, figureDelta)
		if err != nil {
			return err
		}
		s, err := sanitize.NewSampling(sanitize.SchemePriority, 1, 1, nil)
		if err != nil {
			return err
		}
		res, err := Plan(f.ctx, PlanRequest{Privacy: p, Sampling: s, Method: sanitize.MethodDiscrete,
			Distribution: "uniform", A: 1, B: 200, N: 200_000, Sweep: true, SweepFrom: 1e-6, SweepTo: 1, SweepPoints: 7})
		if err != nil {
			return err
		}
		var rows []string
		best, bestTau := math.Inf(1), 0.0
		for _, pt := range res.Sweep {
			rows = append(rows, fmt.Sprintf("τ=%.0e: %.3g/%.3g/%.3g", pt.Threshold, pt.NRMSE.PWS, pt.NRMSE.SbH, pt.NRMSE.NonPrivate))
			if pt.NRMSE.PWS < best {
				best, bestTau = pt.NRMSE.PWS, pt.Threshold
			}
		}
		f.printf("  eps=%g NRMSE PWS/SbH/non-private: %s; PWS best at tau=%.0e\n", eps, strings.Join(rows, ", "), bestTau)
		c := PlanChart(res)
		c.Title = fmt.Sprintf("Figure 8 (bottom): NRMSE, uniform [1,200] × 1000, priority, ε=%g, δ=2^-20", eps)
		if err := f.save(fmt.Sprintf("fig8-bottom-eps%g.svg", eps), c); err != nil {
			return err
		}
	}
	f.printf("  paper: non-private and SbH error decrease with tau; PWS has its sweet spot midway; PWS beats SbH at tau=1\n")
	return nil
}

// figure9: normalized variance Var_i/i^2 and variance Var_i per frequency.
func (f *figures) figure9() error {
	p := privacyOf(0.1, figureDelta)
	n := 2 * int64(sbhThreshold(p))
	f.printf("Figure 9: variance, eps=0.1, delta=2^-20, MLE (Algorithm 4), frequencies 1..%d\n", n)
	id := estimate.G{Kind: estimate.GIdentity}
	for _, s := range []sanitize.Sampling{{Scheme: sanitize.SchemeNone}, {Scheme: sanitize.SchemePriority, Threshold: 0.01, Power: 1},
		{Scheme: sanitize.SchemePriority, Threshold: 1e-4, Power: 1}} {
		d, err := Estimators(p, s, sanitize.MethodDiscrete, id, estimate.MLE, n, true)
		if err != nil {
			return err
		}
		maxOf := func(st []estimate.FrequencyStats) float64 {
			m := 0.0
			for _, x := range st {
				m = math.Max(m, normalizedVariance(x))
			}
			return m
		}
		maxRef := 0.0
		for j, v := range d.ReferenceVariance {
			maxRef = math.Max(maxRef, v/(d.PWS[j].G*d.PWS[j].G))
		}
		name := "no-sampling"
		if s.Scheme == sanitize.SchemePriority {
			name = fmt.Sprintf("priority-tau%g", s.Threshold)
		}
		at := func(i int64) string {
			return fmt.Sprintf("%.3g/%.3g/%.3g", normalizedVariance(d.PWS[i-1]), normalizedVariance(d.SbH[i-1]),
				d.ReferenceVariance[i-1]/(d.PWS[i-1].G*d.PWS[i-1].G))
		}
		f.printf("  %s: max Var_i/i^2 PWS %.3g, sampled-SbH %.3g, non-private %.3g; PWS/SbH/non-private at i=10: %s, i=100: %s\n",
			name, maxOf(d.PWS), maxOf(d.SbH), maxRef, at(10), at(100))
		c := VarianceChart(d, true)
		c.Title = "Figure 9: normalized variance, " + describe(p, s)
		if err := f.save("fig9-normalized-"+name+".svg", c); err != nil {
			return err
		}
		c = VarianceChart(d, false)
		c.Title = "Figure 9: variance, " + describe(p, s)
		if err := f.save("fig9-variance-"+name+".svg", c); err != nil {
			return err
		}
	}
	f.printf("  paper: normalized variance fractional without sampling, of the order of the non-private one with sampling\n")
	return nil
}
