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
	// Series says which method the curve shows, so that a method is drawn
	// alike in every chart; SeriesOther curves are told apart by order.
	Series Series
	// Dashed draws the line dashed (a theoretical curve beside its
	// measured one).
	Dashed bool
	X, Y   []float64
}

// Series is the method a curve shows.
type Series int

// The methods the planner compares.
const (
	SeriesOther      Series = iota
	SeriesNonPrivate        // the non-private sample (q_i, its variance)
	SeriesPWS               // private weighted sampling
	SeriesSbH               // the (sampled) stability-based histogram baseline
	SeriesDwork             // the dwork pan-private density algorithm
	SeriesOptBern           // the optbern pan-private density algorithm
	SeriesPPDS              // the ppds pan-private density algorithm
)
