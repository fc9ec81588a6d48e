package estimate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// AlgorithmVersion names the revision of the estimator computations. It
// changes whenever an estimate or statistic may change, so caches of
// estimator tables key on it (together with sanitize.AlgorithmVersion).
const AlgorithmVersion = "estimators-1"

// Estimator names a per-token estimator of Section 7 / Appendix E.
type Estimator string

// Defaults of an estimation request whose estimator or g is not given.
const (
	DefaultEstimator = MLE
	DefaultG         = GIdentity
)

// The estimators for linear statistics.
const (
	// MLE is eq. 11: a_j = g(i*)/pi_{i*} with i* = argmax_h pi_{h,j}; ties go
	// to the smallest frequency. Nonnegative, biased up or down.
	MLE Estimator = "mle"
	// BiasedDown is eq. 41: never over-estimates in expectation
	// (E_i <= g(i) for every i) and a_j is non-decreasing in j.
	BiasedDown Estimator = "biased_down"
	// Unbiased is the triangular solve E_i = g(i) for every i. Its
	// estimates can be negative and its variance is huge (at least
	// g(1)^2/delta for frequency 1): offer it for completeness only.
	Unbiased Estimator = "unbiased"
)

// ParseEstimator parses "mle", "biased_down" or "unbiased".
func ParseEstimator(s string) (Estimator, error) {
	e := Estimator(strings.ToLower(strings.TrimSpace(s)))
	return e, e.Validate()
}

// Validate reports whether e names a known estimator.
func (e Estimator) Validate() error {
	switch e {
	case MLE, BiasedDown, Unbiased:
		return nil
	}
	return errors.New("estimate: estimator must be mle, biased_down or unbiased")
}

// Spec says which estimator table to build.
type Spec struct {
	MaxFrequency int64     // n: estimates for every token in (0, n] and statistics for frequencies 1..n
	G            G         // the frequency function
	Estimator    Estimator // which a_j
}

// Validate reports whether s can be built.
func (s Spec) Validate() error {
	if s.MaxFrequency < 1 {
		return errors.New("estimate: max frequency must be at least 1")
	}
	if s.MaxFrequency > maxFrequencyLimit {
		return fmt.Errorf("estimate: max frequency must be at most %d", int64(maxFrequencyLimit))
	}
	if err := s.G.Validate(); err != nil {
		return err
	}
	return s.Estimator.Validate()
}

// maxFrequencyLimit bounds n so that token positions stay exact in float64.
const maxFrequencyLimit = 1 << 40

// FrequencyStats are the Section 7.1 quantities of the per-key estimate for
// a key of true frequency i: E_i = sum_j pi_{i,j} a_j, Bias_i = E_i - g(i),
// MSE_i = (1 - pi_i) g(i)^2 + sum_j pi_{i,j} (a_j - g(i))^2 and the variance
// of the estimate (computed directly around E_i, so MSE_i = Bias_i^2 + Var_i
// is a check, not a definition).
type FrequencyStats struct {
	Frequency int64
	G         float64 // g(i)
	Reported  float64 // pi_i, end to end
	Expected  float64
	Bias      float64
	Variance  float64
	MSE       float64
}

// SumStats are the eq. 12 quantities of the sum estimate over a selection.
type SumStats struct {
	Keys      float64 // number of selected keys
	Statistic float64 // s = sum_x g(w_x)
	Expected  float64 // E[s^] = s + Bias
	Bias      float64
	Variance  float64
	MSE       float64
	NRMSE     float64 // sqrt(MSE)/s
}

// FrequencyCount is one entry of a frequency distribution: Keys keys (a
// count, possibly fractional as an expectation) have true frequency Frequency.
type FrequencyCount struct {
	Frequency int64
	Keys      float64
}

// Table is an estimator table: the global tokens of a sanitizer's output up
// to MaxFrequency, the estimate a_j of each, and the per-frequency statistics.
//
// Token j (1-based) is the interval (Bounds[j-1], Bounds[j]] and its estimate
// is A[j-1]. For Algorithm 4 token j is (j-1, j]; for Algorithm 5 the tokens
// are the common refinement of all rows' pieces, in order, and a row's
// probability of a token is its density there times the token's length.
// Tokens are ordinal, not frequencies: show estimates, never tokens, to users.
//
// A Table is a plain value with exported fields so it can be cached in a
// store (MarshalBinary, format TableFormat, or encoding/json); call Validate
// after decoding one from JSON (UnmarshalBinary validates). Its methods only read it: a Table is
// safe for concurrent use as long as nobody modifies its fields.
type Table struct {
	G            G
	Estimator    Estimator
	MaxFrequency int64
	Bounds       []float64        // len(A)+1 token boundaries, Bounds[0] = 0, ascending
	A            []float64        // per-token estimates
	Frequencies  []FrequencyStats // index i-1 holds frequency i, for i = 1..MaxFrequency
	Tail         *Tail            // stationary continuation beyond MaxFrequency, nil when unknown
}

// Tail describes the stationary part of a table (q_i = 1 and rows that are
// shifted copies: row i = row From shifted by i - From) and how estimates
// continue there, so values beyond MaxFrequency can be estimated without
// rebuilding the table.
//
// From unit From on (the interval (From-1, From] and every later unit) the
// tokens repeat: unit k is cut at k-1+Offsets[r], r = 0..len(Offsets)-1.
// Derivation (see tail.go): for the MLE, the argmax row of sub-token r of
// unit k is k + MLEShift[r] for every k >= From, so a = g(k+MLEShift[r])/Pi
// for any g. For biased-down and unbiased with g affine on the rows involved
// (identity, count, cap beyond T, power 0 and 1), the recursion is
// shift-invariant up to a constant, so once a whole window of units repeats
// with period Period units (up to adding Increment) it repeats for ever:
// a(k, r) = a(k - Period, r) + Increment for k > MaxFrequency. Biased-down
// estimates form a staircase that is periodic for some parameters and
// quasi-periodic for others; ConvergedFrom = 0 (Period = 0) means no period
// was found and such values are out of range.
type Tail struct {
	From          int64
	Pi            float64          // pi_i for i >= From
	Pattern       []sanitize.Piece // row From, positions relative to From (Hi <= 0)
	Offsets       []float64        // sub-token upper ends within a unit, ascending, last = 1
	UnitToken     int64            // 0-based index into A of sub-token 0 of unit From
	MLEShift      []int64          // MLE only: argmax frequency minus unit, per sub-token
	Period        int64            // biased_down and unbiased: period in units; 0 = none found
	Increment     float64          // biased_down and unbiased: increase of a over one period
	ConvergedFrom int64            // first unit of the verified periodic window; 0 = none
}

// ErrOutOfRange is returned for values or frequencies beyond a table's range
// that its stationary tail cannot extend; build a table with a larger
// MaxFrequency.
var ErrOutOfRange = errors.New("estimate: beyond the table's range")

// ErrNotFinite: a per-token estimate, a sum or its error overflows float64
// (g grows too fast, or the unbiased system is ill-conditioned or its last
// unit incomplete).
var ErrNotFinite = errors.New("estimate: an estimate is not finite (g overflows, or the unbiased system is ill-conditioned or the last unit is incomplete)")

// ErrNotReported is returned for sanitized values <= 0: such a key was not
// reported and has estimate 0.
var ErrNotReported = errors.New("estimate: a sanitized value must be greater than 0")

// SizeBytes returns about how many bytes the table holds in memory (its
// slices and tail), for caches bounded in bytes.
func (t *Table) SizeBytes() int64 {
	n := int64(cap(t.Bounds)+cap(t.A))*8 + int64(cap(t.Frequencies))*56 + 256
	if tl := t.Tail; tl != nil {
		n += int64(len(tl.Pattern))*24 + int64(len(tl.Offsets)+len(tl.MLEShift))*8 + 128
	}
	return n
}
