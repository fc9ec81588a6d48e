package panprivate

// defaultCounterAlgorithm returns the counter with the lowest predicted error
// for the given epsilon and horizon T, where error is the root mean squared
// error averaged over all steps t = 1..T (CounterPredictedMSE), whatever the
// stream:
//
//   - randomized_response, MSE (T+1)/2 * e^eps/(e^eps-1)^2, wins for short
//     horizons (T < 2^14 for 0.5 <= eps <= 2, T < 2^13 at eps = 0.1, T < 2^17
//     at eps = 5);
//   - tree, MSE 4 (L/eps)^2 * (mean number of released nodes summed per
//     output) = O(log^3 T / eps^2), wins for longer ones.
//
// The simple Laplace counter (MSE (T+1)/eps^2) is never chosen: randomized
// response has the same O(T) error with a smaller constant for every epsilon
// (e^eps/(e^eps-1)^2 < 2/eps^2). The cascading counter is never chosen
// either: its error depends on the stream's density, which is unknown when
// the counter is created. With the parameters of Corollary 6.1 it holds back
// up to about (2d+1) l = Theta(log^4 T / eps) ones, more than any practical
// stream has (at T = 2^16 it outputs nothing at all: RMSE = root mean n_t);
// hand-tuned (d = 1) it beats the tree on sparse streams but loses on dense
// ones, and its bound O((sqrt(n_t) + log^4 T)/eps) never beats the tree's
// O(log^1.5 T / eps).
func defaultCounterAlgorithm(epsilon float64, horizon int64) CounterAlgorithm {
	rr := CounterPredictedMSE(CounterRandomizedResponse, epsilon, horizon)
	tree := CounterPredictedMSE(CounterTree, epsilon, horizon)
	if tree < rr {
		return CounterTree
	}
	return CounterRandomizedResponse
}
