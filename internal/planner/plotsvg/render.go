package plotsvg

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pwsd/pwsd/internal/planner"
)

// fontFamily is the CSS font family of the charts' text: gonum's
// Liberation Serif, else a serif of the same metrics.
const fontFamily = `font-family:'Liberation Serif','Times New Roman',Times,serif;`

// Chart size and density.
const (
	chartWidth  = 6 * vg.Inch
	chartHeight = 4 * vg.Inch
	// maxCurvePoints bounds the points drawn per curve; denser data is
	// thinned (log-spaced on a log axis), which keeps an SVG small.
	maxCurvePoints = 1500
	// markerPoints is the largest curve drawn with point markers too.
	markerPoints = 40
)

// seriesColours draws each method in one colour in every chart
// (colour-blind safe); the non-private reference is also dashed.
var seriesColours = map[planner.Series]color.RGBA{
	planner.SeriesPWS:        {0, 114, 178, 255},   // blue
	planner.SeriesSbH:        {213, 94, 0, 255},    // vermillion
	planner.SeriesNonPrivate: {0, 0, 0, 255},       // black
	planner.SeriesDwork:      {0, 158, 115, 255},   // green
	planner.SeriesOptBern:    {204, 121, 167, 255}, // purple
	planner.SeriesPPDS:       {230, 159, 0, 255},   // orange
}

// palette holds the colours of the other curves, in order: none of the
// methods' colours.
var palette = []color.RGBA{
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{230, 159, 0, 255},   // orange
	{86, 180, 233, 255},  // sky
	{120, 120, 120, 255}, // grey
}

// style returns the colour and dashes of the curve at index k of others
// (the curves without a method so far).
func style(s planner.Series, others int) (color.RGBA, []vg.Length) {
	if col, ok := seriesColours[s]; ok {
		if s == planner.SeriesNonPrivate {
			return col, []vg.Length{vg.Points(5), vg.Points(3)}
		}
		return col, nil
	}
	if others >= len(palette) {
		return palette[others%len(palette)], []vg.Length{vg.Points(4), vg.Points(2)}
	}
	return palette[others], nil
}

// Layout: the legend sits in a strip below the plot, never over a line,
// and the plot keeps a right margin for the last tick label.
const (
	legendRow   = 14 * vg.Length(1) // points per legend entry
	titleSlack  = 0.3
	legendPad   = 6 * vg.Length(1)
	rightMargin = 14 * vg.Length(1)
)

// render draws the chart as a self-contained SVG document (gonum.org/v1/plot,
// vgsvg backend, default fonts, no external assets).
func render(c planner.Chart) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil { // gonum/plot panics on degenerate input
			out, err = nil, fmt.Errorf("plotsvg: rendering chart %q: %v", c.Title, r)
		}
	}()
	p, legend, entries, err := build(c)
	if err != nil {
		return nil, err
	}
	strip := vg.Length(0)
	if entries > 0 {
		strip = vg.Length(entries)*legendRow + 2*legendPad
	}
	canvas := vgsvg.NewWith(vgsvg.UseWH(chartWidth, chartHeight+strip))
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, -rightMargin, strip, 0))
	if strip > 0 {
		area := dc
		area.Max.Y = area.Min.Y + strip
		legend.Draw(draw.Crop(area, legendPad, 0, legendPad, -legendPad))
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plotsvg: writing svg: %w", err)
	}
	// gonum names its font alone; a browser without it would fall back to
	// its default sans, much wider than the metrics the layout used.
	return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Serif;"), []byte(fontFamily)), nil
}

// build builds the gonum plot of the chart and its legend, drawn apart.
func build(c planner.Chart) (p *plot.Plot, legend plot.Legend, entries int, err error) {
	p = plot.New()
	p.Title.Text = wrapTitle(p.Title.TextStyle, c.Title, chartWidth-rightMargin)
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	legend = plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.Padding = vg.Points(3)
	p.Add(plotter.NewGrid())
	others := 0

	var xs, ys []float64
	for _, cv := range c.Curves {
		pts := points(c, cv)
		if len(pts) == 0 {
			continue
		}
		for _, pt := range pts {
			xs = append(xs, pt.X)
			ys = append(ys, pt.Y)
		}
		col, dashes := style(cv.Series, others)
		if _, ok := seriesColours[cv.Series]; !ok {
			others++
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, legend, 0, fmt.Errorf("plotsvg: chart curve %q: %w", cv.Label, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		line.Dashes = dashes
		if cv.Dashed && dashes == nil {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		if len(pts) <= markerPoints {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, legend, 0, fmt.Errorf("plotsvg: chart curve %q: %w", cv.Label, err)
			}
			sc.Color = col
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			p.Add(sc)
		}
		if cv.Label != "" {
			legend.Add(cv.Label, line)
			entries++
		}
	}
	setRange(&p.X, xs, c.LogX, 0, 0)
	setRange(&p.Y, ys, c.LogY, c.YMin, c.YMax)
	return p, legend, entries, nil
}

// wrapTitle breaks a title wider than width into lines at spaces, after
// its first ": " first (the charts' titles are "what: parameters"), so
// that no line is clipped. Browsers may draw the SVG's text in a wider
// font than gonum measures: lines keep titleSlack of the width free.
func wrapTitle(sty text.Style, title string, width vg.Length) string {
	width = vg.Length(float64(width) * (1 - titleSlack))
	if sty.Width(title) <= width {
		return title
	}
	var lines []string
	head, tail, ok := strings.Cut(title, ": ")
	if ok && sty.Width(head+":") <= width {
		lines = append(lines, head+":")
	} else {
		tail = title
	}
	line := ""
	for _, w := range strings.Fields(tail) {
		if line != "" && sty.Width(line+" "+w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// points returns the drawable points of a curve of c, thinned.
func points(c planner.Chart, cv planner.Curve) plotter.XYs {
	n := min(len(cv.X), len(cv.Y))
	pts := make(plotter.XYs, 0, n)
	for j := 0; j < n; j++ {
		x, y := cv.X[j], cv.Y[j]
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		if (c.LogX && x <= 0) || (c.LogY && y <= 0) {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	return thin(pts, maxCurvePoints, c.LogX)
}

// thin keeps at most limit points of pts (sorted by X when logX), spread
// evenly in X (in log X on a log axis); the first and last points are kept.
func thin(pts plotter.XYs, limit int, logX bool) plotter.XYs {
	if len(pts) <= limit {
		return pts
	}
	sorted := slices.IsSortedFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	out := make(plotter.XYs, 0, limit)
	if !sorted || !logX {
		for k := 0; k < limit; k++ {
			out = append(out, pts[k*(len(pts)-1)/(limit-1)])
		}
		return out
	}
	lo, hi := math.Log(pts[0].X), math.Log(pts[len(pts)-1].X)
	last := -1
	for k := 0; k < limit; k++ {
		x := math.Exp(lo + (hi-lo)*float64(k)/float64(limit-1))
		j, _ := slices.BinarySearchFunc(pts, x, func(p plotter.XY, x float64) int { return cmp.Compare(p.X, x) })
		j = min(j, len(pts)-1)
		if j > last {
			out = append(out, pts[j])
			last = j
		}
	}
	if last != len(pts)-1 {
		out = append(out, pts[len(pts)-1])
	}
	return out
}

// setRange sets an axis' scale and range from the data it shows.
func setRange(ax *plot.Axis, vs []float64, logScale bool, fixMin, fixMax float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if fixMax > fixMin {
		lo, hi = fixMin, fixMax
	}
	if len(vs) == 0 && !(fixMax > fixMin) {
		lo, hi, logScale = 0, 1, false
	}
	if logScale && lo <= 0 {
		logScale = false
	}
	if hi <= lo {
		if logScale {
			lo, hi = lo/2, hi*2
		} else {
			lo, hi = lo-1, hi+1
		}
	}
	if logScale {
		ax.Scale = plot.LogScale{}
		ax.Tick.Marker = logTicks{}
	}
	ax.Min, ax.Max = lo, hi
}

// logTicks are plot.LogTicks with labels printed as round powers of ten.
type logTicks struct{}

// Ticks returns the tick marks of a log axis from min to max.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for j := range ticks {
		if ticks[j].Label != "" {
			e := math.Round(math.Log10(ticks[j].Value))
			if e >= -3 && e <= 5 {
				ticks[j].Label = strconv.FormatFloat(math.Pow(10, e), 'f', -1, 64)
			} else {
				ticks[j].Label = "1e" + strconv.Itoa(int(e))
			}
		}
	}
	return ticks
}
