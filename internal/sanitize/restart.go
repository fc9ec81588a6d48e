package sanitize

import (
	"errors"
	"math"
)

// Rows by verified restart (docs/algorithms.md, "Rows by verified restart").
//
// A Table's row i is not always the chain from row 0. Past the first
// junction (restartPlan.from) the frequencies are cut into blocks of
// restartPlan.block rows; the rows of the block that starts at junction a
// are the chain started from a crude guess (all of q on the token just
// below) restartPlan.warm rows below a. The block that holds the first
// frequency with constant q (and every row above it) is one chain, so the
// stationary rows past it are found as before. Which chain defines a row
// depends on the parameters and the row's index only, never on data. This
// file lays the blocks out; the row chain (chain.go) computes, keeps and
// verifies the rows.
//
// Inside a block every consecutive pair of rows is one step of the
// algorithm, (eps, delta)-DP by the same argument as the chain from row 0.
// At a junction a the pair (row a-1, row a) joins two chains. It is
// verified before any row next to it is handed out: when the new chain's
// warm-up row a-1 equals the old chain's row a-1 bit for bit (every field
// the step reads), row a is the step applied to row a-1 and the pair is a
// step like any other ("coalesced"); otherwise the pair is audited exactly
// (AuditRows, both directions) and accepted only within delta. A pair that
// fails both is a JunctionError and the request fails before anything is
// released.

// restartSlack is the part of delta that tables with restarts hold back:
// their rows are computed with delta (1 - restartSlack), so every pair inside
// a chain is (eps, delta (1 - restartSlack))-DP and a junction whose two
// chains agree to within rounding (total variation well below
// restartSlack delta / e^eps) still passes the exact audit at delta.
const restartSlack = 1.0 / 1024

// rowPrivacy returns the privacy the rows of a table of (p, s) are computed
// with (see restartPlan.rowPrivacy).
func rowPrivacy(p Privacy, s Sampling) Privacy {
	if p.Validate() != nil || s.Validate() != nil {
		return p
	}
	qc, _ := qConstFrom(s)
	return newRestartPlan(p, qc).rowPrivacy(p)
}

// rowPrivacy returns p, with restartSlack of delta held back when the plan
// restarts (a property of the parameters only).
func (pl restartPlan) rowPrivacy(p Privacy) Privacy {
	if pl.enabled() {
		p.Delta *= 1 - restartSlack
	}
	return p
}

// restartPlan fixes, from public parameters only, which chain computes each
// row. The zero value (from = never) means every row comes from the chain
// started at row 0.
type restartPlan struct {
	from  int64 // first junction; rows below come from the chain from row 0
	warm  int64 // a block's chain starts warm rows below its junction
	block int64 // rows per block
	final int64 // the last junction: rows from here on are one chain
}

// Restart plan constants: a block's chain warms up for warmPerL L +
// warmExtra rows. Restarts reach the rounding floor (rows within a total
// variation of about 1e-17 of the chain) within a few L rows on the grid of
// TestRestartGrid; at 3 L + 128 the junctions that did not coalesce use at
// most 0.24% of the held-back delta there (0.21% at 4 L + 128; at 2 L + 128
// the Algorithm 5 rows at eps <= 0.1 stay 3e-9 in total variation from the
// chain, more than the test allows), and an audit failure is refused, never
// served. A cold row costs about the warm-up and half a block.
const (
	warmPerL       = 3
	warmExtra      = 128
	minRestartFrom = 1 << 16 // rows below are cheap enough along the chain
)

// newRestartPlan returns the plan for privacy p when q is constant from
// qConst on (never: q never becomes constant). Tables whose q settles
// within a few blocks of minRestartFrom need no restarts.
func newRestartPlan(p Privacy, qConst int64) restartPlan {
	l := L(p)
	if math.IsNaN(l) || l > 1e9 {
		return restartPlan{from: never}
	}
	warm := warmPerL*int64(math.Ceil(l)) + warmExtra
	return makeRestartPlan(max(minRestartFrom, 4*warm), warm, warm, qConst)
}

// makeRestartPlan lays out blocks of the given length from junction from
// on, warm rows of warm-up each, the final block being the one holding
// qConst.
func makeRestartPlan(from, warm, block, qConst int64) restartPlan {
	if from >= MaxFrequency || from < warm+1 || block < 1 || warm < 1 {
		return restartPlan{from: never}
	}
	final := int64(never)
	if qConst != never {
		if qConst < from+2*block {
			return restartPlan{from: never} // the chain reaches the stationary rows soon
		}
		final = from + (qConst-from)/block*block
	}
	return restartPlan{from: from, warm: warm, block: block, final: final}
}

// enabled reports whether any row is computed by restart.
func (pl restartPlan) enabled() bool { return pl.from != never }

// isJunction reports whether a is a junction: row a starts a new chain.
func (pl restartPlan) isJunction(a int64) bool {
	return pl.from != never && a >= pl.from && a <= pl.final && (a-pl.from)%pl.block == 0
}

// junctionBelow returns the junction at or below i (i >= from): the first
// row of the chain that computes row i.
func (pl restartPlan) junctionBelow(i int64) int64 {
	a := pl.from + (i-pl.from)/pl.block*pl.block
	return min(a, pl.final)
}

// JunctionError is returned (wrapped) when a junction of restarted rows can
// be neither verified as a step nor accepted by the exact audit. No row
// next to it is handed out.
type JunctionError struct {
	At       int64   // the junction: the pair is (At-1, At)
	Up, Down float64 // the audit's excess sums (to compare with delta)
}

// Error says what failed, never where: the junction lies near the
// frequencies of the request that met it, so its place stays out of
// messages and logs (At, Up and Down are there for tests).
func (e *JunctionError) Error() string {
	return "sanitize: restarted rows did not coalesce at a junction and fail the exact audit"
}

// ErrJunction matches every *JunctionError with errors.Is.
var ErrJunction = errors.New("sanitize: unverified junction")

// Is makes errors.Is(err, ErrJunction) true for a *JunctionError.
func (e *JunctionError) Is(target error) bool { return target == ErrJunction }

// JunctionStats counts the junctions a Table has verified.
type JunctionStats struct {
	Coalesced int64 // the restarted row equalled the previous chain's, bit for bit
	Audited   int64 // accepted by the exact audit
	Failed    int64 // neither (a JunctionError)
}

// Junctions returns how the table's junctions were verified so far.
func (t *Table) Junctions() JunctionStats {
	return JunctionStats{Coalesced: t.coalesced.Load(), Audited: t.audited.Load(), Failed: t.failed.Load()}
}

// RestartFrom returns the first frequency whose row may come from a
// restarted chain, and false when every row is the chain from row 0.
func (t *Table) RestartFrom() (int64, bool) { return t.plan.from, t.plan.enabled() }

// keepsInner reports whether row i is one keepInner keeps.
func (pl restartPlan) keepsInner(i int64) bool {
	if !pl.enabled() || i <= pl.from {
		return false
	}
	a := pl.junctionBelow(i)
	return (i-a)%innerSpacing == 1 && pl.inside(i, a)
}

// inside reports whether row i lies strictly inside the block of junction
// a = junctionBelow(i), in a block that ends: both pairs next to row i are
// then steps of the block's own chain, so using row i needs no junction
// check at all, and a fresh start of that chain (its warm-up alone) reaches
// it.
func (pl restartPlan) inside(i, a int64) bool {
	return a < i && a < pl.final && i+1 < a+pl.block
}

// RestartCost returns about how many rows a Table computes to reach a row
// that no earlier request brought near, under privacy p: the warm-up of
// the chain below the row's block, that block, and the warm-up of the row's
// own chain. It depends on p only; callers use it to bound their work.
func RestartCost(p Privacy) int64 {
	pl := newRestartPlan(p, never)
	if !pl.enabled() {
		return minRestartFrom
	}
	return 2*pl.warm + pl.block
}
