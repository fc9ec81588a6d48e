package panprivate

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// TestCounterErrorTable measures the counters' RMSE (pooled over all steps
// t = 1..T and over runs, eps = 1) at T = 2^10 and, when the environment sets
// PWSD_COUNTER_TABLE=1 (slow: about a minute), at 2^16 and 2^20 too. It
// prints the table with t.Logf (run with -v) and checks the
// stream-independent counters against CounterPredictedMSE (5 SE).
// False alarm: about 6e-7 per row checked (normal), 4e-6 in all. Power: the
// MSE's relative SE is at most 7.6% (twice the RMSE's, logged with -v), so
// a counter whose RMSE is 20% off its prediction (MSE x1.44 or x0.64) is
// 4.7 to 5.8 SE away: caught with probability 0.4 to 0.8 per row. The
// calibration itself is TestCounterNoiseCalibrated's (power stated there).
func TestCounterErrorTable(t *testing.T) {
	t.Parallel()
	if os.Getenv("PWSD_COUNTER_TABLE") != "1" && (testing.Short() || counterRaceEnabled) {
		t.Skip("measurement; runs without -short and -race")
	}
	horizons := []int64{1 << 10}
	budget := int64(1 << 18) // steps per row
	if os.Getenv("PWSD_COUNTER_TABLE") == "1" {
		horizons = append(horizons, 1<<16, 1<<20)
		budget = 1 << 24
	}
	type row struct {
		name string
		cfg  func(T int64) CounterConfig
		p    float64 // stream density
	}
	rows := []row{
		{"simple", func(T int64) CounterConfig { return CounterConfig{Algorithm: CounterSimple, Epsilon: 1, Horizon: T} }, 0.01},
		{"randomized_response", func(T int64) CounterConfig {
			return CounterConfig{Algorithm: CounterRandomizedResponse, Epsilon: 1, Horizon: T}
		}, 0.01},
		{"tree", func(T int64) CounterConfig { return CounterConfig{Algorithm: CounterTree, Epsilon: 1, Horizon: T} }, 0.01},
		{"cascading Cor. 6.1, p=0.01", func(T int64) CounterConfig {
			return CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T}
		}, 0.01},
		{"cascading Cor. 6.1, p=0.5", func(T int64) CounterConfig {
			return CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T}
		}, 0.5},
		// d = 1, kappa = 1/2 and l such that (l eps'/4 kappa)^2 = sqrt(T):
		// the paper's one-level buffer, error O((sqrt(n) + T^(1/4))/eps).
		{"cascading d=1 tuned, p=0.01", cascadingTuned, 0.01},
		{"cascading d=1 tuned, p=0.5", cascadingTuned, 0.5},
	}
	for _, T := range horizons {
		runs := int(max(20, min(1000, budget/T)))
		for i, r := range rows {
			stream := counterStream(int(T), r.p, uint64(T))
			lap, rng := counterSeeded(uint64(1000 + i))
			var sum, sumSq float64
			for k := 0; k < runs; k++ {
				c := mustCounter(t, r.cfg(T), lap, rng)
				n, sq := 0, 0.0
				for _, x := range stream {
					n += x
					out, err := c.Step(x)
					if err != nil {
						t.Fatal(err)
					}
					e := out - float64(n)
					sq += e * e
				}
				mse := sq / float64(T)
				sum += mse
				sumSq += mse * mse
			}
			mse := sum / float64(runs)
			se := math.Sqrt(max(0, sumSq/float64(runs)-mse*mse) / float64(runs))
			rmse := math.Sqrt(mse)
			pred := CounterPredictedMSE(r.cfg(T).Algorithm, 1, T)
			note := ""
			if !math.IsNaN(pred) {
				note = fmt.Sprintf("predicted %.1f", math.Sqrt(pred))
				if math.Abs(mse-pred) > 5*se {
					t.Errorf("T=%d %s: MSE %.4g, predicted %.4g (SE %.3g)", T, r.name, mse, pred, se)
				}
			}
			t.Logf("T=2^%d  %-28s RMSE %9.1f ± %6.1f  (%d runs) %s", int(math.Log2(float64(T))), r.name, rmse, se/(2*rmse), runs, note)
		}
	}
}

func cascadingTuned(T int64) CounterConfig {
	const d, kappa = 1, 0.5
	levelEps := 1.0 / (2*d + 1)
	l := 4 * kappa * math.Pow(float64(T), 0.25) / levelEps
	return CounterConfig{Algorithm: CounterCascading, Epsilon: 1, Horizon: T, D: d, L: l * (1 + 1e-9), Kappa: kappa}
}
