package sanitize

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/pwsd/pwsd/internal/cpuclock"
)

// benchPrivacy is the setting of the performance targets: eps 0.1, delta 1e-6
// (L = 108: Algorithm 4 rows have ~218 tokens, Algorithm 5 rows ~327 pieces).
func benchPrivacy(b testing.TB) Privacy { return mustPrivacy(b, 0.1, 1e-6) }

// BenchmarkRows streams rows 1..n of a fresh table (building Row values).
// With ppswor tau = 1e-7, q_i < 1 throughout, no stationary shortcut applies
// and every row is computed from its predecessor: the time grows linearly
// in n times the window (which widens here as q_i grows; ns/piece is the
// constant). With tau = 0.01 (typical), q_i = 1 from i = 3882 on and the
// rows past the stationary point are shifted copies.
func BenchmarkRows(b *testing.B) {
	for _, tau := range []float64{1e-7, 0.01} {
		s := mustSampling(b, SchemePPSWOR, tau, 1, nil)
		for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
			for _, n := range []int64{1e3, 1e4, 1e5, 1e6} {
				b.Run(fmt.Sprintf("tau=%g/%s/n=%d", tau, m, n), func(b *testing.B) {
					pieces := 0
					for b.Loop() {
						tb := mustTable(b, benchPrivacy(b), s, m)
						tb.Rows(1, n, func(r Row) bool { pieces += len(r.Pieces); return true })
					}
					ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
					b.ReportMetric(ns/float64(n), "ns/row")
					b.ReportMetric(ns*float64(b.N)/float64(pieces), "ns/piece")
				})
			}
		}
	}
}

// BenchmarkMachineCalibration times cpuclock.CalibrationOp, 300 float64
// additions in a dependent chain kept in memory: about 1.2 us on this
// project's 2-core machine kind. Quoted next to the other numbers so they
// can be scaled on a busy or different machine; tests that check a cost
// model use the same operation as their unit of CPU time (cpuclock.Unit).
func BenchmarkMachineCalibration(b *testing.B) {
	var acc float64
	for b.Loop() {
		cpuclock.CalibrationOp(&acc)
	}
}

// BenchmarkMachineCalibrationInline is the loop BenchmarkMachineCalibration
// ran before it called cpuclock.CalibrationOp, kept so that both can be run
// side by side: they agree within about 15% (the call), so figures quoted before stay
// comparable.
func BenchmarkMachineCalibrationInline(b *testing.B) {
	v := make([]float64, 300)
	for k := range v {
		v[k] = float64(k) * 1.1e-3
	}
	var out float64
	for b.Loop() {
		s := 0.0
		for _, x := range v {
			s += x
		}
		out += s
	}
	_ = out
}

// BenchmarkHugeFrequency: Row(1e9) on a fresh table with q = 1 (none and
// ppswor tau = 0.01), including detecting stationarity.
func BenchmarkHugeFrequency(b *testing.B) {
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		for _, s := range []Sampling{{Scheme: SchemeNone}, mustSampling(b, SchemePPSWOR, 0.01, 1, nil)} {
			b.Run(fmt.Sprintf("%s/%s", m, s.Scheme), func(b *testing.B) {
				for b.Loop() {
					tb := mustTable(b, benchPrivacy(b), s, m)
					if _, err := tb.Row(1_000_000_000); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// zipfFrequencies returns n Zipf-like frequencies (P(w >= k) ~ k^-1/1.2).
func zipfFrequencies(n int, seed uint64) []int64 {
	rng := newRand(seed)
	out := make([]int64, n)
	for k := range out {
		out[k] = int64(math.Min(1e9, math.Floor(math.Pow(1-rng.Float64(), -1.2))))
	}
	return out
}

// BenchmarkSanitize1e6 sanitizes 10^6 sampled keys with Zipf-like
// frequencies (ppswor tau = 0.01) on a fresh table, one Draw per key, one
// Drawer.Draw per key, and with DrawAll.
func BenchmarkSanitize1e6(b *testing.B) {
	freqs := zipfFrequencies(1_000_000, 1)
	s := mustSampling(b, SchemePPSWOR, 0.01, 1, nil)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		b.Run(string(m)+"/Draw", func(b *testing.B) {
			rng := newRand(2)
			for b.Loop() {
				tb := mustTable(b, benchPrivacy(b), s, m)
				for _, f := range freqs {
					if _, err := tb.Draw(f, rng); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(string(m)+"/Drawer", func(b *testing.B) {
			rng := newRand(2)
			for b.Loop() {
				dr := mustTable(b, benchPrivacy(b), s, m).NewDrawer(rng)
				for _, f := range freqs {
					if _, err := dr.Draw(f); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(string(m)+"/DrawAll", func(b *testing.B) {
			rng := newRand(2)
			var out []Outcome
			for b.Loop() {
				tb := mustTable(b, benchPrivacy(b), s, m)
				var err error
				if out, err = tb.DrawAll(freqs, rng, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFrequencies6000 is the Go side of scripts/bench_vs_python.sh: the
// discrete frequencies table for n = 6000, q = 1, eps 0.1, delta 1e-6, from a
// fresh table.
func BenchmarkFrequencies6000(b *testing.B) {
	for b.Loop() {
		tb := mustTable(b, benchPrivacy(b), Sampling{Scheme: SchemeNone}, MethodDiscrete)
		tb.Rows(1, 6000, func(Row) bool { return true })
	}
}

// TestDenseDigest prints a digest of row n (pi_n and the mean token
// sum_j j pi_{n,j}) for scripts/bench_vs_python.sh to compare with the
// Python reference; it runs only when PWSD_DIGEST_N is set.
func TestDenseDigest(t *testing.T) {
	t.Parallel()
	ns := os.Getenv("PWSD_DIGEST_N")
	if ns == "" {
		t.Skip("set PWSD_DIGEST_N (and PWSD_DIGEST_EPS, PWSD_DIGEST_DELTA) to print the digest")
	}
	n, _ := strconv.ParseInt(ns, 10, 64)
	eps, _ := strconv.ParseFloat(os.Getenv("PWSD_DIGEST_EPS"), 64)
	delta, _ := strconv.ParseFloat(os.Getenv("PWSD_DIGEST_DELTA"), 64)
	tb := mustTable(t, mustPrivacy(t, eps, delta), Sampling{Scheme: SchemeNone}, MethodDiscrete)
	r, err := tb.Row(n)
	if err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for _, pc := range r.Pieces {
		mean += pc.Hi * pc.P
	}
	fmt.Printf("digest n=%d pi=%.15g mean_token=%.15g\n", n, r.Pi, mean)
}

// BenchmarkRowAt1e7 is the row at frequency 10^7 with ppswor tau = 1e-5 on
// a fresh table (q_i < 1 until about 3.9 * 10^6), and the row at 10^9 with
// tau 1e-7 (q_i < 1 until about 3.9 * 10^8): rows by restart reach both in
// a few warm-ups (the chain from row 0 took seconds for the first).
func BenchmarkRowAt1e7(b *testing.B) {
	for _, c := range []struct {
		tau float64
		f   int64
	}{{1e-5, 10_000_000}, {1e-7, 1_000_000_000}} {
		s := mustSampling(b, SchemePPSWOR, c.tau, 1, nil)
		for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
			b.Run(fmt.Sprintf("f=%d/%s", c.f, m), func(b *testing.B) {
				for b.Loop() {
					tb := mustTable(b, benchPrivacy(b), s, m)
					if _, err := tb.Row(c.f); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
