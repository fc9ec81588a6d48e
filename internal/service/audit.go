package service

import (
	"context"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/tablecache"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// AuditTolerance is the relative allowance over delta under which an audit
// holds: the exact audit is computed in double-double arithmetic, so an
// excess below AuditTolerance*delta is rounding, not a privacy failure. The
// sanitize package's tests use the same allowance.
const AuditTolerance = 1e-9

// AuditDirection is the worst privacy loss in one direction over a range of
// neighbouring rows.
type AuditDirection struct {
	// Loss is the largest hockey-stick divergence found:
	// max over S of P_a(S) - e^epsilon P_b(S).
	Loss float64 `json:"loss"`
	// Excess is Loss - delta: at most 0 (up to AuditTolerance*delta) when
	// every pair in the range is (epsilon, delta)-DP in this direction.
	Excess float64 `json:"excess_over_delta"`
	// Frequency is the row i of the pair (i-1, i) where Loss occurs.
	Frequency int64 `json:"frequency"`
}

// Audit is the exact (epsilon, delta) audit of the sanitizer's rows.
type Audit struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Up compares each row i with its predecessor i-1: P_i(S) - e^eps P_{i-1}(S).
	Up AuditDirection `json:"up"`
	// Down is the reverse direction: P_{i-1}(S) - e^eps P_i(S).
	Down AuditDirection `json:"down"`
	// Holds says whether both directions stay within delta (up to
	// AuditTolerance*delta) for every pair in the range.
	Holds bool `json:"holds"`
}

// AuditRows runs the exact hockey-stick audit (sanitize.AuditRows) on every
// pair of neighbouring frequencies (i-1, i) for i in from..to (frequency 0 is
// "never reported") and reports, per direction, the worst loss and where it
// occurs.
func (s *Tables) AuditRows(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, from, to int64) (Audit, error) {
	key := s.cache.Key("audit", p, smp, m, tablecache.Range(from, to))
	return cached(ctx, s.deps, key, func() (Audit, error) {
		t, err := s.cache.Sanitizer(p, smp, m)
		if err != nil {
			return Audit{}, err
		}
		if limit := frequencyLimit(t); to > limit {
			return Audit{}, fieldErr("frequency", "must be at most %d for this sampling scheme (q_i < 1 beyond it)", limit)
		}
		a := Audit{From: from, To: to, Up: AuditDirection{Loss: math.Inf(-1)}, Down: AuditDirection{Loss: math.Inf(-1)}}
		prev := sanitize.Row{}
		if from > 1 {
			if prev, err = t.Row(from - 1); err != nil {
				return Audit{}, fmt.Errorf("computing row: %w", err)
			}
		}
		for i := from; i <= to; i++ {
			if err := ctx.Err(); err != nil {
				return Audit{}, err
			}
			cur, err := t.Row(i)
			if err != nil {
				return Audit{}, fmt.Errorf("computing row: %w", err)
			}
			up, down := sanitize.AuditRows(prev, cur, p)
			if up > a.Up.Loss {
				a.Up.Loss, a.Up.Frequency = up, i
			}
			if down > a.Down.Loss {
				a.Down.Loss, a.Down.Frequency = down, i
			}
			prev = cur
		}
		a.Up.Excess, a.Down.Excess = a.Up.Loss-p.Delta, a.Down.Loss-p.Delta
		a.Holds = math.Max(a.Up.Excess, a.Down.Excess) <= AuditTolerance*p.Delta
		return a, nil
	})
}
