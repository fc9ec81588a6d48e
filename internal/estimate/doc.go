// Package estimate turns the rows of a PWS frequency sanitizer
// (internal/sanitize, Algorithms 4 and 5) into estimators of linear
// statistics sum_x L(x) g(w_x) (Section 7 and Appendix E of the PWS paper)
// and provides the ordinal helpers of Section 6.
//
// Build streams the sanitizer rows once and returns a Table: the global
// output tokens (for Algorithm 5 the common refinement of all rows' pieces),
// the per-token estimate a_j of the chosen estimator (MLE, biased-down or
// unbiased) for the chosen g (identity, count, power:P, cap:T), and for every
// true frequency i its expectation, bias, variance and MSE. It costs O(n L)
// time and O(n + L^2) memory. Table.Estimate maps a released sanitized value
// to its estimate; Table.SumStats gives the eq. 12 error of a sum over a
// selection with a known frequency distribution. Where the rows become
// stationary (q = 1), Table.Tail continues estimates beyond the table.
//
// Open is the one entry point of the builders: asked for a table, a run of
// MLE chunks or rows with their estimates, it picks the builder from one
// decision table (open.go) and builds the answer; Build, BuildChunks and
// RowEstimates are Open with one kind of ask.
//
// The estimators and their error formulas are restated in docs/algorithms.md
// (section 6). One plain reference builder (generalBuilderRef) and fast
// builders paired with it, each tested against it bit for bit, build the
// tables; built with the tag pwsd_reference, only the references run.
// docs/estimator-builders.md maps which type builds what.
//
// Tokens and sanitized values are ordinal: they are not frequencies and must
// not be shown as such. Estimates are what users see.
package estimate
