package plotsvg

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pwsd/pwsd/internal/planner"
)

// TestStyleOneColourPerMethod: a method has one colour whatever its place
// among a chart's curves, the colours differ, and the other curves never
// take a method's colour.
func TestStyleOneColourPerMethod(t *testing.T) {
	t.Parallel()
	methods := []planner.Series{planner.SeriesNonPrivate, planner.SeriesPWS, planner.SeriesSbH}
	seen := map[[3]uint8]planner.Series{}
	for _, s := range methods {
		want, _ := style(s, 0)
		for others := range 10 {
			if got, _ := style(s, others); got != want {
				t.Fatalf("series %d: colour %v after %d other curves, %v first", s, got, others, want)
			}
		}
		key := [3]uint8{want.R, want.G, want.B}
		if prev, dup := seen[key]; dup {
			t.Fatalf("series %d and %d share the colour %v", s, prev, want)
		}
		seen[key] = s
	}
	for others := range 2 * len(palette) {
		c, _ := style(planner.SeriesOther, others)
		if s, taken := seen[[3]uint8{c.R, c.G, c.B}]; taken {
			t.Fatalf("other curve %d drawn in the colour of series %d", others, s)
		}
	}
}

// TestWrapTitle: a title too wide for the chart is broken into lines that
// each fit (with the slack for wider browser fonts), after "what:" first;
// a short one is left alone.
func TestWrapTitle(t *testing.T) {
	t.Parallel()
	sty := plot.New().Title.TextStyle
	width := chartWidth - rightMargin
	long := "NRMSE of the sum: ppswor τ=0.01, ε=0.1, δ=0.001; Zipf α=1 on 1000 keys; g=identity, estimator mle, method max_separation"
	for _, tc := range []struct {
		title string
		lines int
	}{
		{"Keys reported", 1},
		{long, 3},
	} {
		got := wrapTitle(sty, tc.title, width)
		lines := strings.Split(got, "\n")
		if len(lines) < tc.lines {
			t.Fatalf("%q: %d lines, want at least %d", tc.title, len(lines), tc.lines)
		}
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(tc.title), " ") {
			t.Fatalf("wrapping changed the words: %q", got)
		}
		for _, l := range lines {
			if w := sty.Width(l); w > vg.Length(float64(width)*(1-titleSlack)) {
				t.Fatalf("line %q is %v wide, more than %v", l, w, width)
			}
		}
		if tc.lines > 1 && lines[0] != "NRMSE of the sum:" {
			t.Fatalf("first line %q, want the chart's name", lines[0])
		}
	}
}

// TestLegendBelowThePlot: the legend gets its own strip under the plot (the
// SVG is taller by one row per entry), so it never covers a curve.
func TestLegendBelowThePlot(t *testing.T) {
	t.Parallel()
	c := planner.Chart{Title: "t", Curves: []planner.Curve{
		{Label: "a", Series: planner.SeriesPWS, X: []float64{1, 2}, Y: []float64{1, 2}},
		{Label: "b", Series: planner.SeriesSbH, X: []float64{1, 2}, Y: []float64{2, 1}},
	}}
	svg, err := render(c)
	if err != nil {
		t.Fatal(err)
	}
	wantH := chartHeight + 2*legendRow + 2*legendPad
	if want := fmt.Sprintf(`height="%gpt"`, wantH.Points()); !strings.Contains(string(svg[:300]), want) {
		t.Fatalf("SVG header %q, want %s (the chart and a legend strip of two rows)", svg[:200], want)
	}
	_, _, entries, err := build(c)
	if err != nil || entries != 2 {
		t.Fatalf("legend entries %d (%v), want 2", entries, err)
	}
	if !strings.Contains(string(svg), fontFamily[len("font-family:"):len(fontFamily)-1]) {
		t.Fatal("the SVG does not name the fallback fonts")
	}
}
