package planner

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// maxCurveFrequency bounds n of the per-frequency curves (reporting, bias,
// variance).
const maxCurveFrequency = 1 << 20

// curvePoints is the number of frequencies at which curves are evaluated
// when n is larger: every frequency up to it, log-spaced beyond.
const curvePoints = 2000

// ReportingData holds the per-frequency reporting probabilities that
// PlotReporting draws. Index k of Q, PWS and SbH is frequency Frequencies[k].
type ReportingData struct {
	Privacy     sanitize.Privacy
	Sampling    sanitize.Sampling
	L           float64
	Frequencies []int64
	Q           []float64 // q_i, the client's sampling probability
	PWS         []float64 // pi_i of Algorithm 3
	SbH         []float64 // phi_i of (sampled-)SbH; nil without the baseline
}

// EstimatorData holds the per-frequency statistics of the estimate of g
// that PlotBias and PlotVariance draw.
type EstimatorData struct {
	Privacy   sanitize.Privacy
	Sampling  sanitize.Sampling
	Method    sanitize.Method
	G         estimate.G
	Estimator estimate.Estimator
	PWS       []estimate.FrequencyStats // frequencies 1..n, thinned as in ReportingData
	SbH       []estimate.FrequencyStats // same frequencies; nil without the baseline
	// ReferenceVariance is the variance g(i)^2 (1-q_i)/q_i of the
	// non-private estimate g(w)/q_w (eq. 8) at the same frequencies.
	ReferenceVariance []float64
}

// plotFrequencies returns 1..n when n <= curvePoints, else every frequency
// up to curvePoints/2 and log-spaced ones up to n.
func plotFrequencies(n int64) []int64 {
	if n <= curvePoints {
		out := make([]int64, n)
		for j := range out {
			out[j] = int64(j) + 1
		}
		return out
	}
	dense := int64(curvePoints / 2)
	out := make([]int64, 0, curvePoints)
	for i := int64(1); i <= dense; i++ {
		out = append(out, i)
	}
	lo, hi := math.Log(float64(dense)), math.Log(float64(n))
	for k := 1; k <= curvePoints/2; k++ {
		i := int64(math.Round(math.Exp(lo + (hi-lo)*float64(k)/float64(curvePoints/2))))
		if i > out[len(out)-1] {
			out = append(out, min(i, n))
		}
	}
	if out[len(out)-1] != n {
		out = append(out, n)
	}
	return out
}

func checkCurveN(n int64) error {
	if n < 1 || n > maxCurveFrequency {
		return &checks.FieldError{Field: "max_frequency", Reason: "must be an integer from 1 to " + strconv.Itoa(maxCurveFrequency)}
	}
	return nil
}

// Reporting computes q_i, the PWS reporting probabilities pi_i (Algorithm
// 3) and, with baseline, the sampled-SbH probabilities phi_i for
// frequencies 1..n (at most curvePoints of them, log-spaced beyond).
func Reporting(p sanitize.Privacy, s sanitize.Sampling, n int64, baseline bool) (*ReportingData, error) {
	if err := checkCurveN(n); err != nil {
		return nil, err
	}
	pi := sanitize.ReportingProbabilities(p, s, int(n))
	if len(pi) != int(n) {
		return nil, errors.New("planner: computing reporting probabilities failed (invalid parameters)")
	}
	return ReportingFrom(p, s, pi, baseline)
}

// ReportingFrom is Reporting from already computed (e.g. cached)
// pi_1..pi_n = sanitize.ReportingProbabilities(p, s, n).
func ReportingFrom(p sanitize.Privacy, s sanitize.Sampling, pi []float64, baseline bool) (*ReportingData, error) {
	n := int64(len(pi))
	if err := checkCurveN(n); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	freqs := plotFrequencies(n)
	d := &ReportingData{Privacy: p, Sampling: s, L: sanitize.L(p), Frequencies: freqs,
		Q: make([]float64, len(freqs)), PWS: make([]float64, len(freqs))}
	var b *SbH
	if baseline {
		var err error
		if b, err = newSbH(p, s); err != nil {
			return nil, err
		}
		d.SbH = make([]float64, len(freqs))
	}
	for k, i := range freqs {
		d.Q[k] = s.Q(i)
		d.PWS[k] = pi[i-1]
		if b != nil {
			d.SbH[k] = b.Reporting(i)
		}
	}
	return d, nil
}

// pwsEstimatorTable builds the estimator table of Section 7 for PWS with
// the given sanitizer, covering frequencies 1..n. The table gets a
// stationary tail (statistics beyond n) only when q_n = 1: finding the
// stationary row of a scheme whose q reaches 1 much later (ppswor with a
// small threshold) would mean computing every row up to there.
func pwsEstimatorTable(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method, g estimate.G, est estimate.Estimator, n int64) (*estimate.Table, error) {
	tbl, err := sanitize.NewTable(p, s, m)
	if err != nil {
		return nil, fmt.Errorf("planner: sanitizer table: %w", err)
	}
	var src estimate.RowSource = tbl
	if s.Q(n) < 1 {
		src = rowsOnly{tbl}
	}
	et, err := estimate.Build(src, estimate.Spec{MaxFrequency: n, G: g, Estimator: est})
	if err != nil {
		return nil, fmt.Errorf("planner: estimator table: %w", err)
	}
	return et, nil
}

// rowsOnly hides a table's stationarity probe from estimate.Build.
type rowsOnly struct{ t *sanitize.Table }

// Rows streams rows from..to of the table.
func (r rowsOnly) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return r.t.Rows(from, to, fn)
}

// Estimators computes the per-frequency bias and variance of the PWS
// estimate (method, g, estimator), of sampled-SbH with baseline, and the
// non-private reference variance, for frequencies 1..n (at most
// curvePoints of them, log-spaced beyond).
func Estimators(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method, g estimate.G, est estimate.Estimator, n int64, baseline bool) (*EstimatorData, error) {
	if err := checkCurveN(n); err != nil {
		return nil, err
	}
	et, err := pwsEstimatorTable(p, s, m, g, est, n)
	if err != nil {
		return nil, err
	}
	return EstimatorsFrom(et, p, s, m, baseline)
}

// EstimatorsFrom is Estimators from an already built (e.g. cached)
// estimator table of the sanitizer (p, s, m); its G, Estimator and
// MaxFrequency give g, the estimator and n.
func EstimatorsFrom(et *estimate.Table, p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method, baseline bool) (*EstimatorData, error) {
	n := et.MaxFrequency
	if err := checkCurveN(n); err != nil {
		return nil, err
	}
	if int64(len(et.Frequencies)) != n {
		return nil, errors.New("planner: estimator table is inconsistent")
	}
	ref, err := estimate.NewNonPrivateBaseline(et.G, s)
	if err != nil {
		return nil, err
	}
	freqs := plotFrequencies(n)
	d := &EstimatorData{Privacy: p, Sampling: s, Method: m, G: et.G, Estimator: et.Estimator,
		PWS: make([]estimate.FrequencyStats, len(freqs)), ReferenceVariance: make([]float64, len(freqs))}
	var b *SbH
	if baseline {
		if b, err = newSbH(p, s); err != nil {
			return nil, err
		}
		d.SbH = make([]estimate.FrequencyStats, len(freqs))
	}
	for k, i := range freqs {
		d.PWS[k] = et.Frequencies[i-1]
		d.ReferenceVariance[k] = ref.Variance(i)
		if b != nil {
			if d.SbH[k], err = b.stats(et.G, i); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// describe returns a short description of the parameters for chart titles.
func describe(p sanitize.Privacy, s sanitize.Sampling) string {
	var samp string
	switch s.Scheme {
	case sanitize.SchemePPSWOR, sanitize.SchemePriority:
		samp = fmt.Sprintf("%s τ=%s", s.Scheme, fmtNum(s.Threshold))
		if s.Power != 1 {
			samp += " p=" + fmtNum(s.Power)
		}
	case sanitize.SchemeCustom:
		samp = "custom q"
	default:
		samp = "no sampling"
	}
	return fmt.Sprintf("%s, ε=%s, δ=%s", samp, fmtNum(p.Epsilon), fmtNum(p.Delta))
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func sbhName(s sanitize.Sampling) string {
	if s.Scheme == sanitize.SchemeNone {
		return "SbH"
	}
	return "sampled-SbH"
}

func freqsFloat(fs []int64) []float64 {
	out := make([]float64, len(fs))
	for j, f := range fs {
		out[j] = float64(f)
	}
	return out
}

// ReportingChart is the reporting chart: q_i (with sampling),
// pi_i and phi_i against the frequency, on log-log axes as in the paper's
// Figures 1 and 4.
func ReportingChart(d *ReportingData) Chart {
	x := freqsFloat(d.Frequencies)
	c := Chart{Title: "Reporting probability: " + describe(d.Privacy, d.Sampling),
		XLabel: "frequency i", YLabel: "reporting probability", LogX: true, LogY: true, LegendBottom: true, LegendRight: true}
	if d.Sampling.Scheme != sanitize.SchemeNone {
		c.Curves = append(c.Curves, Curve{Label: "non-private q_i", Series: SeriesNonPrivate, X: x, Y: d.Q})
	}
	c.Curves = append(c.Curves, Curve{Label: "PWS π_i", Series: SeriesPWS, X: x, Y: d.PWS})
	if d.SbH != nil {
		c.Curves = append(c.Curves, Curve{Label: sbhName(d.Sampling) + " φ_i", Series: SeriesSbH, X: x, Y: d.SbH})
	}
	return c
}

// statsCurve maps per-frequency statistics to a curve.
func statsCurve(label string, series Series, st []estimate.FrequencyStats, y func(estimate.FrequencyStats) float64) Curve {
	c := Curve{Label: label, Series: series, X: make([]float64, len(st)), Y: make([]float64, len(st))}
	for j, s := range st {
		c.X[j], c.Y[j] = float64(s.Frequency), y(s)
	}
	return c
}

// normalizedBias returns Bias_i / g(i).
func normalizedBias(s estimate.FrequencyStats) float64 { return s.Bias / s.G }

// normalizedVariance returns Var_i / g(i)^2.
func normalizedVariance(s estimate.FrequencyStats) float64 { return s.Variance / (s.G * s.G) }

func pwsLabel(est estimate.Estimator) string {
	switch est {
	case estimate.BiasedDown:
		return "PWS (biased-down)"
	case estimate.Unbiased:
		return "PWS (unbiased)"
	}
	return "PWS (MLE)"
}

// BiasChart is the bias chart: the normalized bias Bias_i/g(i) of
// the PWS and sampled-SbH estimates against the frequency (Figure 8, top).
func BiasChart(d *EstimatorData) Chart {
	c := Chart{Title: fmt.Sprintf("Normalized bias of g=%s: %s", d.G, describe(d.Privacy, d.Sampling)),
		XLabel: "frequency i", YLabel: "bias / g(i)", LogX: true, LegendBottom: true, LegendRight: true}
	c.Curves = append(c.Curves, statsCurve(pwsLabel(d.Estimator), SeriesPWS, d.PWS, normalizedBias))
	if d.SbH != nil {
		c.Curves = append(c.Curves, statsCurve(sbhName(d.Sampling), SeriesSbH, d.SbH, normalizedBias))
	}
	return c
}

// VarianceChart is the variance chart: Var_i/g(i)^2 (normalized) or
// Var_i of the PWS, sampled-SbH and non-private estimates against the
// frequency, log-scaled (Figure 9).
func VarianceChart(d *EstimatorData, normalized bool) Chart {
	y, label := func(s estimate.FrequencyStats) float64 { return s.Variance }, "variance"
	if normalized {
		y, label = normalizedVariance, "variance / g(i)²"
	}
	c := Chart{Title: fmt.Sprintf("Variance of g=%s: %s", d.G, describe(d.Privacy, d.Sampling)),
		XLabel: "frequency i", YLabel: label, LogX: true, LogY: true, LegendBottom: true}
	if d.Sampling.Scheme != sanitize.SchemeNone && len(d.ReferenceVariance) == len(d.PWS) {
		ref := Curve{Label: "non-private", Series: SeriesNonPrivate, X: make([]float64, len(d.PWS)), Y: make([]float64, len(d.PWS))}
		for j, s := range d.PWS {
			ref.X[j] = float64(s.Frequency)
			ref.Y[j] = d.ReferenceVariance[j]
			if normalized {
				ref.Y[j] /= s.G * s.G
			}
		}
		c.Curves = append(c.Curves, ref)
	}
	c.Curves = append(c.Curves, statsCurve(pwsLabel(d.Estimator), SeriesPWS, d.PWS, y))
	if d.SbH != nil {
		c.Curves = append(c.Curves, statsCurve(sbhName(d.Sampling), SeriesSbH, d.SbH, y))
	}
	return c
}
