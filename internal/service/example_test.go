package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"slices"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// newExampleService is a Service over a fresh in-memory store. Production
// leaves Noise and NewRand nil (crypto-seeded generators); the examples seed
// them so that every run is the same.
func newExampleService() *service.Service {
	seed := uint64(0)
	svc, err := service.New(service.Config{
		Store: store.NewMemory(),
		Noise: dprandtest.NewLaplace(dprand.Seeded(1)),
		NewRand: func() *rand.Rand {
			seed++
			return dprand.Seeded(seed)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	return svc
}

// elements is an ElementSource over raw (key, frequency) pairs; the service
// keeps none of them, only the sanitized release.
func elements(keys []string, freqs []int64) service.ElementSource {
	i := 0
	return func() (string, int64, error) {
		if i == len(keys) {
			return "", 0, io.EOF
		}
		i++
		return keys[i-1], freqs[i-1], nil
	}
}

// sampleSpec describes a frequencies release of unsampled data at
// (eps, delta)-DP with the discrete sanitizer, charged to dataset (none
// when empty).
func sampleSpec(dataset string, eps, delta float64) service.SampleSpec {
	p, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		log.Fatal(err)
	}
	s, err := sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)
	if err != nil {
		log.Fatal(err)
	}
	spec, err := service.NewSampleSpec(dataset, p, s, service.ReleaseFrequencies, sanitize.MethodDiscrete)
	if err != nil {
		log.Fatal(err)
	}
	return spec
}

// CreateSample sanitizes elements as they stream in and stores only the
// release. At (1, 1e-6)-DP every key of frequency 1000 is reported (pi = 1
// from about 2L = 28 on) and a key seen once almost never is; the release
// lists the reported keys in random order.
func ExampleSamples_Create() {
	svc := newExampleService()
	smp, err := svc.Samples.Create(context.Background(), sampleSpec("", 1, 1e-6), 1000,
		elements([]string{"a/1", "a/2", "b/1"}, []int64{1000, 1000, 1000}))
	if err != nil {
		log.Fatal(err)
	}
	var keys []string
	for _, e := range smp.Elements {
		keys = append(keys, e.Key)
	}
	slices.Sort(keys)
	fmt.Println("release:", smp.Spec.Release, "method:", smp.Spec.Method, "reported:", smp.Reported, keys)
	// Output:
	// release: frequencies method: discrete reported: 3 [a/1 a/2 b/1]
}

// EstimateSample answers a sum over the selected keys from a stored release
// with its standard error and interval. With delta = 1 the discrete
// sanitizer is the identity (no privacy at all): the estimate is then the
// exact sum of the selected frequencies, 100 + 200, with no error.
func ExampleEstimates_Sample() {
	ctx := context.Background()
	svc := newExampleService()
	smp, err := svc.Samples.Create(ctx, sampleSpec("", 1, 1), 1000,
		elements([]string{"a/1", "a/2", "b/1"}, []int64{100, 200, 400}))
	if err != nil {
		log.Fatal(err)
	}
	g, _ := estimate.ParseG("identity")
	est, err := svc.Estimates.Sample(ctx, smp.ID, g, estimate.MLE, service.Selection{Prefix: "a/"}, 0.95, service.GroupBy{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("selected %d, estimate %.6g, standard error %.3g, interval at %g: [%.6g, %.6g]\n",
		est.Selected, est.Estimate, est.StandardError, est.Interval.Level, est.Interval.Lower, est.Interval.Upper)
	// Output:
	// selected 2, estimate 300, standard error 0, interval at 0.95: [300, 300]
}

// A release that names a dataset is charged to its budget in the same store
// operation that keeps it; an overspend is refused with the numbers before
// any element is read, and charges nothing.
func ExampleDatasets_Charge() {
	ctx := context.Background()
	svc := newExampleService()
	if _, err := svc.Datasets.Create(ctx, "queries", 1, 1e-5); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Samples.Create(ctx, sampleSpec("queries", 0.5, 1e-6), 10, elements([]string{"a"}, []int64{170})); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.Datasets.Charge(ctx, "queries", 0.25, 0, "beam run 7"); err != nil {
		log.Fatal(err)
	}
	_, err := svc.Datasets.Charge(ctx, "queries", 0.5, 0, "one too many")
	var be *service.BudgetError
	fmt.Println("overspend refused:", errors.Is(err, service.ErrBudget), errors.As(err, &be))

	d, err := svc.Datasets.Get(ctx, "queries")
	if err != nil {
		log.Fatal(err)
	}
	// New datasets compose their releases by privacy loss distributions:
	// for two releases the gain over adding epsilons is small.
	fmt.Printf("accounting %s: spent epsilon %.4f at delta %g; basic composition (%g, %g); budget (%g, %g)\n",
		d.Accounting, d.ComposedEpsilon, d.DeltaBudget, d.SpentEpsilon, d.SpentDelta, d.EpsilonBudget, d.DeltaBudget)
	for _, r := range d.Releases {
		fmt.Println("ledger:", r.Kind, r.Mechanism, r.Epsilon, r.Delta)
	}
	n, err := svc.Datasets.Admits(ctx, "queries", 0.01, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("further (0.01, 0) releases admitted:", n, "(adding epsilons: 25)")
	// Output:
	// overspend refused: true true
	// accounting pld: spent epsilon 0.7500 at delta 1e-05; basic composition (0.75, 1e-06); budget (1, 1e-05)
	// ledger: sample generic 0.5 1e-06
	// ledger: external generic 0.25 0
	// further (0.01, 0) releases admitted: 66 (adding epsilons: 25)
}

// A pan-private stream keeps only its private state: each batch of events
// is applied in one transaction, and each release is noisy, states its
// uncertainty and counts against max_releases.
func ExampleStreams_Release() {
	ctx := context.Background()
	svc := newExampleService()
	st, err := svc.Streams.Create(ctx, service.StreamSpec{Estimator: panprivate.Config{
		Estimator: panprivate.KindDensity, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 1000, MaxReleases: 1,
	}})
	if err != nil {
		log.Fatal(err)
	}
	var events []panprivate.Event
	for id := range uint64(300) {
		events = append(events, panprivate.Event{User: panprivate.UserID(id)})
	}
	if _, err := svc.Streams.Apply(ctx, st.ID, events); err != nil {
		log.Fatal(err)
	}
	r, err := svc.Streams.Release(ctx, st.ID, 0.9)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("epsilon spent:", r.EpsilonSpent, "standard error > 0:", r.StandardError.Value > 0,
		"interval at", r.Interval.Level, "within [0, 1]:", r.Interval.Lower >= 0 && r.Interval.Upper <= 1)
	_, err = svc.Streams.Release(ctx, st.ID, 0.9)
	fmt.Println("second release:", errors.Is(err, service.ErrLimit))
	// Output:
	// epsilon spent: 0.5 standard error > 0: true interval at 0.9 within [0, 1]: true
	// second release: true
}

// A counter under continual observation answers after every step with a
// noisy count and its standard error; a bit other than 0 or 1 is refused,
// naming its position, and changes nothing.
func ExampleCounters_Steps() {
	ctx := context.Background()
	svc := newExampleService()
	c, err := svc.Counters.Create(ctx, panprivate.CounterConfig{Algorithm: panprivate.CounterTree, Epsilon: 1, Horizon: 8})
	if err != nil {
		log.Fatal(err)
	}
	out, err := svc.Counters.Steps(ctx, c.ID, []int{1, 0, 1, 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("outputs:", len(out.Raw), "standard errors:", len(out.StandardErrors))
	_, err = svc.Counters.Steps(ctx, c.ID, []int{1, 2})
	fields, _ := checks.Fields(err)
	fmt.Println("refused:", fields[0].Field)
	c, _ = svc.Counters.Get(ctx, c.ID)
	fmt.Println("steps:", c.State.Steps)
	// Output:
	// outputs: 4 standard errors: 4
	// refused: bits[1]
	// steps: 4
}
