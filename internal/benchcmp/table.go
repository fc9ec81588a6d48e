package benchcmp

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// RefCalibrationMicros is the machine calibration the absolute
// targets are stated at: BenchmarkMachineCalibration read 1.16-1.19 us on
// the quiet machine of issue 34.
const RefCalibrationMicros = 1.175

// calibrationRow names the calibration's row.
const calibrationRow = "machine calibration (BenchmarkMachineCalibration)"

// Target is one of the targets for a row.
type Target struct {
	// Text is the target as the table prints it.
	Text string
	// Max bounds the median in the row's unit (0: no bound). Times are
	// stated at RefCalibrationMicros and scaled by the run's calibration.
	Max float64
	// Min bounds the median from below (0: no bound), e.g. releases served.
	Min float64
	// NotAboveBase asks for a median no larger than the revision's in the
	// same run.
	NotAboveBase bool
	// Status, when set, is the HTTP status the case must answer with.
	Status float64
}

// Row is one line of the comparison.
type Row struct {
	// Name says what is measured.
	Name string
	// Unit is the unit of the figures: "ms", "us", "MB" or "" (a count).
	Unit string
	// Base is the revision's figure, This the current tree's.
	Base, This Stat
	// Target is the target (nil: none).
	Target *Target
}

// Ratio is This/Base, false when either is missing or exactly one of them
// failed (a 422 against a 200 is no speed-up).
func (r Row) Ratio() (float64, bool) {
	if r.Base.N == 0 || r.This.N == 0 || r.Base.Median == 0 || r.Base.Status != r.This.Status {
		return 0, false
	}
	return r.This.Median / r.Base.Median, true
}

// Verdict judges This against the target, bounds scaled by scale (this
// run's calibration over RefCalibrationMicros): "met", "not met: why", "n/a"
// (no figure), or "" (no target).
func (r Row) Verdict(scale float64) string {
	t := r.Target
	switch {
	case t == nil:
		return ""
	case r.This.N == 0:
		return "n/a"
	case r.This.Status != 0 && (t.Status == 0 || r.This.Status != t.Status):
		return fmt.Sprintf("not met: status %.0f", r.This.Status)
	}
	var why []string
	if t.Max > 0 {
		bound := t.Max
		if r.Unit == "ms" {
			bound *= scale
		}
		if r.This.Median > bound {
			why = append(why, fmt.Sprintf("%.4g %s > %.4g %s", r.This.Median, r.Unit, bound, r.Unit))
		}
	}
	if t.Min > 0 && r.This.Median < t.Min {
		why = append(why, fmt.Sprintf("%.4g < %.4g", r.This.Median, t.Min))
	}
	if t.NotAboveBase {
		switch {
		case r.Base.N == 0:
			if len(why) == 0 {
				return "n/a: no revision figure"
			}
		case r.This.Median > r.Base.Median:
			why = append(why, "slower than the revision")
		}
	}
	if len(why) > 0 {
		return "not met: " + strings.Join(why, ", ")
	}
	return "met"
}

// Rows are the comparison's rows over base (nil: no revision) and this:
// the calibration; per Zipf case present in either, its cold and warm
// release, its first estimate GET after the release and a later one; the
// worst of each over the matrix, and the worst peak RSS; the one-server
// matrix; the tables-route cases. Each row carries its target from issue
// 34 (and issue 22's for the warm estimate GET).
func Rows(base, this *Results) []Row {
	has := func(name string) bool {
		return (base != nil && len(base.Runs[name]) > 0) || len(this.Runs[name]) > 0
	}
	row := func(name, unit, bench, metric string, scale float64, t *Target) Row {
		return Row{Name: name, Unit: unit, Base: base.stat(bench, metric, scale), This: this.stat(bench, metric, scale), Target: t}
	}
	rows := []Row{row(calibrationRow, "us", calibrationCase, "ns/op", 1e-3, nil)}
	var cold, warm, first, next, rss []Row
	var zipf []Row
	for _, eps := range zipfEps {
		for _, tau := range zipfTaus {
			for _, m := range methods {
				label := fmt.Sprintf("eps %s, tau %s, %s", eps, tau, m)
				if c := zipfCase(eps, tau, m, "cold"); has(c) {
					t := &Target{Text: "<= 1 s", Max: 1000}
					switch {
					case eps == "0.1" && m == "max_separation" && tau == "1e-4":
						t = &Target{Text: "<= 1 s (moonshot 0.2 s)", Max: 1000}
					case eps == "0.1" && m == "max_separation" && tau == "1e-5":
						t = &Target{Text: "<= 0.5 s", Max: 500}
					}
					r := row("cold release, "+label, "ms", c, "ns/op", 1e-6, t)
					cold = append(cold, r)
					zipf = append(zipf, r)
				}
				if c := zipfCase(eps, tau, m, "warm"); has(c) {
					r := row("warm release, "+label, "ms", c, "ns/op", 1e-6, &Target{Text: "<= 100 ms", Max: 100})
					warm = append(warm, r)
					zipf = append(zipf, r)
				}
				if c := zipfCase(eps, tau, m, "estimate"); has(c) {
					r := row("first estimate GET after the release, "+label, "ms", c, "first-get-ms", 1, &Target{Text: "<= 50 ms", Max: 50})
					n := row("first estimate GET after the next release of the same parameters, "+label, "ms", c, "next-first-get-ms", 1, &Target{Text: "<= 50 ms", Max: 50})
					first, next = append(first, r), append(next, n)
					zipf = append(zipf, r, n,
						row("estimate GET, warm, "+label, "ms", c, "ns/op", 1e-6, &Target{Text: "<= 20 ms (issue 22)", Max: 20}))
				}
				for _, p := range zipfPhases {
					if c := zipfCase(eps, tau, m, p); has(c) {
						rss = append(rss, row("", "MB", c, "peak-MB", 1, nil))
					}
				}
			}
		}
	}
	rows = append(rows, zipf...)
	for _, w := range []struct {
		name string
		rows []Row
		unit string
		t    *Target
	}{
		{"cold release, worst of %d", cold, "ms", &Target{Text: "<= 1 s", Max: 1000}},
		{"warm release, worst of %d", warm, "ms", &Target{Text: "<= 100 ms", Max: 100}},
		{"first estimate GET after the release, worst of %d", first, "ms", &Target{Text: "<= 50 ms", Max: 50}},
		{"first estimate GET after the next release of the same parameters, worst of %d", next, "ms", &Target{Text: "<= 50 ms", Max: 50}},
		{"peak RSS of one case, worst of %d (fresh server per case)", rss, "MB", &Target{Text: "<= 1 GB", Max: 1000}},
	} {
		if len(w.rows) == 0 {
			continue
		}
		var bs, ts []Stat
		for _, r := range w.rows {
			bs, ts = append(bs, r.Base), append(ts, r.This)
		}
		b, _ := worst(bs)
		t, n := worst(ts)
		rows = append(rows, Row{Name: fmt.Sprintf(w.name, n), Unit: w.unit, Base: b, This: t, Target: w.t})
	}
	if has(matrixCase) {
		rows = append(rows,
			row("one server, the 18 releases each with its first estimate GET: whole matrix", "ms", matrixCase, "ns/op", 1e-6, nil),
			row("one server: releases served (201)", "", matrixCase, "served", 1, &Target{Text: "18 of 18", Min: 18}),
			row("one server: slowest release", "ms", matrixCase, "release-max-ms", 1, &Target{Text: "<= 1 s", Max: 1000}),
			row("one server: slowest first estimate GET, after whatever was released before", "ms", matrixCase, "first-get-max-ms", 1, &Target{Text: "<= 50 ms", Max: 50}),
			row("one server: peak RSS over the matrix", "MB", matrixCase, "peak-MB", 1, &Target{Text: "<= 1 GB", Max: 1000}))
	}
	for _, c := range TablesRouteCases() {
		name := tablesPrefix + c.Name
		if !has(name) {
			continue
		}
		var t *Target
		switch {
		case strings.HasPrefix(c.Name, "f=1e6/") && strings.HasSuffix(c.Name, "=discrete"):
			t = &Target{Text: "<= revision, and <= 1 s", Max: 1000, NotAboveBase: true, Status: 200}
		case strings.HasPrefix(c.Name, "f=1e6/"):
			t = &Target{Text: "<= revision (no table path slower)", NotAboveBase: true, Status: 200}
		case strings.HasPrefix(c.Name, "f=1e7/"):
			t = &Target{Text: "200 in <= 50 ms", Max: 50, Status: 200}
		case strings.HasPrefix(c.Name, "f=1e9/"):
			t = &Target{Text: "200 in <= 100 ms", Max: 100, Status: 200}
		}
		rows = append(rows, row("GET /v1/tables/frequencies "+strings.ReplaceAll(c.Name, "/", " "), "ms", name, "ns/op", 1e-6, t))
	}
	return rows
}

// Scale is this run's calibration over RefCalibrationMicros (1 when the
// current tree's calibration is missing): time targets are multiplied by it.
func Scale(rows []Row) float64 {
	for _, r := range rows {
		if r.Name == calibrationRow && r.This.N > 0 {
			return r.This.Median / RefCalibrationMicros
		}
	}
	return 1
}

// Write prints rows as a Markdown table headed by baseLabel (the
// revision) and "this tree", then the calibration note.
func Write(w io.Writer, baseLabel string, rows []Row) error {
	scale := Scale(rows)
	var b strings.Builder
	fmt.Fprintf(&b, "| case | %s | this tree | ratio (this/%s) | target | verdict |\n", baseLabel, baseLabel)
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ratio := "-"
		if q, ok := r.Ratio(); ok {
			ratio = fmt.Sprintf("%.2f", q)
		}
		target := ""
		if r.Target != nil {
			target = r.Target.Text
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Name, cell(r.Base, r.Unit), cell(r.This, r.Unit), ratio, target, r.Verdict(scale))
	}
	fmt.Fprintf(&b, "\nTime targets are the issue's at a calibration of %.3f us; this tree's calibration in this run", RefCalibrationMicros)
	if scale == 1 {
		b.WriteString(" is missing, so they are judged as stated.\n")
	} else {
		fmt.Fprintf(&b, " was %.3f us, so they are judged x%.2f (1 s -> %s).\n", scale*RefCalibrationMicros, scale, format(1000*scale, "ms"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell is a Stat as the table prints it: the median, the range over more
// than one run, a failed status.
func cell(s Stat, unit string) string {
	if s.N == 0 {
		return "n/a"
	}
	c := format(s.Median, unit)
	if s.N > 1 {
		c += fmt.Sprintf(" (%s-%s, %d runs)", num(s.Min, unit), num(s.Max, unit), s.N)
	}
	if s.Status != 0 {
		c += fmt.Sprintf(" [%.0f]", s.Status)
	}
	return c
}

// format prints v with its unit (see num).
func format(v float64, unit string) string {
	if unit == "" {
		return num(v, unit)
	}
	return num(v, unit) + " " + unit
}

// num prints v to about three significant digits (us to the ns, counts
// whole).
func num(v float64, unit string) string {
	switch a := math.Abs(v); {
	case unit == "" && v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case unit == "us":
		return fmt.Sprintf("%.3f", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
