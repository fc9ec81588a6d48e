package sanitize_test

import (
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// L(eps, delta) is the half-width of the window a row is supported on: a
// key of frequency i is reported as a token in (i - 2L - 1, i].
func ExampleL() {
	p, _ := sanitize.NewPrivacy(0.1, 1e-6)
	fmt.Printf("%.2f\n", sanitize.L(p))
	// Output: 108.19
}

// Without sampling, pi_i grows geometrically from delta (a key seen once is
// almost never reported) to 1 (every key from about 2L on is reported).
func ExampleReportingProbabilities() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	pi := sanitize.ReportingProbabilities(p, none, 20)
	fmt.Printf("L = %.2f\n", sanitize.L(p))
	for _, i := range []int{1, 2, 5, 10, 20} {
		fmt.Printf("pi_%d = %.6f\n", i, pi[i-1])
	}
	// Output:
	// L = 6.14
	// pi_1 = 0.001000
	// pi_2 = 0.003718
	// pi_5 = 0.085791
	// pi_10 = 0.982512
	// pi_20 = 1.000000
}

// A table holds Algorithm 4's rows; each row is the output distribution of
// a key of one true frequency, and Draw sanitizes one key with it.
func ExampleNewTable() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	tb, err := sanitize.NewTable(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete)
	if err != nil {
		panic(err)
	}
	row, _ := tb.Row(100)
	lo, hi := row.Pieces[0].Lo, row.Pieces[len(row.Pieces)-1].Hi
	fmt.Printf("row 100: reported with probability %g, as a token in (%g, %g]\n", row.Pi, lo, hi)

	out, _ := tb.Draw(100, dprand.Seeded(1))
	fmt.Println("reported:", out.Reported, "inside the row's support:", out.Value > lo && out.Value <= hi)
	// Output:
	// row 100: reported with probability 1, as a token in (86, 100]
	// reported: true inside the row's support: true
}

// AuditRows measures the exact privacy loss between the rows of neighbouring
// frequencies; a table is (eps, delta)-DP when neither direction exceeds
// delta for any pair. The constructions meet the DP constraints with
// equality, so the worst pair spends exactly delta.
func ExampleAuditRows() {
	p, _ := sanitize.NewPrivacy(0.5, 1e-4)
	s, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.05, 1, nil)
	tb, _ := sanitize.NewTable(p, s, sanitize.MethodMaxSeparation)
	worst := 0.0
	prev := sanitize.Row{} // frequency 0: never reported
	_ = tb.Rows(1, 200, func(r sanitize.Row) bool {
		up, down := sanitize.AuditRows(prev, r, p)
		worst = math.Max(worst, math.Max(up, down))
		prev = r
		return true
	})
	fmt.Printf("worst loss beyond e^eps over 200 rows: %.3g of delta %g\n", worst, p.Delta)
	fmt.Println("within delta:", worst <= p.Delta*(1+1e-12))
	// Output:
	// worst loss beyond e^eps over 200 rows: 0.0001 of delta 0.0001
	// within delta: true
}
