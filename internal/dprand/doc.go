// Package dprand supplies the randomness pwsd's mechanisms draw from: a
// cryptographically seeded pseudo-random generator for sampling decisions and
// a Laplace noise source backed by a vetted implementation.
//
// New returns a math/rand/v2 generator seeded from crypto/rand; Seeded
// returns one with a fixed seed, for tests and reproducible simulations only.
// SecureLaplace draws Laplace noise through Google's differential-privacy
// library, whose sampling avoids the floating-point attacks on naive
// inverse-CDF noise; Laplacer is the small interface mechanisms take.
//
// Nothing in pwsd uses math/rand's global source. Every mechanism takes its
// generator and its noise source as explicit dependencies, so production code
// passes the secure ones from this package and tests pass seeded ones
// (package dprandtest).
package dprand
