package estimate

import (
	"context"
	"math"
	"math/bits"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TableSize is the MaxFrequency of the estimator table that serves sanitized
// values up to maxValue from the sanitizer table t: the next power of two at
// or above maxValue + 1, at least 64, and at most the power of two above
// 4s + 64 when t's rows are stationary from s (beyond that, Table.Tail
// continues the estimates). Rounding to powers of two lets nearby requests
// share one cached table. The service and the Beam pipeline both size their
// tables with it, so they estimate from the same tables.
//
// It looks for the stationary point only when that can shrink the size (a
// stationary point s gives 4s + 64 >= 68), and stops with ctx's error when
// ctx is cancelled while it looks.
func TableSize(ctx context.Context, t *sanitize.Table, maxValue float64) (int64, error) {
	need := int64(math.Ceil(maxValue)) + 1
	if need > 68 {
		from, ok, err := t.StationaryFromContext(ctx)
		if err != nil {
			return 0, err
		}
		if ok && need > 4*from+64 {
			need = 4*from + 64
		}
	}
	if need < 64 {
		need = 64
	}
	return int64(1) << bits.Len64(uint64(need-1)), nil
}
