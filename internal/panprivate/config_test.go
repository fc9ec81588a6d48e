package panprivate

import (
	"errors"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// TestConfigValidation checks that every invalid parameter is rejected at
// construction with a checks.FieldError naming the field as clients spell it.
func TestConfigValidation(t *testing.T) {
	t.Parallel()
	density := Config{Estimator: KindDensity, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100}
	crop := Config{Estimator: KindCroppedMean, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, T: 4}
	hh := Config{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, K: 4, MaxOccurrences: 64}
	inc := Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 1000, SampleSize: 100, T: 2, MaxOccurrences: 8}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"unknown estimator", with(density, func(c *Config) { c.Estimator = "sum" }), "estimator"},
		{"unknown algorithm", with(density, func(c *Config) { c.Algorithm = "fast" }), "algorithm"},
		{"ppds for cropped mean", with(crop, func(c *Config) { c.Algorithm = AlgorithmPPDS }), "algorithm"},
		{"optbern for incidence", with(inc, func(c *Config) { c.Algorithm = AlgorithmOptBern }), "algorithm"},
		{"epsilon 0", with(density, func(c *Config) { c.Epsilon = 0 }), "epsilon"},
		{"epsilon NaN", with(density, func(c *Config) { c.Epsilon = math.NaN() }), "epsilon"},
		{"epsilon above 1/2 (Claim 3.1)", with(density, func(c *Config) { c.Epsilon = 0.51 }), "epsilon"},
		{"epsilon above 1/2, heavy hitters", with(hh, func(c *Config) { c.Epsilon = 0.6 }), "epsilon"},
		{"epsilon above 1, incidence", with(inc, func(c *Config) { c.Epsilon = 1.01 }), "epsilon"},
		{"empty universe", with(density, func(c *Config) { c.UniverseSize = 0 }), "universe_size"},
		{"universe beyond 2^53", with(density, func(c *Config) { c.UniverseSize = 1<<53 + 1 }), "universe_size"},
		{"no sample size", with(density, func(c *Config) { c.SampleSize = 0 }), "sample_size"},
		{"negative sample size", with(density, func(c *Config) { c.SampleSize = -1 }), "sample_size"},
		{"sample above universe", with(density, func(c *Config) { c.SampleSize = 1001 }), "sample_size"},
		{"sample and accuracy", with(density, func(c *Config) { c.Accuracy = &Accuracy{0.1, 0.1} }), "sample_size"},
		{"alpha 0", with(density, func(c *Config) { c.SampleSize, c.Accuracy = 0, &Accuracy{0, 0.1} }), "accuracy.alpha"},
		{"beta 1", with(density, func(c *Config) { c.SampleSize, c.Accuracy = 0, &Accuracy{0.1, 1} }), "accuracy.beta"},
		{"accuracy needs too large a sample", with(density, func(c *Config) { c.SampleSize, c.Accuracy = 0, &Accuracy{0.01, 0.01} }), "accuracy"},
		{"accuracy without sample, heavy hitters", with(hh, func(c *Config) { c.SampleSize, c.Accuracy = 0, &Accuracy{0.1, 0.1} }), "sample_size"},
		{"negative max_releases", with(density, func(c *Config) { c.MaxReleases = -1 }), "max_releases"},
		{"t for density", with(density, func(c *Config) { c.T = 3 }), "t"},
		{"k for cropped mean", with(crop, func(c *Config) { c.K = 3 }), "k"},
		{"cropped t = 1", with(crop, func(c *Config) { c.T = 1 }), "t"},
		{"cropped t too large", with(crop, func(c *Config) { c.T = maxCropT + 1 }), "t"},
		{"heavy hitters without N", with(hh, func(c *Config) { c.MaxOccurrences = 0 }), "max_occurrences"},
		{"heavy hitters k > N", with(hh, func(c *Config) { c.K = 65 }), "k"},
		{"heavy hitters k = 0", with(hh, func(c *Config) { c.K = 0 }), "k"},
		{"rho above 1", with(hh, func(c *Config) { c.Rho = 1.5 }), "rho"},
		{"rho too small for 64 tables", with(hh, func(c *Config) { c.Rho = 0.01 }), "rho"},
		{"t for heavy hitters", with(hh, func(c *Config) { c.T = 2 }), "t"},
		{"incidence t > N", with(inc, func(c *Config) { c.T = 9 }), "t"},
		{"incidence t = 0", with(inc, func(c *Config) { c.T = 0 }), "t"},
		{"incidence modulus bound too large", with(inc, func(c *Config) { c.K = maxModulus + 1 }), "k"},
		{"incidence too few primes below k", with(inc, func(c *Config) { c.K, c.Moduli = 5, 4 }), "k"},
		{"incidence too many moduli", with(inc, func(c *Config) { c.Moduli = maxModuli + 1 }), "moduli"},
		{"rho for incidence", with(inc, func(c *Config) { c.Rho = 1 }), "rho"},
		{"state too large", with(hh, func(c *Config) { c.UniverseSize, c.SampleSize = 1<<30, maxSampleSize }), "sample_size"},
	} {
		_, err := New(tc.cfg, dprand.Seeded(1))
		var pe *checks.FieldError
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%s: got %v, want a checks.FieldError on %q", tc.name, err, tc.field)
		}
	}
	if _, err := New(density, nil); err == nil {
		t.Error("nil random source accepted")
	}
}

// TestConfigDefaults checks the resolved configuration: default algorithms,
// rho and moduli, and m* chosen from an accuracy target.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := Config{Estimator: KindDensity, Epsilon: 0.5, UniverseSize: 1e6, Accuracy: &Accuracy{0.05, 0.05}}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := OptimalSampleSize(AlgorithmOptBern, 0.5, 0.05, 0.05)
	if c.Algorithm != AlgorithmOptBern || c.SampleSize != int(math.Ceil(want)) {
		t.Errorf("density defaults: %+v (m* = %v)", c, want)
	}
	if again, err := c.validate(true); err != nil || again.SampleSize != c.SampleSize {
		t.Errorf("resolved config does not validate unchanged: %v", err)
	}
	h, _ := Config{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 100, SampleSize: 10, K: 2, MaxOccurrences: 8}.Validate()
	i, _ := Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 100, SampleSize: 10, T: 2, MaxOccurrences: 8}.Validate()
	if h.Rho != 1 || h.Algorithm != AlgorithmDwork || i.Moduli != 3 {
		t.Errorf("defaults: rho %v, algorithm %v, moduli %v", h.Rho, h.Algorithm, i.Moduli)
	}
}
