package service

import (
	"context"
	"fmt"
	"testing"

	"github.com/pwsd/pwsd/internal/cpuclock"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// BenchmarkFrequencyRowsCold is the cold frequencies-table request of issue
// 12 (eps 0.2, delta 1e-7, ppswor tau 2e-5, frequency 10^6: q_i < 1 on every
// row), in process, on a fresh service each time (no cached table). Run with
// -benchtime=1x.
func BenchmarkFrequencyRowsCold(b *testing.B) {
	p, err := sanitize.NewPrivacy(0.2, 1e-7)
	if err != nil {
		b.Fatal(err)
	}
	smp, err := sanitize.NewSampling(sanitize.SchemePPSWOR, 2e-5, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, f := range []int64{1e5, 1e6} {
			b.Run(fmt.Sprintf("%s/frequency=%d", m, f), func(b *testing.B) {
				for b.Loop() {
					svc, err := New(Config{Store: store.NewMemory()})
					if err != nil {
						b.Fatal(err)
					}
					cpu0, err := cpuclock.Process()
					if err != nil {
						b.Fatal(err)
					}
					rows, err := svc.Tables.FrequencyRows(context.Background(), p, smp, m, f, f)
					if err != nil || len(rows.Rows) != 1 {
						b.Fatal(err)
					}
					cpu1, err := cpuclock.Process()
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64((cpu1 - cpu0).Milliseconds()), "cpu-ms")
				}
			})
		}
	}
}

// BenchmarkFrequencyRowsColdRowsOnly is the floor of BenchmarkFrequencyRowsCold:
// streaming the sanitizer rows 1..frequency+200 alone (the row supports
// start above the frequency after about 140 more rows), on a fresh table.
// It reports the rows the table stepped (junction checks' warm-ups
// included).
func BenchmarkFrequencyRowsColdRowsOnly(b *testing.B) {
	p, err := sanitize.NewPrivacy(0.2, 1e-7)
	if err != nil {
		b.Fatal(err)
	}
	smp, err := sanitize.NewSampling(sanitize.SchemePPSWOR, 2e-5, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, f := range []int64{1e5, 1e6} {
			b.Run(fmt.Sprintf("%s/frequency=%d", m, f), func(b *testing.B) {
				for b.Loop() {
					t, err := sanitize.NewTable(p, smp, m)
					if err != nil {
						b.Fatal(err)
					}
					if err := t.Rows(1, f+200, func(sanitize.Row) bool { return true }); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(t.RowsStepped()), "rows")
				}
			})
		}
	}
}

// BenchmarkFrequencyRowsFarUp is issue 34's tables-route case: one row of
// the frequencies table at 10^7 and 10^9 (eps 0.5, delta 1e-6, ppswor tau
// 1e-5), in process, on a fresh service each time (nothing cached), under
// the default limits: the MLE contributions alone (the biased-down ones
// would pass the work limit). Run with -benchtime=1x.
func BenchmarkFrequencyRowsFarUp(b *testing.B) {
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, f := range []int64{1e7, 1e9} {
			b.Run(fmt.Sprintf("%s/frequency=%d", m, f), func(b *testing.B) {
				for b.Loop() {
					svc, err := New(Config{Store: store.NewMemory()})
					if err != nil {
						b.Fatal(err)
					}
					rows, err := svc.Tables.FrequencyRows(context.Background(), p, smp, m, f, f)
					if err != nil || len(rows.Rows) != 1 || !rows.BiasedDownOmitted {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
