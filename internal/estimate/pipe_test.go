package estimate

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestPipelinedEqualsSequential: computing the sanitizer rows on a second
// goroutine (pipeRows, denseRows.pipeDense) changes no result. Under
// withInlineRows the builders read the rows in their own goroutine (as with
// one core); under withPipelinedRows through the pipeline. Whole tables (bounds, estimates, statistics, tail) and
// RowEstimates' outcomes must be identical bit for bit, for the unit-cell
// path, the general path (Algorithm 4 rows seen as pieces) and Algorithm 5.
func TestPipelinedEqualsSequential(t *testing.T) {
	t.Parallel()
	type result struct {
		tab *Table
		out []RowOutcome
	}
	run := func(t *testing.T, ctx context.Context, m sanitize.Method, general bool, est Estimator) result {
		mk := func() RowSource {
			tab, err := sanitize.NewTable(mustPrivacy(0.3, 1e-6), mustSampling(sanitize.SchemePPSWOR, 1e-4, nil), m)
			if err != nil {
				t.Fatal(err)
			}
			if general {
				return generalSource{tab}
			}
			return tab
		}
		tab, err := BuildContext(ctx, mk(), Spec{MaxFrequency: 3000, G: G{Kind: GIdentity}, Estimator: est})
		if err != nil {
			t.Fatal(err)
		}
		var out []RowOutcome
		if err := RowEstimates(ctx, mk(), G{Kind: GIdentity}, 2500, 2502, 200, func(_ sanitize.Row, o []RowOutcome) error {
			out = append(out, o...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return result{tab, out}
	}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, general := range []bool{false, true} {
			for _, est := range []Estimator{MLE, BiasedDown} {
				t.Run(fmt.Sprintf("%s/general=%v/%s", m, general, est), func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					seq, pip := run(t, withInlineRows(ctx), m, general, est), run(t, withPipelinedRows(ctx), m, general, est)
					if !slices.Equal(seq.tab.Bounds, pip.tab.Bounds) || !slices.Equal(seq.tab.A, pip.tab.A) || !slices.Equal(seq.tab.Frequencies, pip.tab.Frequencies) {
						t.Fatal("tables differ")
					}
					if fmt.Sprint(seq.tab.Tail) != fmt.Sprint(pip.tab.Tail) {
						t.Fatal("tails differ")
					}
					if len(seq.out) == 0 || !slices.Equal(seq.out, pip.out) {
						t.Fatalf("row outcomes differ (%d and %d)", len(seq.out), len(pip.out))
					}
				})
			}
		}
	}
}
