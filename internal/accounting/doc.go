// Package accounting composes differentially private releases tightly, by
// privacy loss distributions (PLDs), in the manner of Google's dp_accounting
// library (PrivacyLossDistribution, pessimistic estimates). No Go library
// offered this when it was written.
//
// A mechanism's PLD is the distribution of its privacy loss
// log(P(o)/Q(o)), o ~ P, for its worst pair of neighbouring inputs (its
// dominating pair). The hockey-stick divergence
//
//	delta(eps) = P(L = +inf) + E[(1 - e^(eps - L))+]
//
// is the smallest delta for which the mechanism is (eps, delta)-DP, and the
// PLD of two independent mechanisms is the convolution of theirs. So k
// releases compose by convolving k PLDs, and the composed (eps, delta)
// curve is exact: this is optimal composition, far tighter than adding
// epsilons (basic composition) for many small releases.
//
// Every answer here is an upper bound (pessimistic):
//
//   - losses are rounded up to a uniform grid of step 2^-exponent nats
//     (DefaultGridExponent = 14, step about 6.1e-5): a power of two, so the
//     rounding itself is exact; k compositions overstate the composed
//     epsilon by at most k steps;
//   - truncating a distribution's tails moves the upper tail (at most
//     TailBound = 1e-15 a composition) to the mass at +infinity, paid in
//     delta, and the lower tail onto the lowest kept loss; nothing is
//     dropped;
//   - convolutions are direct (over nonzero entries) when that is cheap,
//     else by FFT; either way a bound on the rounding error's L1 norm is
//     added to the mass at +infinity, and FFT noise at the distribution's
//     ends is moved like a tail.
//
// Constructors: Generic (the dominating pair of any (eps, delta)-DP
// mechanism), Laplace, DiscreteLaplace, FromDistributions (explicit small
// mechanisms) and FromProfile (any mechanism given by its privacy profile,
// by connect-the-dots of Doroshenko et al. 2022). Compose, SelfCompose (by
// repeated squaring), Delta, Epsilon and Admits answer the questions a
// privacy budget's ledger asks.
//
// With a budget of (5, 1e-5) the default grid admits 128 releases of a
// generic (0.1, 1e-9) mechanism (the exact optimum is 128, basic
// composition 50) and 500 of (0.05, 1e-9) (optimum 504, basic 100).
package accounting
