// Package sanitize implements the mathematical core of Private Weighted
// Sampling (Cohen, Geri, Sarlos, Stemmer, "Differentially private weighted
// sampling"; see docs/algorithms.md): the end-to-end reporting probabilities
// pi_i of Algorithm 3, the discrete frequency sanitizer of Algorithm 4 and the
// maximum-separation sanitizer of Algorithm 5, and a sampler (Draw) that
// applies a table to one sampled key.
//
// # Tables are sparse and shift-invariant
//
// Row i (the output distribution for a key of true frequency i) is built
// from row i-1 and is supported on a window of width O(L(eps, delta)) just
// below i, so rows up to n cost O(n L) time. A Table keeps only checkpoints
// (one row every K) plus the rows a caller asks for; its row chain
// (chain.go) decides where a request starts, by one cost model, and hands
// out only verified rows. Once the sampling
// probabilities are constant (q_i = 1 for ppswor, priority and none) and
// pi_i has reached them, the rows become shifted copies of one stationary
// row; the Table detects this by exact (bit for bit) comparison of rows
// and then answers any frequency (tested to 10^9) in O(L). See
// Table.StationaryFrom for the detection and rowState for the "freezing"
// that makes float64 rows settle exactly.
//
// # Rows by verified restart
//
// Where q stays below 1 for long (ppswor or priority with small thresholds,
// custom lists), rows past 2^16 come in blocks, each computed by a chain
// started from a crude guess a fixed warm-up below it; every junction
// between two chains is verified before a row next to it is used (equal
// rows bit for bit, or the exact audit at delta, with 1/1024 of delta held
// back by such tables). Any row then costs O(warm-up L) wherever it lies.
// See restart.go and docs/algorithms.md, "Rows by verified restart".
//
// # Numerical contract
//
// The DP constraints hold with equality, so the constructions round every
// saturated entry in the safe direction (checked exactly with FMA and
// double-double arithmetic) against E = the largest float64 not above
// e^eps as computed by math.Exp (rounded down once more). A table passes the
// exact audit (AuditRows) with excess at most delta (1 + 1e-12). Epsilon
// above 200 is treated as 200 (DP at a smaller epsilon implies DP at the
// requested one).
//
// Row.Pi is exactly Algorithm 3's pi_i (ReportingProbabilities); the pieces
// of a row sum to it within ~1e-14. Algorithm 5's break points b and c lie
// on the grid 2^-20 (exact integer break points stay exact), so every
// position up to MaxFrequency = 2^33, length and shift is exact in float64;
// the mass the grid moves is put back next to c within the DP bounds (a
// deviation from exact Algorithm 5 of order 1e-7 times the local density).
// Draw realises a row with float64 uniform variates, i.e. each output
// probability to within about 2^-53; the audit is a property of the table.
package sanitize
