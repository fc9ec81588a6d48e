package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// pairs is an ElementSource over keys[i] with frequency freqs[i].
func pairs(keys []string, freqs []int64) ElementSource {
	i := 0
	return func() (string, int64, error) {
		if i == len(keys) {
			return "", 0, io.EOF
		}
		i++
		return keys[i-1], freqs[i-1], nil
	}
}

// exactSample stores a frequencies release at delta = 1, where the discrete
// sanitizer is the identity: a/1..a/5 and b/1..b/5 of frequencies 10..100
// (a/j: 10j, b/j: 50 + 10j), every key reported with its frequency. The
// answers are then exact and known in closed form.
func exactSample(t *testing.T, svc *Service, dataset string) *Sample {
	t.Helper()
	var keys []string
	var freqs []int64
	for j := int64(1); j <= 5; j++ {
		keys, freqs = append(keys, fmt.Sprintf("a/%d", j)), append(freqs, 10*j)
		keys, freqs = append(keys, fmt.Sprintf("b/%d", j)), append(freqs, 50+10*j)
	}
	smp, err := svc.Samples.Create(context.Background(), testSpec(t, dataset, 1), 100, pairs(keys, freqs))
	if err != nil {
		t.Fatal(err)
	}
	if smp.Reported != 10 {
		t.Fatalf("delta = 1 reported %d of 10 keys", smp.Reported)
	}
	return smp
}

// TestSampleQueries: over a release whose answers are exact (delta = 1),
// estimates select and group keys as asked, Top and Rank order by
// frequency, Quantiles of the reported keys are the order statistics; a
// key not in the sample is a *NotFoundError of kind key; a keys-only
// release has no values to query (named "sample"); a deleted sample is
// ErrNotFound everywhere while its dataset's ledger keeps the charge.
func TestSampleQueries(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		if _, err := svc.Datasets.Create(ctx, "d", 10, 1); err != nil {
			t.Fatal(err)
		}
		smp := exactSample(t, svc, "d")
		identity, _ := estimate.ParseG("identity")
		count, _ := estimate.ParseG("count")
		for _, tc := range []struct {
			name     string
			g        estimate.G
			sel      Selection
			by       GroupBy
			selected int
			want     float64
			groups   map[string]float64
		}{
			{"all keys", identity, Selection{}, GroupBy{}, 10, 150 + 400, nil},
			{"prefix", identity, Selection{Prefix: "a/"}, GroupBy{}, 5, 150, nil},
			{"listed keys", identity, Selection{Keys: []string{"a/2", "b/5", "c/1"}}, GroupBy{}, 2, 20 + 100, nil},
			{"count", count, Selection{Prefix: "b/"}, GroupBy{}, 5, 5, nil},
			{"grouped by delimiter", identity, Selection{}, GroupBy{Delimiter: "/"}, 10, 550, map[string]float64{"a": 150, "b": 400}},
			{"grouped by length", count, Selection{}, GroupBy{Length: 1}, 10, 10, map[string]float64{"a": 5, "b": 5}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e, err := svc.Estimates.Sample(ctx, smp.ID, tc.g, estimate.MLE, tc.sel, 0.95, tc.by)
				if err != nil {
					t.Fatal(err)
				}
				if e.Selected != tc.selected || math.Abs(e.Estimate-tc.want) > 1e-9*tc.want || e.Interval.Level != 0.95 {
					t.Fatalf("selected %d, estimate %g, level %g; want %d, %g", e.Selected, e.Estimate, e.Interval.Level, tc.selected, tc.want)
				}
				if len(e.Groups) != len(tc.groups) {
					t.Fatalf("groups %+v, want %v", e.Groups, tc.groups)
				}
				for _, g := range e.Groups {
					if w, ok := tc.groups[g.Group]; !ok || math.Abs(g.Estimate-w) > 1e-9*w {
						t.Fatalf("group %q: %g, want %v", g.Group, g.Estimate, tc.groups)
					}
				}
			})
		}
		top, err := svc.Estimates.Top(ctx, smp.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range top {
			if r.Rank != i+1 {
				t.Fatalf("top rank %d at %d", r.Rank, i)
			}
			got = append(got, fmt.Sprintf("%s:%g", r.Key, r.Frequency))
		}
		if want := []string{"b/5:100", "b/4:90", "b/3:80"}; !slices.Equal(got, want) {
			t.Fatalf("top 3: %v, want %v", got, want)
		}
		if all, _ := svc.Estimates.Top(ctx, smp.ID, 100); len(all) != 10 {
			t.Fatalf("top 100 of 10 keys: %d", len(all))
		}
		r, n, err := svc.Estimates.Rank(ctx, smp.ID, "a/4") // 40: above a/1..a/3 only
		if err != nil || r.Rank != 7 || n != 10 || r.Frequency != 40 {
			t.Fatalf("rank of a/4: %+v of %d (%v), want 7 of 10", r, n, err)
		}
		var nf *NotFoundError
		if _, _, err := svc.Estimates.Rank(ctx, smp.ID, "c/1"); !errors.As(err, &nf) || nf.Kind != "key" || nf.Name != "c/1" {
			t.Fatalf("rank of a missing key: %v", err)
		}
		q, err := svc.Estimates.Quantiles(ctx, smp.ID, []float64{0.1, 0.5, 1}, PopulationReported)
		if err != nil {
			t.Fatal(err)
		}
		var qf []float64
		for _, x := range q.Quantiles {
			qf = append(qf, x.Frequency)
		}
		if q.Population != PopulationReported || !slices.Equal(qf, []float64{10, 50, 100}) {
			t.Fatalf("quantiles %+v, want the lower order statistics 10, 50, 100", q)
		}
		if _, err := svc.Estimates.Quantiles(ctx, smp.ID, []float64{0.5}, "some"); !slices.Equal(fieldsOf(err), []string{"population"}) {
			t.Fatalf("unknown population: %v", err)
		}

		keysSpec := testSpec(t, "", 1)
		keysSpec.Release = ReleaseKeys
		keysOnly, err := svc.Samples.Create(ctx, keysSpec, 10, pairs([]string{"x", "y"}, []int64{5, 7}))
		if err != nil {
			t.Fatal(err)
		}
		id := keysOnly.ID
		if _, err := svc.Estimates.Sample(ctx, id, identity, estimate.MLE, Selection{}, 0.95, GroupBy{}); !slices.Equal(fieldsOf(err), []string{"sample"}) {
			t.Errorf("estimate of a keys release: %v", err)
		}
		if _, err := svc.Estimates.Top(ctx, id, 1); !slices.Equal(fieldsOf(err), []string{"sample"}) {
			t.Errorf("top of a keys release: %v", err)
		}
		if _, err := svc.Estimates.Quantiles(ctx, id, []float64{0.5}, ""); !slices.Equal(fieldsOf(err), []string{"sample"}) {
			t.Errorf("quantiles of a keys release: %v", err)
		}

		if err := svc.Samples.Delete(ctx, smp.ID); err != nil {
			t.Fatal(err)
		}
		for name, op := range map[string]func() error{
			"view": func() error { _, err := svc.Samples.Get(ctx, smp.ID, estimate.MLE); return err },
			"estimate": func() error {
				_, err := svc.Estimates.Sample(ctx, smp.ID, identity, estimate.MLE, Selection{}, 0.95, GroupBy{})
				return err
			},
			"top":      func() error { _, err := svc.Estimates.Top(ctx, smp.ID, 1); return err },
			"rank":     func() error { _, _, err := svc.Estimates.Rank(ctx, smp.ID, "a/1"); return err },
			"quantile": func() error { _, err := svc.Estimates.Quantiles(ctx, smp.ID, []float64{0.5}, ""); return err },
			"delete":   func() error { return svc.Samples.Delete(ctx, smp.ID) },
		} {
			if err := op(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s of a deleted sample: %v, want ErrNotFound", name, err)
			}
		}
		if d, _ := svc.Datasets.Get(ctx, "d"); len(d.Releases) != 1 || d.Releases[0].Ref != smp.ID || d.SpentEpsilon != 1 {
			t.Fatalf("the ledger lost the deleted sample's charge: %+v", d)
		}
	})
}

// TestCreateSampleRefuses: a repeated key is named by the index of its
// repeat, an element over maxElements is a *LimitError, a source's field
// error comes back as it is; none stores anything or charges the dataset.
func TestCreateSampleRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	if _, err := svc.Datasets.Create(ctx, "d", 10, 1); err != nil {
		t.Fatal(err)
	}
	bad := &checks.FieldError{Field: "elements[1].frequency", Reason: "must be a positive integer"}
	for _, tc := range []struct {
		name  string
		src   ElementSource
		max   int
		field string // "" for a *LimitError
	}{
		{"repeated key", pairs([]string{"a", "b", "a", "b"}, []int64{5, 6, 7, 8}), 10, "elements[2].key"},
		{"too many elements", pairs([]string{"a", "b", "c"}, []int64{5, 6, 7}), 2, ""},
		{"source error", func() ElementSource {
			n := 0
			return func() (string, int64, error) {
				if n++; n == 2 {
					return "", 0, bad
				}
				return "a", 5, nil
			}
		}(), 10, "elements[1].frequency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Samples.Create(ctx, testSpec(t, "d", 1), tc.max, tc.src)
			var le *LimitError
			if tc.field == "" && !errors.As(err, &le) {
				t.Fatalf("%v, want a *LimitError", err)
			}
			if tc.field != "" && !slices.Equal(fieldsOf(err), []string{tc.field}) {
				t.Fatalf("%v, want a field error naming %s", err, tc.field)
			}
		})
	}
	if items, _, _ := svc.Samples.List(ctx, Page{}); len(items) != 0 {
		t.Fatalf("%d refused samples stored", len(items))
	}
	if d, _ := svc.Datasets.Get(ctx, "d"); d.SpentEpsilon != 0 || len(d.Releases) != 0 {
		t.Fatalf("refused samples were charged: %+v", d)
	}
}

// TestNewSampleSpec: empty release and method take their defaults; bad
// ones are named together.
func TestNewSampleSpec(t *testing.T) {
	t.Parallel()
	p, _ := sanitize.NewPrivacy(0.5, 1e-6)
	s, _ := sanitize.NewSampling(sanitize.SchemeNone, 0, 0, nil)
	spec, err := NewSampleSpec("d", p, s, "", "")
	if err != nil || spec.Release != DefaultRelease || spec.Method != sanitize.DefaultMethod || spec.Dataset != "d" {
		t.Fatalf("defaults: %+v %v", spec, err)
	}
	for _, tc := range []struct {
		release Release
		method  sanitize.Method
		fields  []string
	}{
		{ReleaseKeys, sanitize.MethodDiscrete, nil},
		{"everything", "", []string{"release"}},
		{"", "gaussian", []string{"method"}},
		{"x", "y", []string{"release", "method"}},
	} {
		if _, err := NewSampleSpec("", p, s, tc.release, tc.method); !slices.Equal(fieldsOf(err), tc.fields) {
			t.Errorf("release %q method %q: %v, want fields %v", tc.release, tc.method, err, tc.fields)
		}
	}
}

// TestEstimateRefusals: a power of g that overflows floating point for the
// sample's frequencies is named "g" (a property of the parameters, never a
// 500), and quantiles of a release with no reported key are named "sample".
func TestEstimateRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newTestService(t, Config{})
	smp := exactSample(t, svc, "") // frequencies up to 100: 100^200 overflows
	huge, err := estimate.ParseG("power:200")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Estimates.Sample(ctx, smp.ID, huge, estimate.MLE, Selection{}, 0.95, GroupBy{}); !slices.Equal(fieldsOf(err), []string{"g"}) {
		t.Fatalf("power 200: %v, want a field error naming g", err)
	}
	empty, err := svc.Samples.Create(ctx, testSpec(t, "", 1), 10, pairs(nil, nil))
	if err != nil || empty.Reported != 0 {
		t.Fatalf("empty release: %+v %v", empty, err)
	}
	if _, err := svc.Estimates.Quantiles(ctx, empty.ID, []float64{0.5}, ""); !slices.Equal(fieldsOf(err), []string{"sample"}) {
		t.Fatalf("quantiles of no keys: %v", err)
	}
}
