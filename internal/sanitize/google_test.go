package sanitize

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/differential-privacy/go/v3/dpagg"
)

// googleKeepProbability is the closed form of keepPartitionProbability in
// github.com/google/differential-privacy/go/v3/dpagg/select_partition.go
// (unexported there) for one partition per privacy unit, transcribed with
// its own arithmetic: the solution of the same recurrence as Algorithm 3
// with q = 1 (Desfontaines et al., "Differentially private partition
// selection", Theorem 1).
func googleKeepProbability(n int64, eps, delta float64) float64 {
	sumExp := func(minPower, numPowers int64) float64 { // sum_{k=min}^{min+num-1} e^{k eps}
		if minPower >= 1 {
			return math.Exp(float64(minPower-1)*eps) * (math.Exp(float64(numPowers)*eps) - 1) / (1 - math.Exp(-eps))
		}
		return (math.Exp(float64(numPowers+minPower-1)*eps) - math.Exp(float64(minPower-1)*eps)) / (1 - math.Exp(-eps))
	}
	nCr := int64(1 + math.Floor((1/eps)*math.Log((1+math.Exp(-eps)*(2*delta-1))/(delta*(1+math.Exp(-eps))))))
	if n <= nCr {
		return delta * sumExp(0, n)
	}
	pCr := delta * sumExp(0, nCr)
	m := n - nCr
	return math.Min(1+math.Exp(-float64(m)*eps)*(pCr-1)+sumExp(-m, m)*delta, 1)
}

// Algorithm 3 with q = 1 is Google's pre-aggregation partition selection:
// pi_i equals its keep probability (closed form, to 1e-9), pi reaches 1 at
// GetHardThreshold (within one index: both round differently near 1), and
// ShouldKeepPartition keeps a partition with i users at rate pi_i
// (empirically, within 6 standard errors).
func TestAlgorithm3MatchesGooglePartitionSelection(t *testing.T) {
	t.Parallel()
	for _, pr := range [][2]float64{{0.1, 1e-6}, {0.5, 1e-3}, {1, 1e-5}, {2, 1e-9}, {0.05, 0.01}} {
		t.Run(fmt.Sprintf("eps=%g,delta=%g", pr[0], pr[1]), func(t *testing.T) {
			eps, delta := pr[0], pr[1]
			p := mustPrivacy(t, eps, delta)
			sel, err := dpagg.NewPreAggSelectPartition(&dpagg.PreAggSelectPartitionOptions{Epsilon: eps, Delta: delta, MaxPartitionsContributed: 1})
			if err != nil {
				t.Fatal(err)
			}
			hard, err := sel.GetHardThreshold()
			if err != nil {
				t.Fatal(err)
			}
			pi := ReportingProbabilities(p, Sampling{Scheme: SchemeNone}, hard+5)
			firstOne := 0
			for i, v := range pi {
				if want := googleKeepProbability(int64(i+1), eps, delta); math.Abs(v-want) > 1e-9 {
					t.Errorf("eps=%g delta=%g: pi_%d = %.15g, Google %.15g", eps, delta, i+1, v, want)
				}
				if v == 1 && firstOne == 0 {
					firstOne = i + 1
				}
			}
			if firstOne < hard-1 || firstOne > hard+1 {
				t.Errorf("eps=%g delta=%g: pi reaches 1 at %d, Google's hard threshold is %d", eps, delta, firstOne, hard)
			}
			// Empirical keep rate at the frequency where pi is closest to 1/2.
			mid := 1
			for i, v := range pi {
				if math.Abs(v-0.5) < math.Abs(pi[mid-1]-0.5) {
					mid = i + 1
				}
			}
			const trials = 20000
			kept := 0
			for range trials {
				s, _ := dpagg.NewPreAggSelectPartition(&dpagg.PreAggSelectPartitionOptions{Epsilon: eps, Delta: delta, MaxPartitionsContributed: 1})
				s.IncrementBy(int64(mid))
				if ok, _ := s.ShouldKeepPartition(); ok {
					kept++
				}
			}
			rate, want := float64(kept)/trials, pi[mid-1]
			if se := math.Sqrt(want * (1 - want) / trials); math.Abs(rate-want) > 6*se {
				t.Errorf("eps=%g delta=%g: ShouldKeepPartition kept %.4f of partitions with %d users, pi = %.4f", eps, delta, rate, mid, want)
			}
		})
	}
}
