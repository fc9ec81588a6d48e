package sanitize

import (
	"math"
)

// step4 computes row i = prev.i+1 of Algorithm 4 into dst (reusing its
// buffers). It is the paper's two passes restricted to the window of row
// i-1, in the equivalent closed form of the proof of Theorem 5.1:
//
//	lower pass: D_j = 0 while the prefix of row i-1 is <= s0; at the first
//	  token j* past it D = e^-eps (P_{j*} - s0); above, D_j = e^-eps prev_j;
//	upper pass: token i gets min(R, delta); tokens j = i-1, i-2, ... are
//	  raised to U = e^eps prev_j while the remaining mass R allows; the token
//	  where R runs out (the boundary) gets D_j + R.
//
// (With every entry above j at its U, the paper's U_j = e^eps P_j + delta -
// C_j equals e^eps prev_j; this form avoids the cancellation.) The boundary
// value is recomputed at the end as pi_i minus the exact sum of the other
// tokens, so the row sums to pi_i within an ulp.
func (c *consts) step4(prev *rowState, q float64, dst *rowState, qConst int64) {
	i := prev.i + 1
	pi := c.nextPi(prev.pi, q)
	s0 := c.lowerTarget(prev.pi, pi)
	M := len(prev.m)
	pm := prev.m
	T := prev.total.float()
	base := prev.x[0] // token k of the new row is (base+k, base+k+1]
	dst.i, dst.pi = i, pi
	m := resize(dst.m, M+1)

	// js: first token whose lower bound is positive (prefix of row i-1
	// beyond s0); sp: what the prefix budget leaves for it.
	P := 0.0
	js := 0
	for ; js < M && P+pm[js] <= s0; js++ {
		P += pm[js]
	}
	sp := math.Max(s0-P, 0)
	lower := func(k int) float64 {
		switch {
		case k < js:
			return 0
		case k > js:
			return c.ceilDiv1(pm[k])
		}
		d := math.Max((pm[k]-sp)*c.einv, 0)
		for n := 0; n < 8 && math.FMA(-c.e, d, pm[k]) > sp; n++ {
			d = nextUp(d)
		}
		return d
	}

	// jb: the boundary token (M: the top one).
	jb := M
	if prev.frozen {
		jb = max(M-int(prev.bOff), 0)
	} else {
		// Highest j whose suffix bound delta + E S_{i-1}(j) reaches the
		// prefix bound pi - C(j-1), C(j-1) = [e^-eps (T - S_{i-1}(j) - s0)]_+
		// (plain float64; corrected exactly below).
		suf := 0.0
		for j := M; j > 0; j-- {
			lb := c.einv * (T - suf - s0)
			if lb < 0 {
				lb = 0
			}
			if c.delta+c.e*suf >= pi-lb {
				break
			}
			jb = j - 1
			suf += pm[j-1]
		}
	}

	// Fill: lower bounds below jb, saturated values above, delta on top.
	// (Two compensated accumulators halve the dependency chain.)
	var rest, rest2 ddSum
	k := 0
	for ; k < jb && k <= js; k++ {
		m[k] = lower(k)
		rest.add(m[k])
	}
	// Pairs of tokens above js (lower(k) is ceilDiv1 there), then pairs
	// of saturated tokens above jb (floorMul1): scaleRun, one to each sum.
	if n := (jb - k) &^ 1; n > 0 {
		rest, rest2 = c.scaleRun(m[k:k+n], pm[k:k+n], true, rest, rest2)
		k += n
	}
	for ; k < jb; k++ {
		m[k] = lower(k)
		rest.add(m[k])
	}
	k = jb + 1
	if n := (M - k) &^ 1; n > 0 {
		rest, rest2 = c.scaleRun(m[k:k+n], pm[k:k+n], false, rest, rest2)
		k += n
	}
	for ; k < M; k++ {
		m[k] = c.floorMul1(pm[k])
		rest.add(m[k])
	}
	if jb < M {
		m[M] = math.Min(pi, c.delta)
		rest.add(m[M])
	}
	rest.add(rest2.s)
	rest.add(rest2.c)
	bounds := func(k int) (float64, float64) {
		if k == M {
			return 0, c.delta
		}
		return lower(k), c.floorMul1(pm[k])
	}
	dLo, dHi := bounds(jb)
	var beta float64
	if prev.frozen {
		beta = math.Min(math.Max(dLo+prev.radj, dLo), dHi)
	} else {
		// The boundary takes what is left: pi minus everything else. If
		// that falls outside its bounds the boundary moves (rare: the
		// search above is approximate).
		for {
			beta = ddFrom(pi).sub(rest.dd()).float()
			switch {
			case beta > dHi && jb > 0 && jb < M:
				rest.add(dHi) // jb saturates; the token below opens
				m[jb] = dHi
				jb--
				rest.add(-m[jb])
				dLo, dHi = bounds(jb)
				continue
			case beta < dLo && jb < M-1:
				rest.add(dLo) // jb keeps its lower bound; the token above opens
				m[jb] = dLo
				jb++
				rest.add(-m[jb])
				dLo, dHi = bounds(jb)
				continue
			}
			break
		}
		beta = math.Min(math.Max(beta, dLo), dHi)
	}
	m[jb] = beta
	rest.add(beta)
	dst.total = rest.dd()

	dst.bOff, dst.radj = int64(M-jb), beta-dLo

	// Trim leading zero tokens.
	lo := 0
	for lo < M && m[lo] == 0 {
		lo++
	}
	if lo > 0 {
		copy(m, m[lo:])
		m = m[:M+1-lo]
	}
	dst.m = m
	if len(prev.x) > lo {
		dst.x = append(dst.x[:0], prev.x[lo:]...)
	} else {
		dst.x = append(dst.x[:0], base+float64(lo))
	}
	for len(dst.x) < len(m)+1 {
		dst.x = append(dst.x, dst.x[len(dst.x)-1]+1)
	}
	updateFreeze(prev, dst, qConst)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n, n+n/4+8)
	}
	return s[:n]
}
