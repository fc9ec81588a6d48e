package estimate

import (
	"context"
	"math"
)

// fusedBuilder is the general builder with the fast token loop for MLE and
// biased-down tables (processToken: one pass over the active rows per
// token). It takes any row source: Build's general path for those
// estimators, rowBand's estimates-only passes and the general chunk path.
// Its reference is refBuilder, which builds the same table bit for bit
// (fused_test.go).
type fusedBuilder struct {
	builder
	// saPending: (biased-down) the active rows' sa still lack lastA *
	// lastM for the last finalised token.
	saPending bool
}

// newFusedBuilder returns a fused builder of spec's full table (MLE or
// biased-down).
func newFusedBuilder(spec Spec) *fusedBuilder { return &fusedBuilder{builder: newBuilder(spec)} }

// newEstimatesOnly returns a fused builder of the estimates est of g on
// the tokens up to n (estimatesOnly) that reads rows from firstRow on and
// stores tokens from the moment row storeFrom has been read (0: all).
func newEstimatesOnly(ctx context.Context, g G, est Estimator, n, firstRow, storeFrom int64) *fusedBuilder {
	return &fusedBuilder{builder: builder{spec: Spec{MaxFrequency: n, G: g, Estimator: est}, n: n, nf: float64(n), ctx: ctx,
		estimatesOnly: true, storeFrom: storeFrom, nextFreq: firstRow,
		t: &Table{G: g, Estimator: est, MaxFrequency: n, Bounds: make([]float64, 1, 1024)}}}
}

// advance finalises every token whose producing rows have all been read.
func (b *fusedBuilder) advance() error { return b.advanceWith(b.processToken) }

// buildFused is BuildContext on the fused builder (MLE or biased-down;
// spec is valid).
func buildFused(ctx context.Context, src RowSource, spec Spec) (*Table, error) {
	b := newFusedBuilder(spec)
	b.ctx = ctx
	return b.build(src, b.processToken)
}

// processToken is refBuilder.processToken for MLE and biased-down in one
// pass over the active rows, in the loop shape of the dense builders: each
// row's mass on the token is folded into the argmax (MLE) or the minimum
// (biased-down) as it is computed, and the biased-down sums take the
// previous token's a m in the same pass (deferred: the same additions in
// the same order, before the row's sa is read). No per-row scratch. It
// computes exactly what the reference computes (tested).
func (b *fusedBuilder) processToken(t float64) error {
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
			continue // not active yet (see refBuilder.processToken)
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
