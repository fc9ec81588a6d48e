// Package dprandtest provides deterministic noise sources for tests and
// reproducible simulations. Nothing here may protect real data: production
// code uses dprand.SecureLaplace.
//
// Laplace draws Laplace noise by inverse transform from a caller-supplied
// generator (for example dprand.Seeded), so a test that fixes the seed sees
// the same noise on every run and can assert exact outputs, or compare an
// empirical distribution with the Laplace law at a stated tolerance.
package dprandtest
