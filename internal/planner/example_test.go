package planner_test

import (
	"context"
	"fmt"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// Zipf is the planner's synthetic distribution: on n keys, the key of rank
// r has frequency floor((n/r)^alpha); the answer counts the keys of each
// frequency, smallest frequency first.
func ExampleZipf() {
	dist, err := planner.Zipf(1, 10)
	if err != nil {
		panic(err)
	}
	for _, fc := range dist {
		fmt.Printf("frequency %d: %g keys\n", fc.Frequency, fc.Keys)
	}
	// Output:
	// frequency 1: 5 keys
	// frequency 2: 2 keys
	// frequency 3: 1 keys
	// frequency 5: 1 keys
	// frequency 10: 1 keys
}

// Plan compares, before anything is released, what PWS, the sampled
// Stability-based Histograms baseline and non-private sampling would report
// of a distribution, and the error (NRMSE) of each estimate of the sum of
// frequencies. Everything is exact, nothing is drawn, so the answer is the
// same on every run.
func ExamplePlan() {
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	s, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	res, err := planner.Plan(context.Background(), planner.PlanRequest{
		Privacy: p, Sampling: s, Distribution: "zipf", Alpha: 1, N: 1000,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("L = %.3f, keys %g, largest frequency %d\n", res.L, res.Keys, res.MaxFrequency)
	r := res.ReportedFraction
	fmt.Println("PWS reports more keys than SbH:", r.PWS > r.SbH, "and fewer than non-private sampling:", r.PWS < r.NonPrivate)
	e := res.NRMSE
	fmt.Println("PWS error below SbH's:", e.PWS < e.SbH, "above non-private sampling's:", e.PWS > e.NonPrivate)
	// Output:
	// L = 24.817, keys 1000, largest frequency 1000
	// PWS reports more keys than SbH: true and fewer than non-private sampling: true
	// PWS error below SbH's: true above non-private sampling's: true
}

// An invalid request is refused with a field error naming each planner
// parameter as the HTTP API names it.
func ExamplePlanRequest_Validate() {
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	err := planner.PlanRequest{Privacy: p, Distribution: "zipf", Alpha: 9,
		Sweep: true, SweepFrom: 0.5, SweepTo: 0.1}.Validate()
	fields, _ := checks.Fields(err)
	for _, f := range fields {
		fmt.Printf("%s: %s\n", f.Field, f.Reason)
	}
	// Output:
	// alpha: must be greater than 0 and at most 4
	// sweep_to: must be greater than sweep_from and at most 1e6
}

// SbHReporting gives the baseline's reporting probabilities, which PWS
// dominates at every frequency (Section 8.1).
func ExampleSbHReporting() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	sbh, _ := planner.SbHReporting(p, none, 20)
	pws := sanitize.ReportingProbabilities(p, none, 20)
	for _, i := range []int{5, 10, 20} {
		fmt.Printf("frequency %d: SbH %.4f, PWS %.4f\n", i, sbh[i-1], pws[i-1])
	}
	// Output:
	// frequency 5: SbH 0.0273, PWS 0.0858
	// frequency 10: SbH 0.9383, PWS 0.9825
	// frequency 20: SbH 1.0000, PWS 1.0000
}
