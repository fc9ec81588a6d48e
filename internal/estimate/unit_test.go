package estimate

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// piecesSource is an Algorithm 4 table seen through Rows only (no dense
// UnitRows): buildUnit then parses pieces instead of reading dense rows.
type piecesSource struct{ t *sanitize.Table }

func (s piecesSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return s.t.Rows(from, to, fn)
}
func (s piecesSource) Method() sanitize.Method       { return s.t.Method() }
func (s piecesSource) StationaryFrom() (int64, bool) { return s.t.StationaryFrom() }

// TestBuildUnitMatchesRef: for Algorithm 4 tables the dense unit-cell
// builder (buildUnit) gives exactly the reference builder's table
// (buildGeneralRef: bounds, estimates, every
// frequency's statistics, stationary tail), on a grid of parameters,
// functions g and both estimators it serves, including stationary ones
// (q = 1, whose tails extend the table).
func TestBuildUnitMatchesRef(t *testing.T) {
	t.Parallel()
	runBuilderCases(t, builderCases, sanitize.MethodDiscrete, func(t *testing.T, pc builderCase, mk func() *sanitize.Table, spec Spec, want *Table) {
		got, err := buildUnit(context.Background(), mk(), spec)
		if err != nil {
			t.Fatalf("unit path: %v", err)
		}
		sameTable(t, got, want)
		if pc.scheme == sanitize.SchemeNone && want.Tail == nil {
			t.Fatal("a stationary case must exercise the tail")
		}
	})
}

// TestBuildUnitDenseEqualsPieces: the unit-cell builder reading dense rows
// (sanitize.Table.UnitRows, with the dense shift tracking) and reading
// pieces (Rows) build the same table bit for bit: bounds, estimates, every
// frequency's statistics and the stationary tail. The dense path is
// checked against the reference builder by TestBuildUnitMatchesRef;
// this covers the pieces path, which other row sources take.
func TestBuildUnitDenseEqualsPieces(t *testing.T) {
	t.Parallel()
	for _, pc := range []struct {
		eps, delta float64
		scheme     sanitize.Scheme
		tau        float64
		g          G
		n          int64
	}{
		{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001, G{Kind: GIdentity}, 3000},
		{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5, G{Kind: GIdentity}, 1500},
		{1, 1e-4, sanitize.SchemeNone, 0, mustG("cap:50"), 600},
		{0.7, 1e-5, sanitize.SchemePriority, 0.01, mustG("count"), 800},
	} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			t.Run(fmt.Sprintf("eps=%g,delta=%g,%s,tau=%g,g=%s,n=%d/%s", pc.eps, pc.delta, pc.scheme, pc.tau, pc.g, pc.n, est), func(t *testing.T) {
				smp, err := sanitize.NewSampling(pc.scheme, pc.tau, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				mk := tableMaker(t, mustPrivacy(pc.eps, pc.delta), smp, sanitize.MethodDiscrete)
				spec := Spec{MaxFrequency: pc.n, G: pc.g, Estimator: est}
				dense, err := buildUnit(context.Background(), mk(), spec)
				if err != nil {
					t.Fatal(err)
				}
				pieces, err := buildUnit(context.Background(), piecesSource{mk()}, spec)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dense.Bounds, pieces.Bounds) || !slices.Equal(dense.A, pieces.A) {
					t.Fatal("tokens or estimates differ")
				}
				if !slices.Equal(dense.Frequencies, pieces.Frequencies) {
					t.Fatal("statistics differ")
				}
				if (dense.Tail == nil) != (pieces.Tail == nil) || (dense.Tail != nil && fmt.Sprint(*dense.Tail) != fmt.Sprint(*pieces.Tail)) {
					t.Fatalf("tail %+v, pieces path %+v", dense.Tail, pieces.Tail)
				}
				if pc.scheme == sanitize.SchemeNone && dense.Tail == nil {
					t.Fatal("a stationary case must exercise the tail")
				}
			})
		}
	}
}
