package estimate_test

import (
	"context"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// A sum over a tiny sanitized sample: each released token is mapped to its
// per-token estimate, and the sum comes with a standard error, a 95%
// interval and a reliability statement. Tokens are not frequencies: a key
// of frequency i is released about L(eps, delta) = 6.14 below i here, and the
// MLE moves it back; the sum is the sum of the per-token estimates.
func ExampleSumWithError() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	tb, _ := sanitize.NewTable(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete)
	identity, err := estimate.Build(tb, estimate.Spec{MaxFrequency: 300, G: estimate.G{Kind: estimate.GIdentity}, Estimator: estimate.MLE})
	if err != nil {
		panic(err)
	}
	count, _ := estimate.Build(tb, estimate.Spec{MaxFrequency: 300, G: estimate.G{Kind: estimate.GCount}, Estimator: estimate.MLE})

	// Three keys were released with these sanitized tokens.
	var keys []estimate.ReportedKey
	for _, v := range []float64{40, 95, 180} {
		a, _ := identity.Estimate(v)
		f, _ := estimate.MLEFrequency(identity, count, v)
		fmt.Printf("token %g: estimate %.2f\n", v, a)
		keys = append(keys, estimate.ReportedKey{Value: v, Frequency: f})
	}
	sum, _ := estimate.SumWithError(identity, keys, 0.95, p, sanitize.Sampling{Scheme: sanitize.SchemeNone})
	fmt.Printf("sum %.2f ± %.2f (95%%: [%.2f, %.2f]), reliable: %v\n",
		sum.Estimate, sum.StandardError, sum.Interval.Lower, sum.Interval.Upper, sum.Reliability.Reliable)
	// Output:
	// token 40: estimate 46.00
	// token 95: estimate 101.00
	// token 180: estimate 186.00
	// sum 333.00 ± 2.41 (95%: [328.30, 337.74]), reliable: true
}

// Stats gives the exact error of one key's estimate at a true frequency:
// what a planner needs before any data is seen. A light key is almost never
// reported, so its estimate is biased towards 0; a heavy one is estimated
// nearly without bias.
func ExampleTable_Stats() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	tb, _ := sanitize.NewTable(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete)
	identity, _ := estimate.Build(tb, estimate.Spec{MaxFrequency: 300, G: estimate.G{Kind: estimate.GIdentity}, Estimator: estimate.MLE})
	for _, i := range []int64{3, 100} {
		st, _ := identity.Stats(i)
		fmt.Printf("i=%d: reported with probability %.4f, expected estimate %.2f, bias %.2f, variance %.2f\n", i, st.Reported, st.Expected, st.Bias, st.Variance)
	}
	// Output:
	// i=3: reported with probability 0.0111, expected estimate 0.12, bias -2.88, variance 1.20
	// i=100: reported with probability 1.0000, expected estimate 99.80, bias -0.20, variance 1.93
}

// A sum resting on a few keys: ppswor sampling at tau = 1e-4 keeps a key of
// frequency i with probability 1 - e^(-i/10^4), so each light key the
// release shows stands for about 1/tau = 10^4 of the sum. With three keys
// the estimate is a sum of three large weights, skewed to the right: the
// gamma interval reaches further up than the normal one (and not as far
// down), and allows for one key the sampling missed (unseen weight). With
// one key nothing says how many others the sampling missed, and with none
// the answer is 0 but not reliable.
func ExampleSumWithError_fewKeys() {
	p, _ := sanitize.NewPrivacy(1, 1e-6)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 1e-4, 1, nil)
	tb, _ := sanitize.NewTable(p, smp, sanitize.MethodDiscrete)
	identity, _ := estimate.Build(tb, estimate.Spec{MaxFrequency: 4000, G: estimate.G{Kind: estimate.GIdentity}, Estimator: estimate.MLE})
	count, _ := estimate.Build(tb, estimate.Spec{MaxFrequency: 4000, G: estimate.G{Kind: estimate.GCount}, Estimator: estimate.MLE})
	var keys []estimate.ReportedKey
	for _, v := range []float64{480, 1190, 2590} {
		f, _ := estimate.MLEFrequency(identity, count, v)
		keys = append(keys, estimate.ReportedKey{Value: v, Frequency: f})
	}
	for _, n := range []int{3, 1, 0} {
		s, _ := estimate.SumWithError(identity, keys[:n], 0.95, p, smp)
		normal := estimate.NormalInterval(s.Estimate, s.StandardError, 0.95, 0, math.Inf(1))
		fmt.Printf("%d keys: %.0f ± %.0f, gamma [%.0f, %.0f] (normal [%.0f, %.0f]), effective keys %.2f, unseen weight %.0f, reliable %v\n",
			n, s.Estimate, s.StandardError, s.Interval.Lower, s.Interval.Upper, normal.Lower, normal.Upper,
			s.Reliability.EffectiveKeys, s.UnseenWeight, s.Reliability.Reliable)
	}
	// Output:
	// 3 keys: 32217 ± 17300, gamma [7709, 115355] (normal [0, 66125]), effective keys 3.00, unseen weight 19993, reliable true
	// 1 keys: 10247 ± 9999, gamma [302, 87144] (normal [0, 29845]), effective keys 1.00, unseen weight 19993, reliable false
	// 0 keys: 0 ± 0, gamma [0, 73752] (normal [0, 0]), effective keys 0.00, unseen weight 19993, reliable false
}

// Open is the one entry point of the estimator builders: it is asked for a
// table, a run of MLE chunks or rows with their estimates, and its decision
// table picks the builder (here the dense unit-cell builders, as the rows
// are Algorithm 4's; under -tags pwsd_reference the references, with the
// same answers). The chunk holding a value gives the table's estimate
// there, bit for bit.
func ExampleOpen() {
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	tb, _ := sanitize.NewTable(p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, sanitize.MethodDiscrete)
	identity := estimate.G{Kind: estimate.GIdentity}
	table, err := estimate.Open(context.Background(), tb, estimate.Ask{Table: &estimate.Spec{MaxFrequency: 300, G: identity, Estimator: estimate.MLE}})
	if err != nil {
		panic(err)
	}
	size := estimate.ChunkSize(p)
	chunks, err := estimate.Open(context.Background(), tb, estimate.Ask{Chunks: &estimate.ChunkAsk{Gs: []estimate.G{identity}, Size: size, First: estimate.ChunkOf(95, size), Count: 1}})
	if err != nil {
		panic(err)
	}
	fromTable, _ := table.Table.Estimate(95)
	fromChunk, _ := chunks.Chunks[0][0].Estimate(95)
	fmt.Printf("token 95: table %.2f, chunk %.2f, same: %v\n", fromTable, fromChunk, fromTable == fromChunk)
	// Output:
	// token 95: table 101.00, chunk 101.00, same: true
}
