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
	run := func(t *testing.T, ctx context.Context, m sanitize.Method, general bool, est Estimator, scheme sanitize.Scheme) result {
		mk := func() RowSource {
			tab, err := sanitize.NewTable(mustPrivacy(0.3, 1e-6), mustSampling(scheme, 1e-4, nil), m)
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
				// ppswor: q < 1 on every row; none: stationary rows,
				// bit-for-bit shifted copies that share buffers.
				for _, scheme := range []sanitize.Scheme{sanitize.SchemePPSWOR, sanitize.SchemeNone} {
					t.Run(fmt.Sprintf("%s/general=%v/%s/%s", m, general, est, scheme), func(t *testing.T) {
						t.Parallel()
						ctx := context.Background()
						seq := run(t, withInlineRows(ctx), m, general, est, scheme)
						// The dense pipe's rows prepared as prepSide
						// chooses, and each way forced (prepForce).
						for name, pctx := range map[string]context.Context{
							"prepSide":          withPipelinedRows(ctx),
							"by the row side":   withPrepForce(withPipelinedRows(ctx), prepByRows),
							"by the token loop": withPrepForce(withPipelinedRows(ctx), prepByLoop),
							"alternately":       withPrepForce(withPipelinedRows(ctx), prepAlternate),
						} {
							pip := run(t, pctx, m, general, est, scheme)
							if !slices.Equal(seq.tab.Bounds, pip.tab.Bounds) || !slices.Equal(seq.tab.A, pip.tab.A) || !slices.Equal(seq.tab.Frequencies, pip.tab.Frequencies) {
								t.Fatalf("prepared %s: tables differ", name)
							}
							if fmt.Sprint(seq.tab.Tail) != fmt.Sprint(pip.tab.Tail) {
								t.Fatalf("prepared %s: tails differ", name)
							}
							if len(seq.out) == 0 || !slices.Equal(seq.out, pip.out) {
								t.Fatalf("prepared %s: row outcomes differ (%d and %d)", name, len(seq.out), len(pip.out))
							}
						}
					})
				}
			}
		}
	}
}

// withPrepForce returns ctx under which pipeDense's batches are prepared as
// f says instead of by prepSide.
func withPrepForce(ctx context.Context, f prepForce) context.Context {
	return context.WithValue(ctx, prepKey{}, f)
}

// TestPrepSide: the row goroutine prepares a batch's rows once it finds no
// empty batch (the token loop is behind), leaves them to the loop once no
// filled batch waits (the loop is idle), and otherwise keeps its choice.
func TestPrepSide(t *testing.T) {
	for _, c := range []struct {
		here          bool
		free, backlog int
		want          bool
	}{
		{true, 0, 3, true}, {false, 0, 3, true}, {false, 0, 0, true},
		{true, 2, 0, false}, {false, 4, 0, false},
		{true, 1, 1, true}, {false, 1, 2, false},
	} {
		if got := prepSide(c.here, c.free, c.backlog); got != c.want {
			t.Errorf("prepSide(%v, free %d, backlog %d) = %v, want %v", c.here, c.free, c.backlog, got, c.want)
		}
	}
}
