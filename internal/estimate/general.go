package estimate

import (
	"context"
	"math"
)

// generalBuilder is the general builder with the fast ("fused") token loop
// for MLE and biased-down tables (processToken: one pass over the active
// rows per token). It takes any row source: Build's general path for those
// estimators, rowBand's estimates-only passes and the general chunk path.
// Its reference is generalBuilderRef, which builds the same table bit for
// bit (general_test.go).
type generalBuilder struct {
	builder
	// saPending: (biased-down) the active rows' sa still lack lastA *
	// lastM for the last finalised token.
	saPending bool
}

// newGeneralBuilder returns a general builder of spec's full table (MLE or
// biased-down).
func newGeneralBuilder(spec Spec) *generalBuilder { return &generalBuilder{builder: newBuilder(spec)} }

// buildGeneral is BuildContext on the general builder (MLE or biased-down;
// spec is valid). Its reference is buildGeneralRef.
func buildGeneral(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	b := newGeneralBuilder(spec)
	b.ctx = ctx
	return b.build(src, b.processToken)
}

// generalLoop is a general builder fed row by row by its caller (the chunk
// and row-band passes): the builder's state and its token loop, the fast
// one (newEstimatesOnly) or the reference (newEstimatesOnlyRef).
type generalLoop struct {
	*builder
	step tokenStep
}

// advance finalises every token whose producing rows have all been read.
func (l generalLoop) advance() error { return l.advanceWith(l.step) }

// newGeneralLoop makes the general loop of the estimates est of g on the
// tokens up to n that reads rows from firstRow on and stores tokens from
// the moment row storeFrom has been read (0: all): newEstimatesOnly or
// newEstimatesOnlyRef.
type newGeneralLoop func(ctx context.Context, g G, est Estimator, n, firstRow, storeFrom int64) generalLoop

// estimatesOnlyBuilder is the state of a general loop that keeps estimates
// only (no per-frequency statistics).
func estimatesOnlyBuilder(ctx context.Context, g G, est Estimator, n, firstRow, storeFrom int64) builder {
	return builder{spec: Spec{MaxFrequency: n, G: g, Estimator: est}, n: n, nf: float64(n), ctx: ctx,
		estimatesOnly: true, storeFrom: storeFrom, nextFreq: firstRow,
		t: &Table{G: g, Estimator: est, MaxFrequency: n, Bounds: make([]float64, 1, 1024)}}
}

// newEstimatesOnly is the general loop on the fast token loop
// (generalBuilder.processToken; MLE or biased-down). Its reference is
// newEstimatesOnlyRef.
func newEstimatesOnly(ctx context.Context, g G, est Estimator, n, firstRow, storeFrom int64) generalLoop {
	b := &generalBuilder{builder: estimatesOnlyBuilder(ctx, g, est, n, firstRow, storeFrom)}
	return generalLoop{builder: &b.builder, step: b.processToken}
}

// newEstimatesOnlyRef is newEstimatesOnly on the reference token loop
// (generalBuilderRef.processToken).
func newEstimatesOnlyRef(ctx context.Context, g G, est Estimator, n, firstRow, storeFrom int64) generalLoop {
	b := &generalBuilderRef{builder: estimatesOnlyBuilder(ctx, g, est, n, firstRow, storeFrom)}
	return generalLoop{builder: &b.builder, step: b.processToken}
}

// processToken is generalBuilderRef.processToken for MLE and biased-down in one
// pass over the active rows, in the loop shape of the dense builders: each
// row's mass on the token is folded into the argmax (MLE) or the minimum
// (biased-down) as it is computed, and the biased-down sums take the
// previous token's a m in the same pass (deferred: the same additions in
// the same order, before the row's sa is read). No per-row scratch. It
// computes exactly what the reference computes (tested).
func (b *generalBuilder) processToken(t float64) error {
	pos := b.pos
	j := len(b.t.A) + b.dropped
	active := b.buf[b.head:]
	tp, tt := tol(pos), tol(t)
	prev := b.lastA
	bd := b.spec.Estimator == BiasedDown
	pend := b.saPending
	a := math.Inf(1)
	found, bestM, bestA := false, 0.0, 0.0
	for _, r := range active {
		if pend && r.lastM > 0 {
			r.sa += prev * r.lastM
		}
		r.lastM = 0
		if r.first < 0 && r.lo >= t-tt {
			continue // not active yet (see generalBuilderRef.processToken)
		}
		m, rem := r.advance(pos, t, tp, tt)
		if r.first < 0 {
			r.first = j
		}
		if !b.estimatesOnly {
			r.masses = append(r.masses, m)
		}
		if bd {
			if !(m > 0) {
				continue
			}
			r.lastM = m
			// The quotient is formed only when it can win: for rem > 0,
			// FMA(-a, rem, d) < 0 exactly when d/rem < a, and a quotient
			// d/rem >= a rounds to a value >= a.
			d := r.g - r.sa
			if !(rem > 0) || math.FMA(-a, rem, d) < 0 {
				if v := d / rem; v < a {
					a = v
				}
			}
		} else if mleBeats(m, bestM, found) {
			found, bestM, bestA = true, m, r.gOverPi
		}
	}
	if bd {
		if math.IsInf(a, 1) {
			a = prev // no frequency produces this token
		}
		b.saPending = true
	} else {
		a = prev
		if found {
			a = bestA
		}
	}
	b.appendToken(a, t)
	b.finalPos = t
	for b.head < len(b.buf) && b.buf[b.head].top <= b.finalPos+tol(b.finalPos) {
		b.retireHead()
	}
	return nil
}
