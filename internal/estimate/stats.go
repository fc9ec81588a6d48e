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
	if r.freq <= b.n && !b.estimatesOnly {
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
	return statsWithE(freq, g, pi, masses, a, expectedOf(masses, a))
}

// expectedOf is E_i = sum_k masses[k] a[k], summed in order from 0.
func expectedOf(masses, a []float64) float64 {
	e := 0.0
	for k, m := range masses {
		e += m * a[k]
	}
	return e
}

// statsWithE is rowStats given E_i = expectedOf(masses, a).
func statsWithE(freq int64, g, pi float64, masses, a []float64, e float64) FrequencyStats {
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

// statsBatch is how many rows rowStatsBatch interleaves: their sums are
// independent chains of additions, which the processor overlaps (one
// row's sums wait on each addition's latency).
const statsBatch = 4

// statsJob is one row for rowStatsBatch: rowStats' arguments, E_i when
// the caller has it (hasE: expectedOf(masses, a) bit for bit, as the
// biased-down loop's running sum is), and where the result goes.
type statsJob struct {
	freq   int64
	g, pi  float64
	masses []float64
	a      []float64
	e      float64
	hasE   bool
	out    *FrequencyStats
}

// rowStatsBatch stores rowStats of each job (up to statsBatch of them) in
// its out, bit for bit: each row's sums are the same additions in the same
// order, only the rows' loops are interleaved.
func rowStatsBatch(jobs []statsJob) {
	var e [statsBatch]float64
	if len(jobs) != statsBatch {
		for _, j := range jobs {
			if !j.hasE {
				j.e = expectedOf(j.masses, j.a)
			}
			*j.out = statsWithE(j.freq, j.g, j.pi, j.masses, j.a, j.e)
		}
		return
	}
	n := min(len(jobs[0].masses), len(jobs[1].masses), len(jobs[2].masses), len(jobs[3].masses))
	m0, m1, m2, m3 := jobs[0].masses[:n], jobs[1].masses[:n], jobs[2].masses[:n], jobs[3].masses[:n]
	a0, a1, a2, a3 := jobs[0].a[:n], jobs[1].a[:n], jobs[2].a[:n], jobs[3].a[:n]
	switch {
	case jobs[0].hasE && jobs[1].hasE && jobs[2].hasE && jobs[3].hasE:
		for x, j := range jobs {
			e[x] = j.e
		}
	case !jobs[0].hasE && !jobs[1].hasE && !jobs[2].hasE && !jobs[3].hasE:
		for k := range n {
			e[0] += m0[k] * a0[k]
			e[1] += m1[k] * a1[k]
			e[2] += m2[k] * a2[k]
			e[3] += m3[k] * a3[k]
		}
		for x, j := range jobs {
			for k := n; k < len(j.masses); k++ {
				e[x] += j.masses[k] * j.a[k]
			}
		}
	default:
		for x, j := range jobs {
			e[x] = j.e
			if !j.hasE {
				e[x] = expectedOf(j.masses, j.a)
			}
		}
	}
	var mse, v [statsBatch]float64
	for x, j := range jobs {
		notRep := math.Max(0, 1-j.pi)
		mse[x] = notRep * j.g * j.g
		v[x] = notRep * e[x] * e[x]
	}
	g0, g1, g2, g3 := jobs[0].g, jobs[1].g, jobs[2].g, jobs[3].g
	e0, e1, e2, e3 := e[0], e[1], e[2], e[3]
	for k := range n {
		d, c := a0[k]-g0, a0[k]-e0
		mse[0] += m0[k] * d * d
		v[0] += m0[k] * c * c
		d, c = a1[k]-g1, a1[k]-e1
		mse[1] += m1[k] * d * d
		v[1] += m1[k] * c * c
		d, c = a2[k]-g2, a2[k]-e2
		mse[2] += m2[k] * d * d
		v[2] += m2[k] * c * c
		d, c = a3[k]-g3, a3[k]-e3
		mse[3] += m3[k] * d * d
		v[3] += m3[k] * c * c
	}
	for x, j := range jobs {
		for k := n; k < len(j.masses); k++ {
			d, c := j.a[k]-j.g, j.a[k]-e[x]
			mse[x] += j.masses[k] * d * d
			v[x] += j.masses[k] * c * c
		}
		*j.out = FrequencyStats{Frequency: j.freq, G: j.g, Reported: j.pi, Expected: e[x], Bias: e[x] - j.g, Variance: v[x], MSE: mse[x]}
	}
}
