package planner

// Chart is a line chart described as data: the planner's chart functions
// (ReportingChart, BiasChart, VarianceChart, PlanChart, FractionChart) build
// one from already computed numbers; package plotsvg renders it.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	// YMin and YMax fix the vertical range when YMax > YMin; otherwise the
	// range follows the data.
	YMin, YMax float64
	// LegendBottom and LegendRight move the legend from the upper left
	// corner.
	LegendBottom, LegendRight bool
	Curves                    []Curve
}

// Curve is one labelled line of a chart. X and Y have equal lengths; points
// that are not finite, or not positive on a log axis, are left out.
type Curve struct {
	Label string
	X, Y  []float64
}
