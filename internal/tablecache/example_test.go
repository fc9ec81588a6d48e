package tablecache_test

import (
	"context"
	"fmt"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// An estimator table is built once and then served from memory: the second
// request computes nothing.
func ExampleCache_Estimator() {
	c, _ := tablecache.New(tablecache.Config{Store: store.NewMemory()})
	ctx := context.Background()
	p, _ := sanitize.NewPrivacy(1, 1e-3)
	smp, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.01, 1, nil)
	t, _ := c.Sanitizer(p, smp, sanitize.MethodDiscrete)
	spec := estimate.Spec{MaxFrequency: 50, G: estimate.G{Kind: estimate.GIdentity}, Estimator: estimate.MLE}
	first, _ := c.Estimator(ctx, t, spec)
	again, _ := c.Estimator(ctx, t, spec)
	fmt.Println(first == again, c.Computed())
	// Output: true 1
}
