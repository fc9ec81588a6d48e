package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestRowEstimatesMatchFullBuild: the band computation of RowEstimates gives
// bit for bit the outcomes, MLE and biased-down estimates that the full
// estimator tables give (Build, then Tokens and Estimate, as the
// frequencies endpoint did), on a grid of (eps, delta, scheme, tau, method)
// and row ranges, with a sufficient margin and with margin 0 (which forces
// the fallback to a band starting at row 1).
func TestRowEstimatesMatchFullBuild(t *testing.T) {
	oracleOnly(t)
	t.Parallel()
	g := G{Kind: GIdentity}
	type span struct{ from, to int64 }
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, pc := range []struct {
			eps, delta float64
			scheme     sanitize.Scheme
			tau        float64
		}{
			{0.5, 1e-6, sanitize.SchemePPSWOR, 0.001},
			{1, 1e-3, sanitize.SchemePriority, 0.002},
			{0.2, 1e-7, sanitize.SchemePPSWOR, 2e-5},
			{2, 1e-9, sanitize.SchemeNone, 0},
		} {
			p := mustPrivacy(pc.eps, pc.delta)
			smp := mustSampling(pc.scheme, pc.tau, nil)
			L := int64(math.Ceil(sanitize.L(p)))
			for _, sp := range []span{{1, 1}, {1, 5}, {L, L + 2}, {3 * L, 3*L + 1}, {1500, 1500}} {
				for _, margin := range []int64{4*L + 64, 0} {
					name := fmt.Sprintf("%s/eps=%g,delta=%g,%s,tau=%g/rows=%d-%d/margin=%d", m, pc.eps, pc.delta, pc.scheme, pc.tau, sp.from, sp.to, margin)
					t.Run(name, func(t *testing.T) {
						tab, err := sanitize.NewTable(p, smp, m)
						if err != nil {
							t.Fatal(err)
						}
						n := sp.to + 1
						mle, err := Build(tab, Spec{MaxFrequency: n, G: g, Estimator: MLE})
						if err != nil {
							t.Fatal(err)
						}
						bd, err := Build(tab, Spec{MaxFrequency: n, G: g, Estimator: BiasedDown})
						if err != nil {
							t.Fatal(err)
						}
						next := sp.from
						err = RowEstimates(context.Background(), tab, g, sp.from, sp.to, margin, func(r sanitize.Row, got []RowOutcome) error {
							if r.Frequency != next {
								return fmt.Errorf("row %d delivered, want %d", r.Frequency, next)
							}
							next++
							want, err := r.Clone(), error(nil)
							var exp []RowOutcome
							for _, pc := range want.Pieces {
								dens := pc.P / (pc.Hi - pc.Lo)
								var ferr error
								err = mle.Tokens(pc.Lo, pc.Hi, func(tok Token) bool {
									lo, hi := math.Max(tok.Lo, pc.Lo), math.Min(tok.Hi, pc.Hi)
									o := RowOutcome{Lo: lo, Hi: hi, P: dens * (hi - lo), MLE: tok.Estimate}
									o.BiasedDown, ferr = bd.Estimate((lo + hi) / 2)
									exp = append(exp, o)
									return ferr == nil
								})
								if err == nil {
									err = ferr
								}
								if err != nil {
									return err
								}
							}
							if len(got) != len(exp) {
								return fmt.Errorf("row %d: %d outcomes, want %d", r.Frequency, len(got), len(exp))
							}
							for k := range exp {
								if got[k] != exp[k] {
									return fmt.Errorf("row %d outcome %d: got %+v, want %+v", r.Frequency, k, got[k], exp[k])
								}
							}
							return nil
						})
						if err != nil {
							t.Fatal(err)
						}
						if next != sp.to+1 {
							t.Fatalf("rows up to %d delivered, want %d", next-1, sp.to)
						}
					})
				}
			}
		}
	}
}

// countingSource counts the rows it delivers.
type countingSource struct {
	src  RowSource
	rows int64
}

func (c *countingSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	return c.src.Rows(from, to, func(r sanitize.Row) bool { c.rows++; return fn(r) })
}

// TestBuildersStopWhenCancelled: with a cancelled context the builders read
// at most ctxEvery rows before returning the context's error (a 10^6-row
// computation would otherwise read a million).
func TestBuildersStopWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"BuildContext", "RowEstimates"} {
		t.Run(name, func(t *testing.T) {
			tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), mustSampling(sanitize.SchemePPSWOR, 1e-5, nil), sanitize.MethodDiscrete)
			if err != nil {
				t.Fatal(err)
			}
			src := &countingSource{src: tab}
			if name == "BuildContext" {
				_, err = BuildContext(ctx, src, Spec{MaxFrequency: 1e6, G: G{Kind: GIdentity}, Estimator: BiasedDown})
			} else {
				err = RowEstimates(ctx, src, G{Kind: GIdentity}, 1e6, 1e6, 200, func(sanitize.Row, []RowOutcome) error { return nil })
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if src.rows > ctxEvery {
				t.Fatalf("read %d rows after cancellation, want at most %d", src.rows, ctxEvery)
			}
		})
	}
}
