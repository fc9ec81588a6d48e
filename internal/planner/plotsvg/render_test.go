package plotsvg

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/sanitize"
)

func mustPrivacy(t *testing.T, eps, delta float64) sanitize.Privacy {
	t.Helper()
	p, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkSVG parses b as XML and checks it is a self-contained SVG document
// with drawn paths and (when text is set) that text appears in it.
func checkSVG(t *testing.T, b []byte, text ...string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root, paths := "", 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		switch se.Name.Local {
		case "path":
			paths++
		case "image", "script", "use":
			t.Fatalf("SVG contains a <%s> element", se.Name.Local)
		}
		for _, a := range se.Attr {
			if a.Name.Space != "xmlns" && a.Name.Local != "xmlns" && strings.Contains(a.Value, "http") {
				t.Fatalf("SVG references an external resource: %s=%q", a.Name.Local, a.Value)
			}
		}
	}
	if root != "svg" || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("root element is %q, want svg", root)
	}
	if paths < 3 {
		t.Fatalf("only %d path elements", paths)
	}
	for _, s := range text {
		if !bytes.Contains(b, []byte(s)) {
			t.Fatalf("SVG lacks %q", s)
		}
	}
}

// TestPlotsAreValidSVG renders every planner plot from computed data and
// checks each is a well-formed, self-contained SVG with paths and legend.
func TestPlotsAreValidSVG(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-4)
	s, err := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.05, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := planner.Reporting(p, s, 200, true)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Reporting(rep)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg, "PWS", "sampled-SbH", "non-private")

	est, err := planner.Estimators(p, s, sanitize.MethodMaxSeparation, estimate.G{Kind: estimate.GIdentity}, estimate.MLE, 150, true)
	if err != nil {
		t.Fatal(err)
	}
	svg, err = Bias(est)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg, "PWS (MLE)", "sampled-SbH")
	for _, norm := range []bool{true, false} {
		if svg, err = Variance(est, norm); err != nil {
			t.Fatal(err)
		}
		checkSVG(t, svg, "non-private")
	}

	priority, err := sanitize.NewSampling(sanitize.SchemePriority, 0.01, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := planner.Plan(context.Background(), planner.PlanRequest{Privacy: p, Sampling: priority, Distribution: "uniform", A: 1, B: 50,
		Sweep: true, SweepPoints: 4})
	if err != nil {
		t.Fatal(err)
	}
	if svg, err = NRMSE(res); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg, "NRMSE")
	if svg, err = reportedFraction(res); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg)
	if _, err := NRMSE(&planner.PlanResult{}); err == nil {
		t.Fatal("a plan without sweep was plotted")
	}
}

// TestChartDegenerateData checks that empty data, non-positive values on
// log axes, NaN and constant curves still render (no gonum panic).
func TestChartDegenerateData(t *testing.T) {
	t.Parallel()
	for _, c := range []planner.Chart{
		{Title: "empty", LogX: true, LogY: true},
		{Title: "nonpositive", LogY: true, Curves: []planner.Curve{{Label: "zero", X: []float64{1, 2}, Y: []float64{0, -1}}}},
		{Title: "nan", Curves: []planner.Curve{{Label: "nan", X: []float64{1, 2, 3}, Y: []float64{math.NaN(), 1, math.Inf(1)}}}},
		{Title: "constant", LogX: true, LogY: true, Curves: []planner.Curve{{Label: "c", X: []float64{5, 5}, Y: []float64{2, 2}}}},
	} {
		t.Run(c.Title, func(t *testing.T) {
			svg, err := render(c)
			if err != nil {
				t.Fatalf("%s: %v", c.Title, err)
			}
			checkSVG(t, svg, c.Title)
		})
	}
}

// TestThinKeepsEndsAndBound checks curve thinning.
func TestThinKeepsEndsAndBound(t *testing.T) {
	t.Parallel()
	pts := make(plotter.XYs, 100000)
	for j := range pts {
		pts[j] = plotter.XY{X: float64(j + 1), Y: float64(j)}
	}
	for _, logX := range []bool{false, true} {
		out := thin(pts, 500, logX)
		if len(out) > 501 || out[0] != pts[0] || out[len(out)-1] != pts[len(pts)-1] {
			t.Fatalf("logX=%v: %d points, ends %v %v", logX, len(out), out[0], out[len(out)-1])
		}
		for j := 1; j < len(out); j++ {
			if out[j].X <= out[j-1].X {
				t.Fatalf("logX=%v: thinned points out of order", logX)
			}
		}
	}
}

// TestSaveToWritesFigure checks that the file writer used by WriteFigures
// renders a figure chart into dir/name as a self-contained SVG carrying the
// chart's title.
func TestSaveToWritesFigure(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.1, 0.01)
	d, err := planner.Reporting(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	c := planner.ReportingChart(d)
	c.Title = "Figure 1a: reporting probability"
	dir := t.TempDir()
	if err := saveTo(dir)("fig1a.svg", c); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fig1a.svg"))
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b, "Figure 1")
	if err := saveTo(filepath.Join(dir, "missing"))("x.svg", c); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
