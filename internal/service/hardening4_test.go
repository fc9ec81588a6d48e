package service

import (
	"context"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestReleasesNearTheTopFrequency is issue 31's first probe (hardening round
// four): releases whose frequencies reach the top of the sanitizer's exact
// range (2^33) were charged and then answered 500 ("row supports do not
// move past the chunk"), at release or at every estimate GET after it. Now
// every frequency up to FrequencyLimit is released and its estimates are
// served; a frequency above it is a 422 naming the element, and nothing is
// charged. Both methods, a tiny and a moderate epsilon (the margin grows
// with L).
func TestReleasesNearTheTopFrequency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps    float64
		method sanitize.Method
	}{{0.5, sanitize.MethodDiscrete}, {0.5, sanitize.MethodMaxSeparation}, {0.1, sanitize.MethodMaxSeparation}} {
		t.Run(strconv.FormatFloat(tc.eps, 'g', -1, 64)+"/"+string(tc.method), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newTestService(t, Config{})
			if _, err := s.Datasets.Create(ctx, "d", 100, 1e-3); err != nil {
				t.Fatal(err)
			}
			p := sanitize.Privacy{Epsilon: tc.eps, Delta: 1e-6}
			spec, err := NewSampleSpec("d", p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, ReleaseFrequencies, tc.method)
			if err != nil {
				t.Fatal(err)
			}
			limit := FrequencyLimit(p)
			if limit >= sanitize.MaxFrequency || limit < sanitize.MaxFrequency-1_000_000 {
				t.Fatalf("FrequencyLimit %d: want a margin below 2^33 of less than 10^6", limit)
			}
			L := int64(math.Ceil(sanitize.L(p)))
			freqs := []int64{limit, limit - 1, limit - L, limit - 2*L - 7, limit - 50}
			keys := make([]string, len(freqs))
			for i := range keys {
				keys[i] = "k" + strconv.Itoa(i)
			}
			smp, err := s.Samples.Create(ctx, spec, 10, pairs(keys, freqs))
			if err != nil {
				t.Fatalf("release up to the limit: %v", err)
			}
			est, err := s.Estimates.Sample(ctx, smp.ID, identityG, estimate.MLE, Selection{}, 0.95, GroupBy{})
			if err != nil {
				t.Fatalf("estimate of a release up to the limit: %v", err)
			}
			if !(est.Estimate > 0) {
				t.Fatalf("estimate %+v", est)
			}
			d, _ := s.Datasets.Get(ctx, "d")
			charged := len(d.Releases)
			// One above the limit: 422 naming it, nothing charged.
			_, err = s.Samples.Create(ctx, spec, 10, pairs([]string{"a", "b"}, []int64{5, limit + 1}))
			if fs, ok := checks.Fields(err); !ok || len(fs) != 1 || fs[0].Field != "elements[1].frequency" || !strings.Contains(fs[0].Reason, strconv.FormatInt(limit, 10)) {
				t.Fatalf("a frequency above the limit: %v, want a 422 naming elements[1].frequency and the limit", err)
			}
			if d, _ := s.Datasets.Get(ctx, "d"); len(d.Releases) != charged {
				t.Fatalf("a refused release was charged")
			}
		})
	}
}

// TestImportValuesOutOfRange: an import's values far outside what a
// sanitizer outputs (10^12, nearly the largest float, just under 2^33, and
// in a discrete release the smallest positive float) are 422s naming the
// element, never 500s, and the charge stays unused (a correct import
// against it then succeeds). The smallest positive float is a value
// Algorithm 5's lowest piece holds: imported, it is answered (it was a 500:
// its chunk index underflowed to -1).
func TestImportValuesOutOfRange(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, _ store.Store) {
		ctx := context.Background()
		if _, err := svc.Datasets.Create(ctx, "d", 10, 1e-3); err != nil {
			t.Fatal(err)
		}
		p := sanitize.Privacy{Epsilon: 1, Delta: 1e-6}
		for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
			spec, err := NewSampleSpec("d", p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, ReleaseFrequencies, m)
			if err != nil {
				t.Fatal(err)
			}
			ref := "ext-" + string(m)
			c, err := svc.Datasets.Charge(ctx, "d", 1, 1e-6, ref)
			if err != nil {
				t.Fatal(err)
			}
			charge := c.ID
			L := math.Ceil(sanitize.L(p))
			bad := []float64{1e12, 1.7e308, float64(sanitize.MaxFrequency) - L, float64(sanitize.MaxFrequency)}
			if m == sanitize.MethodDiscrete {
				bad = append(bad, 5e-324)
			}
			for _, v := range bad {
				one := []ImportedElement{{Key: "a", Value: 7, Frequency: math.NaN(), Contribution: math.NaN()}, {Key: "b", Value: v, Frequency: math.NaN(), Contribution: math.NaN()}}
				_, err := svc.Samples.Import(ctx, ImportSpec{SampleSpec: spec, ChargeRef: charge}, 10, importSource(one))
				if fs, ok := checks.Fields(err); !ok || len(fs) != 1 || fs[0].Field != "elements[1].value" {
					t.Fatalf("%s: import of value %g: %v, want a 422 naming elements[1].value", m, v, err)
				}
			}
			good := []ImportedElement{{Key: "a", Value: 7, Frequency: math.NaN(), Contribution: math.NaN()}}
			if _, err := svc.Samples.Import(ctx, ImportSpec{SampleSpec: spec, ChargeRef: charge}, 10, importSource(good)); err != nil {
				t.Fatalf("%s: the charge was spent by refused imports: %v", m, err)
			}
			if m == sanitize.MethodMaxSeparation {
				c, err := svc.Datasets.Charge(ctx, "d", 1, 1e-6, "tiny")
				if err != nil {
					t.Fatal(err)
				}
				tiny := []ImportedElement{{Key: "a", Value: 5e-324, Frequency: math.NaN(), Contribution: math.NaN()}}
				smp, err := svc.Samples.Import(ctx, ImportSpec{SampleSpec: spec, ChargeRef: c.ID}, 10, importSource(tiny))
				if err != nil || len(smp.Keys) != 1 || !(smp.Keys[0].Frequency >= 1) {
					t.Fatalf("import of the value 5e-324: %v", err)
				}
			}
		}
	})
}

func importSource(es []ImportedElement) ImportSource {
	i := 0
	return func() (ImportedElement, error) {
		if i == len(es) {
			return ImportedElement{}, io.EOF
		}
		i++
		return es[i-1], nil
	}
}

// TestImportWithinReleaseWork: PWSD_MAX_RELEASE_WORK applies to an import as
// to a release (issue 31: an import of 2,000 values 10^6 apart ran 36 s
// where the same release was a 422): values whose chunks cost more than the
// bound are a 422 naming the first value past it, before any chunk is
// built, and the charge stays unused.
func TestImportWithinReleaseWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{MaxReleaseWork: 2_000_000})
	if _, err := svc.Datasets.Create(ctx, "d", 10, 1e-3); err != nil {
		t.Fatal(err)
	}
	p := sanitize.Privacy{Epsilon: 0.1, Delta: 1e-6}
	spec, err := NewSampleSpec("d", p, sanitize.Sampling{Scheme: sanitize.SchemeNone}, ReleaseFrequencies, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Datasets.Charge(ctx, "d", 0.1, 1e-6, "batch")
	if err != nil {
		t.Fatal(err)
	}
	es := make([]ImportedElement, 2000)
	for i := range es {
		es[i] = ImportedElement{Key: "k" + strconv.Itoa(i), Value: float64(1_000_000 * (i + 1)), Frequency: math.NaN(), Contribution: math.NaN()}
	}
	before := svc.cache.Computed()
	_, err = svc.Samples.Import(ctx, ImportSpec{SampleSpec: spec, ChargeRef: c.ID}, 5000, importSource(es))
	fs, ok := checks.Fields(err)
	if !ok || len(fs) == 0 || !strings.HasSuffix(fs[0].Field, ".value") || !strings.Contains(fs[0].Reason, "PWSD_MAX_RELEASE_WORK") {
		t.Fatalf("an import past the release work bound: %v, want a 422 naming a value and PWSD_MAX_RELEASE_WORK", err)
	}
	if n := svc.cache.Computed() - before; n != 0 {
		t.Fatalf("%d chunk runs built before the refusal", n)
	}
	good := []ImportedElement{{Key: "a", Value: 7, Frequency: math.NaN(), Contribution: math.NaN()}}
	if _, err := svc.Samples.Import(ctx, ImportSpec{SampleSpec: spec, ChargeRef: c.ID}, 10, importSource(good)); err != nil {
		t.Fatalf("the charge was spent by a refused import: %v", err)
	}
}
