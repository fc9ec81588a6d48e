package sanitizetest

import "math"

// DenseAlgorithm4 is a literal port of the paper's Algorithm 4 (dense,
// O(n^2)) for privacy (eps, delta) and sampling probabilities q:
// rows[i][j] = pi_{i,j}, the probability that a key of frequency i is
// reported as token j, for 0 <= j <= i <= n; rows[i][0] is the probability
// that it is not reported. Row 0 is {1}.
func DenseAlgorithm4(eps, delta float64, q func(int64) float64, n int) [][]float64 {
	ee, ei := math.Exp(eps), math.Exp(-eps)
	rows := make([][]float64, n+1)
	rows[0] = []float64{1}
	piPrev := 0.0
	for i := 1; i <= n; i++ {
		prev := rows[i-1]
		row := make([]float64, i+1)
		pi := math.Min(q(int64(i)), math.Min(ee*piPrev+delta, 1+ei*(piPrev+delta-1)))
		row[0] = 1 - pi
		// Upward pass: the least mass each token needs so that row i-1 is
		// not more than e^eps times row i (plus delta) on any prefix.
		diff := math.Max(0, ei*prev[0]-row[0])
		P, C := 0.0, 0.0
		for j := 1; j <= i-1; j++ {
			P += prev[j]
			if v := ei*(P-delta) - C + diff; v > 0 {
				row[j] = v
				C += v
			}
		}
		// Downward pass: the rest of pi, from the top token down, as much
		// per token as row i-1 allows (e^eps times its suffix plus delta).
		R := pi - C
		P, C = 0, 0
		for j := i; j >= 1; j-- {
			if R <= 0 {
				break
			}
			if j <= i-1 {
				P += prev[j]
			}
			U := ee*P + delta - C
			add := math.Max(0, math.Min(R, U-row[j]))
			row[j] += add
			R -= add
			C += row[j]
		}
		rows[i] = row
		piPrev = pi
	}
	return rows
}

// IntegralDelta returns the delta that makes L(eps, delta) = L exactly.
func IntegralDelta(eps float64, L int) float64 {
	return math.Expm1(eps) / ((math.Exp(eps)+1)*math.Exp(eps*float64(L)) - 2)
}

// Lemma52 returns pi_{i,j} of Lemma 5.2, Algorithm 4's row i in closed form
// for q = 1 and integral L with delta = IntegralDelta(eps, L):
// delta e^{(i-j) eps} for 0 <= i-j <= L, delta e^{(2L-(i-j)) eps} for
// L < i-j <= 2L, and 0 otherwise (and for j > i).
func Lemma52(eps, delta float64, L, i, j int64) float64 {
	switch k := i - j; {
	case k < 0:
		return 0
	case k <= L:
		return delta * math.Exp(float64(k)*eps)
	case k <= 2*L:
		return delta * math.Exp(float64(2*L-k)*eps)
	}
	return 0
}
