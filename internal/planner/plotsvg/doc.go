// Package plotsvg renders the planner's charts as self-contained SVG
// documents with gonum.org/v1/plot (vgsvg backend, default fonts, no
// external assets, no scripts) and writes the paper's figures to files.
//
// The planner computes every number and describes each plot as a
// planner.Chart; this package only draws: Reporting, Bias, Variance and
// NRMSE draw the planner's standard plots from its data, and WriteFigures
// writes the paper's figures. Curves are thinned to a bounded number of
// points (log-spaced on a log axis) so an SVG stays small, and points that
// are not finite, or not positive on a log axis, are left out. Degenerate
// data (no points, constant curves) still render; a panic inside gonum is
// turned into an error.
//
// WriteFigures runs planner.Figures and writes each figure into a directory
// (the `pwsd figures` command).
package plotsvg
