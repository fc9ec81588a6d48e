// Package planner holds pwsd's planning tools: the Stability-based
// Histograms baseline of the PWS paper (Section 8.1, Appendix G), the
// comparison of PWS, sampled-SbH and non-private sampling on synthetic
// frequency distributions (Plan), the curves behind the planner's plots
// described as data (Chart, built by ReportingChart, BiasChart,
// VarianceChart, PlanChart and FractionChart), and the regeneration of the
// paper's figures (Figures). For pan-private density streams it chooses the
// algorithm and sample size (StreamPlan, StreamChart) and reproduces
// Figures 4-7 of the improved-density paper (DensityFigures).
//
// The PWS planning is computed from exact expressions, never simulated: PWS from
// the sanitize and estimate packages, SbH from Appendix G's integrals of the
// Laplace density, in closed form where the integrand allows it and by
// adaptive Gauss-Legendre quadrature otherwise. The maths is restated in
// docs/algorithms.md.
//
// The stream planning puts the papers' theorems and the exact variance of
// package panprivate beside a simulation that runs panprivate's estimators
// with seeded randomness (streams.go, densityfigures.go).
//
// The package draws nothing and writes no files: package plotsvg renders a
// Chart as SVG and writes the figures. It knows nothing about HTTP: it
// receives typed requests (PlanRequest), names invalid parameters in checks
// field errors, and the JSON tags of PlanResult fix the names of its answer.
package planner
