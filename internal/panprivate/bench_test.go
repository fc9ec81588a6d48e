package panprivate

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

// BenchmarkApply measures in-process ingest, in events per second on one
// core, for every estimator: batches of 4096 appearances of users drawn
// uniformly from a universe of 10^6 with a sample of 10^4 (the "/dense"
// cases sample every user, so every event updates the tables).
func BenchmarkApply(b *testing.B) {
	const n = 1_000_000
	base := Config{Epsilon: 0.5, UniverseSize: n, SampleSize: 10_000}
	dense := func(f func(Config) Config) func(Config) Config {
		return func(c Config) Config { c = f(c); c.SampleSize = n / 10; c.UniverseSize = n / 10; return c }
	}
	densityOptBern := func(c Config) Config { c.Estimator, c.Algorithm = KindDensity, AlgorithmOptBern; return c }
	hh := func(c Config) Config {
		c.Estimator, c.K, c.MaxOccurrences = KindHeavyHitters, 16, 1024
		return c
	}
	cases := []struct {
		name  string
		cfg   func(Config) Config
		names bool
	}{
		{"density/optbern/dense", dense(densityOptBern), false},
		{"heavy_hitters/dense", dense(hh), false},
		{"density/dwork", func(c Config) Config { c.Estimator, c.Algorithm = KindDensity, AlgorithmDwork; return c }, false},
		{"density/optbern", func(c Config) Config { c.Estimator, c.Algorithm = KindDensity, AlgorithmOptBern; return c }, false},
		{"density/ppds", func(c Config) Config { c.Estimator, c.Algorithm = KindDensity, AlgorithmPPDS; return c }, false},
		{"density/optbern/string-ids", func(c Config) Config { c.Estimator, c.Algorithm = KindDensity, AlgorithmOptBern; return c }, true},
		{"cropped_mean", func(c Config) Config { c.Estimator, c.T = KindCroppedMean, 8; return c }, false},
		{"heavy_hitters", func(c Config) Config {
			c.Estimator, c.K, c.MaxOccurrences = KindHeavyHitters, 16, 1024
			return c
		}, false},
		{"incidence", func(c Config) Config {
			c.Estimator, c.T, c.MaxOccurrences, c.Epsilon = KindIncidence, 2, 64, 1
			return c
		}, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			rng := dprand.Seeded(1)
			cfg := tc.cfg(base)
			e, err := New(cfg, rng)
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]Event, 4096)
			for i := range batch {
				u := rng.Uint64N(cfg.UniverseSize)
				if tc.names {
					batch[i] = Event{User: userName("user-" + strconv.FormatUint(u, 10))}
				} else {
					batch[i] = Event{User: UserID(u)}
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := e.Apply(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkRelease measures one release per estimator.
func BenchmarkRelease(b *testing.B) {
	cfgs := []Config{
		{Estimator: KindDensity, Algorithm: AlgorithmOptBern, Epsilon: 0.5, UniverseSize: 1e6, SampleSize: 1e4},
		{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 1e6, SampleSize: 1e4, K: 16, MaxOccurrences: 1024},
		{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 1e6, SampleSize: 1e4, T: 2, MaxOccurrences: 64},
	}
	for _, cfg := range cfgs {
		b.Run(fmt.Sprint(cfg.Estimator), func(b *testing.B) {
			e := mustNew(b, cfg, dprand.Seeded(1))
			noise := seededNoise(2)
			for i := 0; i < b.N; i++ {
				if _, err := e.Release(noise); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
