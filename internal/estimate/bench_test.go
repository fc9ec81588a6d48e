package estimate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Benchmarks (eps = 0.5, delta = 1e-6, so L = 24.8; ppswor tau = 0.01).
// BenchmarkRows is the cost of streaming the sanitizer rows alone, so the
// estimator's own cost is BenchmarkBuild minus BenchmarkRows. Run with
// -benchtime=1x for the large sizes.

func benchTable(b *testing.B, m sanitize.Method) *sanitize.Table {
	tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), mustSampling(sanitize.SchemePPSWOR, 0.01, nil), m)
	if err != nil {
		b.Fatal(err)
	}
	return tab
}

var benchSizes = []int64{1e4, 1e5, 1e6}

func BenchmarkRows(b *testing.B) {
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/n=%d", m, n), func(b *testing.B) {
				for b.Loop() {
					tab := benchTable(b, m) // fresh: no cached checkpoints
					pieces := 0
					if err := tab.Rows(1, n+100, func(r sanitize.Row) bool { pieces += len(r.Pieces); return true }); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			for _, n := range benchSizes {
				b.Run(fmt.Sprintf("%s/%s/n=%d", m, est, n), func(b *testing.B) {
					for b.Loop() {
						tab := benchTable(b, m)
						et, err := Build(tab, Spec{MaxFrequency: n, G: mustG("identity"), Estimator: est})
						if err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(float64(len(et.A))/float64(n), "tokens/n")
					}
				})
			}
		}
	}
}

// BenchmarkEstimate maps 10^6 released values (drawn end to end from a
// Zipf-like population) to their estimates.
func BenchmarkEstimate(b *testing.B) {
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		b.Run(string(m), func(b *testing.B) {
			st := benchTable(b, m)
			const n = 10_000
			et, err := Build(st, Spec{MaxFrequency: n, G: mustG("identity"), Estimator: MLE})
			if err != nil {
				b.Fatal(err)
			}
			rng := dprand.Seeded(3)
			freqs := make([]int64, 0, 1_000_000)
			for len(freqs) < cap(freqs) {
				freqs = append(freqs, min(n, 50+int64(math.Ceil(math.Pow(1-rng.Float64(), -1/1.3)))))
			}
			outs, err := st.DrawAll(freqs, rng, nil)
			if err != nil {
				b.Fatal(err)
			}
			values := make([]float64, 0, len(outs))
			for _, o := range outs {
				if o.Reported {
					values = append(values, o.Value)
				}
			}
			pairs := len(values)
			for len(values) < 1_000_000 {
				values = append(values, values[:min(pairs, 1_000_000-len(values))]...)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := et.estimateSum(values); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(values)), "ns/pair")
		})
	}
}

// BenchmarkOrder ranks 10^6 (key, value) pairs (the ordinal statistics).
func BenchmarkOrder(b *testing.B) {
	rng := dprand.Seeded(4)
	pairs := make([]Pair, 1_000_000)
	for k := range pairs {
		pairs[k] = Pair{Key: fmt.Sprint(k), Value: math.Floor(rng.Float64() * 1e4)}
	}
	for b.Loop() {
		if _, err := topK(pairs, 100, rng); err != nil {
			b.Fatal(err)
		}
	}
}
