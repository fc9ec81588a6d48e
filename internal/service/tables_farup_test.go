package service

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestFrequencyRowsFarUp: far up (10^7 and 10^9, eps 0.5, ppswor tau 1e-5),
// where the biased-down recursion over every token below would pass the
// default work limit, the frequencies table is served with the MLE
// contributions alone: every biased-down contribution null, the omission
// said with the limit it met, and each MLE contribution equal to the MLE
// chunk's estimate of its token (an independent builder). Where the
// biased-down contributions fit (10^5) they are served, and nothing is
// said. A range too long even for the MLE band is still a 422 naming the
// frequency.
func TestFrequencyRowsFarUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestService(t, Config{})
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, tc := range []struct {
			f       int64
			omitted bool
		}{{100_000, false}, {10_000_000, true}, {1_000_000_000, true}} {
			t.Run(fmt.Sprintf("%s/%d", m, tc.f), func(t *testing.T) {
				got, err := s.Tables.FrequencyRows(ctx, p, smp, m, tc.f, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Rows) != 1 || len(got.Rows[0].Outcomes) == 0 {
					t.Fatalf("%d rows", len(got.Rows))
				}
				if got.BiasedDownOmitted != tc.omitted || (tc.omitted != strings.Contains(got.Note, "PWSD_MAX_TABLE_WORK")) {
					t.Fatalf("omitted %v, note %q; want omitted %v", got.BiasedDownOmitted, got.Note, tc.omitted)
				}
				st, err := s.cache.Sanitizer(p, smp, m)
				if err != nil {
					t.Fatal(err)
				}
				size := estimate.ChunkSize(p)
				for _, o := range got.Rows[0].Outcomes {
					if (o.BiasedDownContribution == nil) != tc.omitted {
						t.Fatalf("outcome (%g, %g]: biased-down %v", o.Lo, o.Hi, o.BiasedDownContribution)
					}
					if !tc.omitted {
						continue
					}
					mid := (o.Lo + o.Hi) / 2
					ch, err := estimate.BuildChunk(ctx, st, identityG, size, estimate.ChunkOf(mid, size))
					if err != nil {
						t.Fatal(err)
					}
					want, err := ch.Estimate(mid)
					if err != nil {
						t.Fatal(err)
					}
					if d := o.MLEContribution - want; d > 1e-9*want || d < -1e-9*want {
						t.Fatalf("outcome (%g, %g]: MLE contribution %g, the chunk's %g", o.Lo, o.Hi, o.MLEContribution, want)
					}
				}
			})
		}
	}
	t.Run("a range too long even without biased-down", func(t *testing.T) {
		_, err := s.Tables.FrequencyRows(ctx, p, smp, sanitize.MethodDiscrete, 10_000_000, 30_000_000)
		if fs, ok := checks.Fields(err); !ok || fs[0].Field != "frequency" {
			t.Fatalf("err = %v, want a 422 naming frequency", err)
		}
	})
}
