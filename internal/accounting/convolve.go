package accounting

import (
	"math"
	"math/bits"

	"gonum.org/v1/gonum/dsp/fourier"
)

// directWork is the largest number of multiply-adds a convolution is done
// directly (over the nonzero entries of both inputs) rather than by FFT.
const directWork = 1 << 23

// unitRoundoff is the unit roundoff of float64, 2^-53.
const unitRoundoff = 0x1p-53

// convolve returns the convolution of two nonnegative mass vectors and a
// bound on the L1 norm of its rounding error. Negative entries an FFT
// leaves are set to 0 (which only adds mass); the bound covers the rest.
func convolve(a, b []float64) ([]float64, float64) {
	if len(a) < len(b) {
		a, b = b, a
	}
	// a is the longer: iterate it directly, skipping zeros, against the
	// nonzero entries of b (a ledger's composition with one more release
	// costs a pass over the ledger per nonzero of the release).
	ib := nonzero(b)
	n := len(a) + len(b) - 1
	if len(a)*len(ib) <= directWork {
		out := make([]float64, n)
		nnzA := 0
		for i, ai := range a {
			if ai == 0 {
				continue
			}
			nnzA++
			for _, j := range ib {
				out[i+j] += ai * b[j]
			}
		}
		return out, directError(nnzA, len(ib))
	}
	// Both long: still direct when both are sparse (a self-composition of
	// a generic release has k+1 nonzero losses spread over k*eps/step).
	if ia := nonzero(a); len(ia)*len(ib) <= directWork {
		out := make([]float64, n)
		for _, i := range ia {
			ai := a[i]
			for _, j := range ib {
				out[i+j] += ai * b[j]
			}
		}
		return out, directError(len(ia), len(ib))
	}
	size := 1 << bits.Len(uint(n-1))
	fft := fourier.NewFFT(size)
	pa := make([]float64, size)
	copy(pa, a)
	pb := make([]float64, size)
	copy(pb, b)
	ca := fft.Coefficients(nil, pa)
	cb := fft.Coefficients(nil, pb)
	for i := range ca {
		ca[i] *= cb[i]
	}
	seq := fft.Sequence(pa, ca)
	out := make([]float64, n)
	scale := 1 / float64(size)
	for i := range out {
		if v := seq[i] * scale; v > 0 {
			out[i] = v
		}
	}
	// FFT convolution is normwise stable: ||error||_2 <= c log2(N) u
	// ||a||_2 ||b||_2 (Higham, Accuracy and Stability of Numerical
	// Algorithms, 2nd ed., sec. 24.1, with c < 10 for radix-2/4 FFTs). We
	// take c = 16 and pass to L1 with sqrt(n).
	logN := float64(bits.Len(uint(size)))
	errL2 := 16 * logN * unitRoundoff * norm2(a) * norm2(b)
	errL1 := math.Sqrt(float64(n)) * errL2
	// Entries at the ends no larger than the error bound are noise: the
	// upper ones go to the returned error (hence to +infinity), the lower
	// ones onto the lowest entry kept, so that tails do not grow with
	// every composition.
	hi := n
	for hi > 1 && out[hi-1] <= errL2 {
		hi--
		errL1 += out[hi]
		out[hi] = 0
	}
	lo, low := 0, 0.0
	for lo < hi-1 && out[lo] <= errL2 {
		low += out[lo]
		out[lo] = 0
		lo++
	}
	out[lo] += low
	return out, errL1
}

// directError bounds the L1 rounding error of a direct convolution of
// inputs with nnzA and nnzB nonzero entries and total masses at most 1: each
// entry is a sum of at most m = min(nnzA, nnzB) nonnegative products, with
// relative error at most (m+1) u.
func directError(nnzA, nnzB int) float64 {
	return float64(min(nnzA, nnzB)+1) * unitRoundoff * 1.01
}

// nonzero returns the indices of v's nonzero entries.
func nonzero(v []float64) []int {
	idx := make([]int, 0, len(v))
	for i, x := range v {
		if x != 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

// norm2 returns the Euclidean norm of v.
func norm2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}
