// Package sanitizetest holds the independent references the sanitizer's
// tables are checked against, shared by the tests of package sanitize and of
// package estimate (which builds estimators from the same tables).
//
// The references are deliberately naive: DenseAlgorithm4 is a literal port
// of the paper's Algorithm 4 (O(n^2) time and memory, no windows, no
// checkpoints, no rounding care), and IntegralDelta and Lemma52 give the
// closed form of Algorithm 4's rows when q = 1 and L(eps, delta) is an
// integer (Lemma 5.2; docs/algorithms.md, section 3). The package depends
// only on the standard library, so package sanitize's own tests can import
// it; rows are plain float64 slices indexed by token.
package sanitizetest
