package estimate

import (
	"math"
)

// retireHead computes the statistics of the oldest row (all its tokens are
// final) and recycles it.
func (b *builder) retireHead() {
	r := b.buf[b.head]
	b.buf[b.head] = nil
	b.head++
	if r.freq <= b.n && !b.lean {
		b.t.Frequencies[r.freq-1] = rowStats(r.freq, r.g, r.pi, r.masses, b.t.A[max(r.first, 0):])
	}
	b.pool = append(b.pool, r)
	if b.head > 64 && b.head*2 > len(b.buf) {
		n := copy(b.buf, b.buf[b.head:])
		clear(b.buf[n:])
		b.buf = b.buf[:n]
		b.head = 0
	}
}

// rowStats returns the Section 7.1 statistics of a row with probabilities
// masses on consecutive tokens whose estimates are a.
func rowStats(freq int64, g, pi float64, masses, a []float64) FrequencyStats {
	e := 0.0
	for k, m := range masses {
		e += m * a[k]
	}
	notRep := math.Max(0, 1-pi) // pi may exceed 1 by rounding
	mse := notRep * g * g
	v := notRep * e * e
	for k, m := range masses {
		d, c := a[k]-g, a[k]-e
		mse += m * d * d
		v += m * c * c
	}
	return FrequencyStats{Frequency: freq, G: g, Reported: pi, Expected: e, Bias: e - g, Variance: v, MSE: mse}
}
