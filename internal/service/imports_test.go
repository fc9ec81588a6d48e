package service

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// TestImportSample: an import names the external charge that paid for it,
// of the release's own (epsilon, delta); every element must be one the
// release's sanitizer outputs, with the frequency and contribution the
// service derives from its value; any refusal stores nothing and leaves
// the charge unused, so a correct import against it then succeeds, and a
// second import against a used charge is ErrAlreadyImported. The charge's
// claim lives in the store, hence both stores.
func TestImportSample(t *testing.T) {
	t.Parallel()
	bothServices(t, func(t *testing.T, svc *Service, st store.Store) {
		ctx := context.Background()
		if _, err := svc.Datasets.Create(ctx, "d", 10, 1e-3); err != nil {
			t.Fatal(err)
		}
		// The release to import: one pwsd sanitized, at (1, 1e-6), where a
		// key of frequency 1000 is always reported.
		spec := testSpec(t, "", 1)
		p, _ := sanitize.NewPrivacy(1, 1e-6)
		spec.Privacy = p
		keys := make([]string, 5)
		freqs := make([]int64, 5)
		for i := range keys {
			keys[i], freqs[i] = "k"+strconv.Itoa(i), 1000
		}
		src, err := svc.Samples.Create(ctx, spec, 10, pairs(keys, freqs))
		if err != nil || src.Reported != 5 {
			t.Fatalf("source release: %v", err)
		}
		release := make([]ImportedElement, 5)
		for i, e := range src.Elements {
			release[i] = ImportedElement{Key: e.Key, Value: e.Value, Frequency: src.Keys[i].Frequency, Contribution: src.Keys[i].Contribution}
		}
		paid, err := svc.Datasets.Charge(ctx, "d", 1, 1e-6, "the release")
		if err != nil {
			t.Fatal(err)
		}
		other, err := svc.Datasets.Charge(ctx, "d", 0.5, 1e-6, "another")
		if err != nil {
			t.Fatal(err)
		}
		importSpec := func(dataset, ref string) ImportSpec {
			s := spec
			s.Dataset = dataset
			return ImportSpec{SampleSpec: s, ChargeRef: ref}
		}
		edited := func(f func(es []ImportedElement) []ImportedElement) ImportSource {
			es := f(slices.Clone(release))
			i := 0
			return func() (ImportedElement, error) {
				if i == len(es) {
					return ImportedElement{}, io.EOF
				}
				i++
				return es[i-1], nil
			}
		}
		as := func(es []ImportedElement) []ImportedElement { return es }
		for _, tc := range []struct {
			name  string
			spec  ImportSpec
			max   int
			src   ImportSource
			field string // "" with neither limit nor notFound: success
			limit bool
			nf    bool
		}{
			{name: "no dataset", spec: importSpec("", paid.ID), src: edited(as), field: "dataset"},
			{name: "no charge", spec: importSpec("d", ""), src: edited(as), field: "charge_ref"},
			{name: "charge of another epsilon", spec: importSpec("d", other.ID), src: edited(as), field: "charge_ref"},
			{name: "unknown charge", spec: importSpec("d", "0123456789abcdef"), src: edited(as), field: "charge_ref"},
			{name: "unknown dataset", spec: importSpec("nope", paid.ID), src: edited(as), nf: true},
			{name: "frequency not the MLE", spec: importSpec("d", paid.ID), src: edited(func(es []ImportedElement) []ImportedElement {
				es[1].Frequency++
				return es
			}), field: "elements[1].frequency"},
			{name: "wrong contribution", spec: importSpec("d", paid.ID), src: edited(func(es []ImportedElement) []ImportedElement {
				es[0].Contribution *= 2
				return es
			}), field: "elements[0].contribution"},
			{name: "fractional token", spec: importSpec("d", paid.ID), src: edited(func(es []ImportedElement) []ImportedElement {
				es[2].Value += 0.5
				return es
			}), field: "elements[2].value"},
			{name: "no value", spec: importSpec("d", paid.ID), src: edited(func(es []ImportedElement) []ImportedElement {
				es[0].Value = math.NaN()
				return es
			}), field: "elements[0].value"},
			{name: "repeated key", spec: importSpec("d", paid.ID), src: edited(func(es []ImportedElement) []ImportedElement {
				es[3].Key = es[0].Key
				return es
			}), field: "elements[3].key"},
			{name: "too many elements", spec: importSpec("d", paid.ID), max: 4, src: edited(as), limit: true},
			{name: "the release", spec: importSpec("d", paid.ID), src: edited(as)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				max := tc.max
				if max == 0 {
					max = 10
				}
				smp, err := svc.Samples.Import(ctx, tc.spec, max, tc.src)
				var le *LimitError
				var nf *NotFoundError
				switch {
				case tc.field != "":
					if !slices.Equal(fieldsOf(err), []string{tc.field}) {
						t.Fatalf("%v, want a field error naming %s", err, tc.field)
					}
				case tc.limit:
					if !errors.As(err, &le) {
						t.Fatalf("%v, want a *LimitError", err)
					}
				case tc.nf:
					if !errors.As(err, &nf) || nf.Kind != "dataset" {
						t.Fatalf("%v, want a *NotFoundError of the dataset", err)
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
					view, err := svc.Samples.Get(ctx, smp.ID, estimate.MLE)
					if err != nil {
						t.Fatal(err)
					}
					for i, e := range view.Elements {
						j := slices.IndexFunc(release, func(r ImportedElement) bool { return r.Key == e.Key })
						if j < 0 || e.Value != release[j].Value || view.Keys[i].Frequency != release[j].Frequency {
							t.Fatalf("imported element %+v %+v, released %+v", e, view.Keys[i], release)
						}
					}
				}
			})
		}
		if _, err := svc.Samples.Import(ctx, importSpec("d", paid.ID), 10, edited(as)); !errors.Is(err, ErrAlreadyImported) {
			t.Fatalf("second import against one charge: %v, want ErrAlreadyImported", err)
		}
		if items, _, _ := svc.Samples.List(ctx, Page{}); len(items) != 2 {
			t.Fatalf("%d samples stored, want the source and one import", len(items))
		}
		if d, _ := svc.Datasets.Get(ctx, "d"); d.SpentEpsilon != 1.5 || len(d.Releases) != 2 {
			t.Fatalf("an import was charged: %+v", d)
		}
	})
}
