package panprivate

import (
	"fmt"
	"math"
)

// MaxSampleSize is the largest sample size m a new stream accepts.
const MaxSampleSize = maxSampleSize

// MaxDensityEpsilon is the largest epsilon of a density stream (the papers'
// privacy theorems need epsilon <= 1/2).
const MaxDensityEpsilon = 0.5

// DensityMSE returns the exact mean squared error, about the stream's
// density d(S) = d, of one density release that reads the bits of m users of
// an n-universe (the sample M of dwork and optbern; for ppds the n_L
// qualifying users of its level, PPDSLevel): the variance of the debiased
// fraction of ones (bits and sampling, docs/errorbars-streams.md) plus 2b^2
// for the release noise Lap(b), b = 1/(eps m) with NoisePaper or that scale
// times cost/eps with NoiseCalibrated. It is the variance a release states
// as its standard error (squared), and what the planner puts beside a
// simulation.
func DensityMSE(alg Algorithm, eps float64, noise ReleaseNoise, n, m uint64, d float64) (float64, error) {
	b, err := planningBase(alg, eps, noise, n, m, d)
	if err != nil {
		return 0, err
	}
	scale, _ := b.releaseScale(1/(eps*float64(m)), b.law.releaseCost(eps))
	return b.densityVariance(d, m, n) + 2*scale*scale, nil
}

// DensityReleaseEpsilon returns the epsilon one density release spends
// (the papers' noise at its exact cost eps/gap, or eps when calibrated).
func DensityReleaseEpsilon(alg Algorithm, eps float64, noise ReleaseNoise) (float64, error) {
	b, err := planningBase(alg, eps, noise, 1, 1, 0)
	if err != nil {
		return 0, err
	}
	_, spent := b.releaseScale(1, b.law.releaseCost(eps))
	return spent, nil
}

// DensityTheoremMSE returns the papers' bound on the mean squared error of a
// density release about the density of the sampled sub-stream d(S_M), with
// the papers' noise, for a release that reads m users' bits: Theorem 3.2 of
// Digalakis et al. for dwork, 2(2m+1)/(m^2 eps^2); Theorem 4.2 for optbern,
// 1/(4m tanh^2(eps/2)) + 2/(m^2 eps^2); Theorem 5.2 for ppds at level l,
// the same expression with m = |U|/2^l. It is the worst case over the bits
// (p(1-p) <= 1/4) and leaves out the sampling variance of d(S_M) about d(S).
func DensityTheoremMSE(alg Algorithm, eps float64, m uint64) (float64, error) {
	if _, err := planningBase(alg, eps, NoisePaper, m, m, 0); err != nil {
		return 0, err
	}
	mf := float64(m)
	lap := 2 / (mf * mf * eps * eps)
	if alg == AlgorithmDwork {
		return 2 * (2*mf + 1) / (mf * mf * eps * eps), nil
	}
	th := math.Tanh(eps / 2)
	return 1/(4*mf*th*th) + lap, nil
}

// PPDSLevel returns the level at which ppds with sample bound m reads an
// n-universe after an insertion-only stream of density d, in expectation:
// the smallest level L whose n_L = floor(n/2^L) qualifying users keep the
// expected sample n_L pbar below m, pbar = P0 + (P1 - P0) d the probability
// that a qualifying user's bit is 1. The level is a running maximum driven
// by the sample's fluctuations, so when n_L pbar is within a few standard
// deviations of m the stream may end one level higher; a release states its
// error at the highest level any history can force (boundLevel), which is
// never below this one.
func PPDSLevel(eps float64, n, m uint64, d float64) (uint, error) {
	b, err := planningBase(AlgorithmPPDS, eps, NoisePaper, n, m, d)
	if err != nil {
		return 0, err
	}
	pbar := b.law.p(false) + b.law.gap()*d
	top := ppdsMaxLevel(n)
	for l := uint(0); l < top; l++ {
		if float64(n>>l)*pbar < float64(m) {
			return l, nil
		}
	}
	return top, nil
}

// planningBase checks the planning functions' arguments and returns a base
// holding the density bit law for alg and eps.
func planningBase(alg Algorithm, eps float64, noise ReleaseNoise, n, m uint64, d float64) (*base, error) {
	if alg != AlgorithmDwork && alg != AlgorithmOptBern && alg != AlgorithmPPDS {
		return nil, fmt.Errorf("panprivate: density algorithm must be dwork, optbern or ppds, not %q", alg)
	}
	if !(eps >= minEpsilon && eps <= MaxDensityEpsilon) {
		return nil, fmt.Errorf("panprivate: density epsilon %g outside [%g, %g]", eps, minEpsilon, MaxDensityEpsilon)
	}
	if noise != NoisePaper && noise != NoiseCalibrated {
		return nil, fmt.Errorf("panprivate: release noise must be paper or calibrated, not %q", noise)
	}
	if n < 1 || m < 1 || m > n {
		return nil, fmt.Errorf("panprivate: need 1 <= m <= n, got m = %d, n = %d", m, n)
	}
	if !(d >= 0 && d <= 1) {
		return nil, fmt.Errorf("panprivate: density %g outside [0, 1]", d)
	}
	law, err := newBitLaw(alg, eps)
	if err != nil {
		return nil, err
	}
	return &base{cfg: Config{Estimator: KindDensity, Algorithm: alg, Epsilon: eps, UniverseSize: n, ReleaseNoise: noise}, law: law}, nil
}
