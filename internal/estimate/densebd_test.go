package estimate

import (
	"context"
	"fmt"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestDenseBDMatchesRef: the dense biased-down loop (denseBD, rows as
// pieces on unit cells, as rowBand's pass reads them) gives bit for bit the
// reference builder's estimates on Algorithm 4 rows, for every token 1..n,
// on a grid of parameters (and never falls back on them).
func TestDenseBDMatchesRef(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	for _, pc := range []struct {
		eps, delta float64
		scheme     sanitize.Scheme
		tau, power float64
		g          G
	}{
		{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, 1, G{Kind: GIdentity}},
		{1, 1e-3, sanitize.SchemePriority, 0.002, 1, G{Kind: GIdentity}},
		{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5, 1, G{Kind: GIdentity}},
		{2, 1e-9, sanitize.SchemeNone, 0, 1, mustG("count")},
		{0.3, 1e-5, sanitize.SchemePPSWOR, 1e-4, 2, mustG("cap:50")},
	} {
		name := fmt.Sprintf("eps=%g,delta=%g,%s,tau=%g,p=%g,g=%s", pc.eps, pc.delta, pc.scheme, pc.tau, pc.power, pc.g)
		t.Run(name, func(t *testing.T) {
			smp, err := sanitize.NewSampling(pc.scheme, pc.tau, pc.power, nil)
			if err != nil {
				t.Fatal(err)
			}
			tab, err := sanitize.NewTable(mustPrivacy(pc.eps, pc.delta), smp, sanitize.MethodDiscrete)
			if err != nil {
				t.Fatal(err)
			}
			const n = 3000
			want, err := buildGeneralRef(context.Background(), generalSource{tab}, Spec{MaxFrequency: n, G: pc.g, Estimator: BiasedDown})
			if err != nil {
				t.Fatal(err)
			}
			u := newDenseBD(pc.g, n, 0)
			if err := tab.Rows(1, n+1<<20, func(r sanitize.Row) bool { err = addPieces(u, r); return err == nil && !u.done }); err != nil {
				t.Fatal(err)
			}
			if err != nil || !u.done {
				t.Fatalf("unit builder: err %v, done %v", err, u.done)
			}
			got := u.storedTable(BiasedDown)
			for j := 1; j <= n; j++ {
				if got.Bounds[j] != want.Bounds[j] || got.A[j-1] != want.A[j-1] {
					t.Fatalf("token %d: (%v, %v] a = %v, want (%v, %v] a = %v", j, got.Bounds[j-1], got.Bounds[j], got.A[j-1], want.Bounds[j-1], want.Bounds[j], want.A[j-1])
				}
			}
		})
	}
}
