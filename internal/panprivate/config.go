package panprivate

import (
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/checks"
)

// Algorithm names the randomized-response distributions (and, for density,
// the sampling scheme) an estimator uses. The values are the API's
// "algorithm" field.
type Algorithm string

// The algorithms.
const (
	// AlgorithmDwork uses D0 = Bernoulli(1/2), D1 = Bernoulli(1/2 + eps/4)
	// (Dwork et al. 2010, Fig. 1).
	AlgorithmDwork Algorithm = "dwork"
	// AlgorithmOptBern uses Bernoulli((1 -+ tanh(eps/2))/2), which spends the
	// whole state budget (Digalakis et al., Alg. 2).
	AlgorithmOptBern Algorithm = "optbern"
	// AlgorithmPPDS is pan-private distinct sampling with the OptBern
	// distributions (Digalakis et al., Alg. 3). Density only.
	AlgorithmPPDS Algorithm = "ppds"
)

// Limits on configurations. They bound the state size and the work of a
// release; the service layer may impose tighter ones.
const (
	// minEpsilon is the smallest epsilon: below it the two state
	// distributions are too close to estimate anything.
	minEpsilon = 1e-6
	// maxUniverseSize is the largest universe: user ids must be exact JSON numbers.
	maxUniverseSize = 1 << 53
	// maxSampleSize bounds the sample size m of a new stream. With
	// maxStateCells it keeps a stored state within 8 MB and an
	// intrusion answer within 24 MB (tested at the caps).
	maxSampleSize = 1 << 20
	// maxStateCells bounds m times the number of tables (heavy hitters) or
	// moduli (incidence) of a new stream.
	maxStateCells = 1 << 21
	// storedMaxSampleSize and storedMaxStateCells are the caps before
	// maxSampleSize and maxStateCells were lowered: states stored under them
	// still load.
	storedMaxSampleSize = 1 << 24
	storedMaxStateCells = 1 << 26
	// maxCropT bounds the cropping threshold t of the cropped mean.
	maxCropT = 1 << 24
	// maxOccurrences bounds max_occurrences (N in Figs. 3-5).
	maxOccurrences = 1 << 20
	// maxModulus bounds the moduli of the incidence estimator; the linear
	// program of a release has 3p variables and p+1 constraints for modulus
	// p (about 40 ms at p = 61 with gonum's dense simplex).
	maxModulus = 61
	// defaultMaxModulus caps the default prime range of incidence.
	defaultMaxModulus = 31
	// maxModuli bounds the number of moduli (hash functions) of the
	// incidence estimator.
	maxModuli = 16
	// maxUserNameLen bounds the length of a string user id.
	maxUserNameLen = 4096
)

// Defaults applied by Validate when a field is zero.
const (
	defaultRho    = 1.0 // heavy hitters: closeness (1+rho)
	defaultModuli = 3   // incidence: number of random primes
	// defaultAlpha is the accuracy parameter used for the heavy hitters'
	// multiplicity precision and the incidence prime range when no accuracy
	// is given.
	defaultAlpha = 0.1
)

// Accuracy is an (alpha, beta) accuracy target: with probability at least
// 1 - beta the estimate is within alpha of the truth.
type Accuracy struct {
	Alpha float64 `json:"alpha"`
	Beta  float64 `json:"beta"`
}

// Config configures an estimator. Zero-valued optional fields take defaults;
// fields that an estimator does not use must be zero. Validate (called by
// New) checks every field and fills in the resolved values.
type Config struct {
	// Estimator selects the statistic.
	Estimator Kind `json:"estimator"`
	// Algorithm selects the distributions: density: dwork | optbern | ppds
	// (default optbern); cropped_mean and heavy_hitters: dwork | optbern
	// (default dwork, as in Dwork et al.); incidence: dwork or empty.
	Algorithm Algorithm `json:"algorithm,omitempty"`
	// Epsilon is the privacy parameter of the state distributions, the
	// epsilon of the papers' theorems: 0 < epsilon <= 1/2 (Claim 3.1 and
	// Theorems 3.2-4.1 of Dwork et al., Theorems 4.1 and 5.1 of Digalakis et
	// al.), 0 < epsilon <= 1 for incidence (Theorem 5.1).
	Epsilon float64 `json:"epsilon"`
	// UniverseSize is |X|; integer user ids lie in [0, UniverseSize).
	UniverseSize uint64 `json:"universe_size"`
	// SampleSize is m, the number of sampled users (for ppds: the bound on
	// the distinct sample). Give it or Accuracy (density and cropped_mean).
	SampleSize int `json:"sample_size,omitempty"`
	// Accuracy picks m = m* (Section 3.2 of Digalakis et al.) for density
	// and cropped_mean. For heavy_hitters and incidence it sets alpha, the
	// multiplicity precision alpha/N and the prime range.
	Accuracy *Accuracy `json:"accuracy,omitempty"`
	// T is the cropping threshold (cropped_mean, 2 <= t) or the target
	// incidence (incidence, 1 <= t <= max_occurrences).
	T int `json:"t,omitempty"`
	// K is the heavy-hitter threshold (heavy_hitters, 1 <= k <=
	// max_occurrences) or the largest modulus (incidence, optional).
	K int `json:"k,omitempty"`
	// MaxOccurrences is N, the assumed bound on any user's appearances
	// (heavy_hitters, incidence).
	MaxOccurrences int `json:"max_occurrences,omitempty"`
	// Rho is the closeness parameter of heavy_hitters, 0 < rho <= 1
	// (default 1): the answer is accurate for a (1+rho)-close stream.
	Rho float64 `json:"rho,omitempty"`
	// Moduli is the number of random primes of incidence (default 3).
	Moduli int `json:"moduli,omitempty"`
	// ReleaseNoise chooses the noise of a release: "calibrated" (default)
	// scales the papers' noise up so that every release costs exactly
	// epsilon, the epsilon the user asked for; "paper" adds the papers'
	// Laplace noise (their MSE theorems hold as stated) and charges its exact
	// cost, which exceeds epsilon (see Privacy.PerRelease).
	ReleaseNoise ReleaseNoise `json:"release_noise,omitempty"`
	// MaxReleases caps the number of releases; 0 means no cap (the service's
	// budget ledger is then the only limit).
	MaxReleases int `json:"max_releases,omitempty"`
}

// ReleaseNoise names how releases are noised.
type ReleaseNoise string

// The release noise modes.
const (
	// NoisePaper adds the papers' noise (their MSE theorems hold) and charges
	// its exact cost.
	NoisePaper ReleaseNoise = "paper"
	// NoiseCalibrated scales the papers' noise by cost/epsilon, so that each
	// release costs exactly epsilon.
	NoiseCalibrated ReleaseNoise = "calibrated"
)

// Validate checks every field and returns the resolved configuration:
// defaults filled in and, when Accuracy was given instead of SampleSize, the
// sample size m* chosen. The result validates again unchanged.
func (c Config) Validate() (Config, error) {
	return c.validate(false)
}

// validate implements Validate. resolved allows both SampleSize and
// Accuracy, as in the output of Validate (used when decoding state).
func (c Config) validate(resolved bool) (Config, error) {
	s, ok := specOf(c.Estimator)
	if !ok {
		return c, checks.Errorf("estimator", "must be one of %s", kindNames(", "))
	}
	return c.validateWith(s, resolved)
}

// validateWith validates c as a configuration of kind s: the shared fields
// here, the per-kind ones by s.check and s.checkState.
func (c Config) validateWith(s *kindSpec, resolved bool) (Config, error) {
	if c.Algorithm == "" {
		c.Algorithm = s.defaultAlgorithm
	}
	if !slices.Contains(s.algorithms, c.Algorithm) {
		return c, checks.Errorf("algorithm", "must be %s for %s", orList(s.algorithms), c.Estimator)
	}
	if !(c.Epsilon >= minEpsilon) || c.Epsilon > s.maxEpsilon {
		return c, checks.Errorf("epsilon", "must be at least %g and at most %g for %s (the papers' privacy theorems need it)", minEpsilon, s.maxEpsilon, c.Estimator)
	}
	if c.UniverseSize < 1 || c.UniverseSize > maxUniverseSize {
		return c, checks.Errorf("universe_size", "must be between 1 and 2^53")
	}
	if c.Accuracy != nil {
		a := *c.Accuracy
		if !(a.Alpha > 0) || a.Alpha >= 1 {
			return c, checks.Errorf("accuracy.alpha", "must be greater than 0 and less than 1")
		}
		if !(a.Beta > 0) || a.Beta >= 1 {
			return c, checks.Errorf("accuracy.beta", "must be greater than 0 and less than 1")
		}
		c.Accuracy = &a // never alias the caller's struct
	}
	if c.MaxReleases < 0 {
		return c, checks.Errorf("max_releases", "must not be negative")
	}
	switch c.ReleaseNoise {
	case "":
		c.ReleaseNoise = NoiseCalibrated
	case NoisePaper, NoiseCalibrated:
	default:
		return c, checks.Errorf("release_noise", "must be paper or calibrated")
	}

	// Per-kind fields.
	for _, f := range optionalFields() {
		if f.set(c) && !slices.ContainsFunc(s.params, func(p Param) bool { return p.Name == f.name }) {
			return c, checks.Errorf(f.name, "is not used by %s", c.Estimator)
		}
	}
	if s.check != nil {
		if err := s.check(&c); err != nil {
			return c, err
		}
	}

	// Sample size.
	switch {
	case c.SampleSize != 0 && c.Accuracy != nil && !resolved && s.sizedByAccuracy:
		return c, checks.Errorf("sample_size", "must not be given together with accuracy")
	case c.SampleSize == 0 && c.Accuracy != nil && s.sizedByAccuracy:
		alg := c.Algorithm
		if alg == AlgorithmPPDS {
			alg = AlgorithmOptBern
		}
		m, err := OptimalSampleSize(alg, c.Epsilon, c.Accuracy.Alpha, c.Accuracy.Beta)
		if err != nil {
			return c, fmt.Errorf("panprivate: choosing the sample size: %w", err)
		}
		if m > float64(c.UniverseSize) || m > maxSampleSize {
			return c, checks.Errorf("accuracy", "needs a sample of %.0f users, more than universe_size or %d", math.Ceil(m), maxSampleSize)
		}
		c.SampleSize = int(math.Ceil(m))
	case c.SampleSize == 0 && s.sizedByAccuracy:
		return c, checks.Errorf("sample_size", "is required (or accuracy)")
	case c.SampleSize == 0:
		return c, checks.Errorf("sample_size", "is required (accuracy does not choose it for %s)", c.Estimator)
	}
	maxSize, maxCells := maxSampleSize, maxStateCells
	if resolved { // a stored state: the caps it was created under
		maxSize, maxCells = storedMaxSampleSize, storedMaxStateCells
	}
	if c.SampleSize < 1 || c.SampleSize > maxSize || uint64(c.SampleSize) > c.UniverseSize {
		return c, checks.Errorf("sample_size", "must be between 1 and min(universe_size, %d)", maxSize)
	}
	if s.checkState != nil {
		if err := s.checkState(c, maxCells); err != nil {
			return c, err
		}
	}
	return c, nil
}

// optionalField is a per-kind Config field: a kind that does not list it
// among its params refuses a configuration that sets it.
type optionalField struct {
	name string // as clients write it
	set  func(Config) bool
}

// optionalFields lists the per-kind Config fields.
func optionalFields() []optionalField {
	return []optionalField{
		{"t", func(c Config) bool { return c.T != 0 }},
		{"k", func(c Config) bool { return c.K != 0 }},
		{"max_occurrences", func(c Config) bool { return c.MaxOccurrences != 0 }},
		{"rho", func(c Config) bool { return c.Rho != 0 }},
		{"moduli", func(c Config) bool { return c.Moduli != 0 }},
	}
}

// maxOccurrencesParam documents max_occurrences for the kinds that read it.
func maxOccurrencesParam() Param {
	return Param{Name: "max_occurrences", Required: true,
		Doc: fmt.Sprintf("N, the assumed bound on any user's appearances; 1 <= N <= %d", maxOccurrences)}
}

func (c Config) validateOccurrences() error {
	if c.MaxOccurrences < 1 || c.MaxOccurrences > maxOccurrences {
		return checks.Errorf("max_occurrences", "must be between 1 and %d", maxOccurrences)
	}
	return nil
}

// alpha returns the accuracy alpha, or defaultAlpha.
func (c Config) alpha() float64 {
	if c.Accuracy != nil {
		return c.Accuracy.Alpha
	}
	return defaultAlpha
}
