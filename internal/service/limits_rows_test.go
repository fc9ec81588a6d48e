package service

import (
	"context"
	"errors"
	"testing"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestFrequencyRowsWork: the frequencies route charges what it computes.
// Where the rows are not stationary by the requested frequency it builds no
// estimator table (one pass over rows 1..top plus about two windows,
// estimate.RowEstimates), so its work is those cells at bandCellCost; where
// they are (q reaches 1 early), it looks the rows up in two estimator
// tables and its work is tableWork's with two tables. Under the default
// limit the cold request (eps 0.2, delta 1e-7, ppswor tau 2e-5,
// frequency 10^6) is admitted and a small-epsilon one (1e-4, L about 39,000) is still refused
// naming epsilon.
func TestFrequencyRowsWork(t *testing.T) {
	t.Parallel()
	priv := func(eps, delta float64) sanitize.Privacy {
		p, err := sanitize.NewPrivacy(eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ppswor, err := sanitize.NewSampling(sanitize.SchemePPSWOR, 2e-5, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	t.Run("band path", func(t *testing.T) {
		p := priv(0.2, 1e-7)
		w, window := FrequencyRowsWork(p, ppswor, 1, 1_000_000)
		want := bandCellCost * window * (1_000_000 + 1 + 2*window)
		if w != want {
			t.Fatalf("work %g, want %g", w, want)
		}
		if tw, _ := tableWork(p, ppswor, 1, 1_000_000, 2); !(w < tw/10) {
			t.Fatalf("band work %g is not far below the two-table work %g", w, tw)
		}
	})
	t.Run("stationary rows use the tables", func(t *testing.T) {
		p := priv(0.5, 1e-6)
		w, _ := FrequencyRowsWork(p, none, 1, 1_000_000)
		if tw, _ := tableWork(p, none, 1, 1_000_000, 2); w != tw {
			t.Fatalf("work %g, want TableWork %g", w, tw)
		}
	})
	t.Run("default limit", func(t *testing.T) {
		s := newTestService(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // admission only: the computation itself stops at once
		if _, err := s.Tables.FrequencyRows(ctx, priv(0.2, 1e-7), ppswor, sanitize.MethodDiscrete, 1_000_000, 1_000_000); err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("the 10^6 request must pass admission and then stop on its context: %v", err)
		}
		_, err := s.Tables.FrequencyRows(context.Background(), priv(1e-4, 1e-6), none, sanitize.MethodDiscrete, 1, 1)
		var fe *checks.FieldError
		if !errors.As(err, &fe) || fe.Field != "epsilon" {
			t.Fatalf("small epsilon: %v, want a field error naming epsilon", err)
		}
	})
}
