package panprivate_test

import (
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/panprivate"
)

// A density estimator over a universe of 1000 users: 300 distinct users
// appear (some several times), and a release estimates the fraction 0.3.
// Fixed seeds make the run reproducible; a service uses dprand.New and
// dprand.SecureLaplace instead.
func ExampleNew() {
	est, err := panprivate.New(panprivate.Config{
		Estimator:    panprivate.KindDensity,
		Epsilon:      0.5,
		UniverseSize: 1000,
		SampleSize:   1000,
	}, dprand.Seeded(1))
	if err != nil {
		panic(err)
	}
	var events []panprivate.Event
	for id := uint64(0); id < 300; id++ {
		for range 1 + id%3 {
			events = append(events, panprivate.Event{User: panprivate.UserID(id)})
		}
	}
	if err := est.Apply(events); err != nil {
		panic(err)
	}
	r, err := est.Release(dprandtest.NewLaplace(dprand.Seeded(2)))
	if err != nil {
		panic(err)
	}
	fmt.Printf("density %.2f (true 0.30), epsilon spent %.2f\n", r.Estimate, r.EpsilonSpent)
	fmt.Println("releases:", est.Stats().Releases)
	// Output:
	// density 0.34 (true 0.30), epsilon spent 0.50
	// releases: 1
}

// A counter under continual observation: after each input bit it releases
// a noisy count of the 1s so far, with the error CounterPredictedMSE
// predicts.
func ExampleNewCounter() {
	const horizon = 1024
	c, err := panprivate.NewCounter(panprivate.CounterConfig{
		Algorithm: panprivate.CounterTree,
		Epsilon:   1,
		Horizon:   horizon,
	}, dprandtest.NewLaplace(dprand.Seeded(3)), dprand.Seeded(4))
	if err != nil {
		panic(err)
	}
	ones, out := 0, 0.0
	for t := range horizon {
		bit := t % 2 // every other step is a 1
		ones += bit
		if out, err = c.Step(bit); err != nil {
			panic(err)
		}
	}
	rmse := math.Sqrt(panprivate.CounterPredictedMSE(panprivate.CounterTree, 1, horizon))
	fmt.Printf("after %d steps: %d ones, released %.0f\n", c.Steps(), ones, out)
	fmt.Println("within 3 predicted RMSE:", math.Abs(out-float64(ones)) <= 3*rmse)
	// Output:
	// after 1024 steps: 512 ones, released 480
	// within 3 predicted RMSE: true
}
