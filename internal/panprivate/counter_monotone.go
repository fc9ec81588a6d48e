package panprivate

import (
	"math"

	"github.com/pwsd/pwsd/internal/checks"
)

// CounterPostprocess names an optional post-processing of a counter's
// outputs. Post-processing reads only published outputs, so it costs no
// privacy.
type CounterPostprocess string

// The counter post-processings.
const (
	// PostprocessNone publishes the raw outputs only.
	PostprocessNone CounterPostprocess = ""
	// PostprocessMonotone publishes, beside each raw output, a count clamped
	// to [0, t] and non-decreasing in t (MonotoneOutputs).
	PostprocessMonotone CounterPostprocess = "monotone"
)

// Validate reports whether p names a known post-processing.
func (p CounterPostprocess) Validate() error {
	switch p {
	case PostprocessNone, PostprocessMonotone:
		return nil
	}
	return &checks.FieldError{Field: "postprocess", Reason: "must be monotone (or absent)"}
}

// MonotoneOutputs post-processes the raw outputs of steps firstStep,
// firstStep+1, ... (1-based) of a counter whose previous monotone output
// (at step firstStep-1) was prev (0 before the first step): it returns the
// least-squares closest sequence m that is non-decreasing, starts at or above
// prev, and has 0 <= m_t <= t — the true count n_t satisfies all three, so the
// projection never moves the outputs away from it in Euclidean norm.
//
// Algorithm: the unconstrained isotonic regression of the batch by
// pool-adjacent-violators (PAVA, O(n)), then clamped to [max(prev, 0), t] (prev taken at most firstStep-1).
// Clamping an isotonic fit to bounds that are themselves non-decreasing in t
// gives the isotonic fit under those bounds (the bounded problem's solution is
// the clamp of the unbounded one), so m is the exact projection of the batch
// given the past. Earlier batches are not revised: what was published stays.
// It reads only published outputs: post-processing, free of privacy cost.
func MonotoneOutputs(raw []float64, firstStep int64, prev float64) []float64 {
	// PAVA: blocks of (sum, count), merged while a block's mean falls below
	// its predecessor's.
	type block struct {
		sum float64
		n   int
	}
	blocks := make([]block, 0, len(raw))
	for _, y := range raw {
		blocks = append(blocks, block{y, 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum*float64(b.n) <= b.sum*float64(a.n) { // mean(a) <= mean(b)
				break
			}
			blocks = blocks[:len(blocks)-2]
			blocks = append(blocks, block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(raw))
	for _, b := range blocks {
		mean := b.sum / float64(b.n)
		for k := 0; k < b.n; k++ {
			out = append(out, mean)
		}
	}
	// prev is at most firstStep-1 when it came from this function; clamp it
	// there anyway so that the bounds never cross.
	lo := math.Max(math.Min(prev, float64(firstStep-1)), 0)
	for i := range out {
		t := float64(firstStep + int64(i))
		out[i] = math.Min(math.Max(out[i], lo), t)
	}
	return out
}
