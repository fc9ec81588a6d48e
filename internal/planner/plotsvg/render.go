package plotsvg

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/pwsd/pwsd/internal/planner"
)

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

// palette holds distinguishable line colours (colour-blind safe).
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{230, 159, 0, 255},   // orange
	{86, 180, 233, 255},  // sky
	{0, 0, 0, 255},       // black
}

// render draws the chart as a self-contained SVG document (gonum.org/v1/plot,
// vgsvg backend, default fonts, no external assets).
func render(c planner.Chart) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil { // gonum/plot panics on degenerate input
			out, err = nil, fmt.Errorf("plotsvg: rendering chart %q: %v", c.Title, r)
		}
	}()
	p, err := build(c)
	if err != nil {
		return nil, err
	}
	canvas := vgsvg.NewWith(vgsvg.UseWH(chartWidth, chartHeight))
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plotsvg: writing svg: %w", err)
	}
	return buf.Bytes(), nil
}

// build builds the gonum plot of the chart.
func build(c planner.Chart) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Legend.Top = !c.LegendBottom
	p.Legend.Left = !c.LegendRight
	p.Add(plotter.NewGrid())

	var xs, ys []float64
	for k, cv := range c.Curves {
		pts := points(c, cv)
		if len(pts) == 0 {
			continue
		}
		for _, pt := range pts {
			xs = append(xs, pt.X)
			ys = append(ys, pt.Y)
		}
		col := palette[k%len(palette)]
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plotsvg: chart curve %q: %w", cv.Label, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		if k >= len(palette) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(line)
		if len(pts) <= markerPoints {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("plotsvg: chart curve %q: %w", cv.Label, err)
			}
			sc.Color = col
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			p.Add(sc)
		}
		if cv.Label != "" {
			p.Legend.Add(cv.Label, line)
		}
	}
	setRange(&p.X, xs, c.LogX, 0, 0)
	setRange(&p.Y, ys, c.LogY, c.YMin, c.YMax)
	return p, nil
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
