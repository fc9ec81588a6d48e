package estimate

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// buildGeneralWith runs a general builder (no dense path): the reference
// builder (generalBuilderRef) when ref is set, the fused one otherwise.
func buildGeneralWith(t *testing.T, src RowSource, spec Spec, ref bool) *Table {
	t.Helper()
	build := buildGeneral
	if ref {
		build = buildGeneralRef
	}
	tab, err := build(context.Background(), src, spec)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestGeneralBuilderMatchesRef: the fused builder's one-pass token loop
// (generalBuilder.processToken: argmax or minimum folded in as each row's
// mass is computed, biased-down sums updated one token late in the same
// pass) builds exactly the table of the reference builder (generalBuilderRef:
// masses first, then the estimate, then the sums), bit for bit: bounds, estimates,
// every frequency's statistics and the tail, for Algorithm 5 and Algorithm
// 4 rows, MLE and biased-down, sampled and stationary parameters.
func TestGeneralBuilderMatchesRef(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	for _, pc := range []struct {
		eps, delta float64
		scheme     sanitize.Scheme
		tau        float64
		m          sanitize.Method
		g          G
		n          int64
	}{
		{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, sanitize.MethodMaxSeparation, G{Kind: GIdentity}, 1500},
		{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5, sanitize.MethodMaxSeparation, G{Kind: GIdentity}, 800},
		{1, 1e-4, sanitize.SchemeNone, 0, sanitize.MethodMaxSeparation, mustG("cap:30"), 400},
		{0.7, 1e-5, sanitize.SchemePriority, 0.01, sanitize.MethodMaxSeparation, mustG("count"), 600},
		{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, sanitize.MethodDiscrete, G{Kind: GIdentity}, 1500},
		{1, 1e-4, sanitize.SchemeNone, 0, sanitize.MethodDiscrete, mustG("power:0.5"), 400},
	} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s,tau=%g,%s,g=%s,n=%d/%s", pc.eps, pc.delta, pc.scheme, pc.tau, pc.m, pc.g, pc.n, est), func(t *testing.T) {
				smp, err := sanitize.NewSampling(pc.scheme, pc.tau, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				mk := func() generalSource {
					tab, err := sanitize.NewTable(mustPrivacy(pc.eps, pc.delta), smp, pc.m)
					if err != nil {
						t.Fatal(err)
					}
					return generalSource{tab}
				}
				spec := Spec{MaxFrequency: pc.n, G: pc.g, Estimator: est}
				want := buildGeneralWith(t, mk(), spec, true)
				got := buildGeneralWith(t, mk(), spec, false)
				if !slices.Equal(got.Bounds, want.Bounds) || !slices.Equal(got.A, want.A) {
					for k := range min(len(got.A), len(want.A)) {
						if got.A[k] != want.A[k] || got.Bounds[k+1] != want.Bounds[k+1] {
							t.Fatalf("token %d: (%v, %v], fused %v, reference %v", k, want.Bounds[k], want.Bounds[k+1], got.A[k], want.A[k])
						}
					}
					t.Fatalf("%d tokens, reference %d", len(got.A), len(want.A))
				}
				if !slices.Equal(got.Frequencies, want.Frequencies) {
					t.Fatal("statistics differ")
				}
				if (got.Tail == nil) != (want.Tail == nil) || (got.Tail != nil && fmt.Sprint(*got.Tail) != fmt.Sprint(*want.Tail)) {
					t.Fatalf("tail %+v, reference %+v", got.Tail, want.Tail)
				}
			})
		}
	}
}

// TestGeneralBuilderMatchesRefOnHandMadeTables: the fused and reference
// builders build the same table bit for bit on the hand-made tables of
// TestBuildMatchesBruteForce too (closed-form Algorithm 4 rows, Algorithm 4
// with sampling, and fractional, row-specific break points with gaps, which
// exercise the position tolerances), for every g: the reference builder is
// then checked against the literal formulas through Build.
func TestGeneralBuilderMatchesRefOnHandMadeTables(t *testing.T) {
	t.Parallel()
	for _, tt := range testTables() {
		for _, gs := range testGs {
			for _, est := range []Estimator{MLE, BiasedDown} {
				t.Run(fmt.Sprintf("%s/%s/%s", tt.name, gs, est), func(t *testing.T) {
					spec := Spec{MaxFrequency: tt.n, G: mustG(gs), Estimator: est}
					want := buildGeneralWith(t, &sliceSource{rows: tt.rows}, spec, true)
					sameTable(t, buildGeneralWith(t, &sliceSource{rows: tt.rows}, spec, false), want)
				})
			}
		}
	}
}

// TestGeneralBuilderTailAcrossChunks: the general builder reads rows in
// chunks of max(n, 4096) rows, and the row goroutine's shift tracking must
// carry the previous row from one chunk to the next: a table whose rows
// span several chunks has the stationary tail a one-chunk table has (the
// source is stationary from a small frequency), for Algorithm 5 and for
// Algorithm 4 rows through the general builder.
func TestGeneralBuilderTailAcrossChunks(t *testing.T) {
	t.Parallel()
	smp, err := sanitize.NewSampling(sanitize.SchemeNone, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []sanitize.Method{sanitize.MethodMaxSeparation, sanitize.MethodDiscrete} {
		t.Run(string(m), func(t *testing.T) {
			tail := func(n int64) *Tail {
				tab, err := sanitize.NewTable(mustPrivacy(1, 1e-4), smp, m)
				if err != nil {
					t.Fatal(err)
				}
				et, err := Build(generalSource{tab}, Spec{MaxFrequency: n, G: G{Kind: GIdentity}, Estimator: MLE})
				if err != nil {
					t.Fatal(err)
				}
				if et.Tail == nil {
					t.Fatalf("n = %d: no stationary tail", n)
				}
				return et.Tail
			}
			one, several := tail(1000), tail(9000) // rows 1..~4100 in one chunk; 1..~9100 in two
			if one.From != several.From || fmt.Sprint(one.Pattern) != fmt.Sprint(several.Pattern) {
				t.Fatalf("tail from %d %v, across chunks from %d %v", one.From, one.Pattern, several.From, several.Pattern)
			}
		})
	}
}
