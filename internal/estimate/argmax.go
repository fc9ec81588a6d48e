package estimate

// tieTol is the relative tolerance under which two row probabilities of the
// same token count as tied in the MLE argmax (the smallest frequency wins).
const tieTol = 1e-10

// mleBeats is eq. 11's tie rule, the one place it is written: a row whose
// probability of a token is m takes the token's argmax from the best row so
// far (probability bestM; found: some row holds it) when m > 0 and m exceeds
// bestM by more than the factor 1 + tieTol. Rows are offered in ascending
// frequency, so within the tolerance the smallest frequency wins. Every MLE
// path (the general token loops, the dense loop, the chunk builders, the
// stationary tail) chooses its row with it (TestMLETieRule,
// TestMLEBeatsTable).
func mleBeats(m, bestM float64, found bool) bool {
	return m > 0 && (!found || m > bestM*(1+tieTol))
}
