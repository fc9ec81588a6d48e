package estimate

import (
	"context"
	"errors"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestTableSize: the size is the power of two at or above maxValue + 1, at
// least 64, and when the rows are stationary from s at most the power of two
// above 4s + 64 (the tail serves the rest); a cancelled context stops the
// search for the stationary point.
func TestTableSize(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(0.5, 1e-3)
	prio := mustSampling(sanitize.SchemePriority, 1e-9, nil) // q < 1 far beyond the values below
	none := sanitize.Sampling{Scheme: sanitize.SchemeNone}
	tbPrio, err := sanitize.NewTable(p, prio, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	tbNone, err := sanitize.NewTable(p, none, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	from, ok := tbNone.StationaryFrom()
	if !ok {
		t.Fatal("q = 1 rows must become stationary")
	}
	capped := int64(1)
	for capped < 4*from+64 {
		capped *= 2
	}
	for _, c := range []struct {
		name     string
		tb       *sanitize.Table
		maxValue float64
		want     int64
	}{
		{"small values take the minimum", tbPrio, 3, 64},
		{"63 still fits 64", tbPrio, 63, 64},
		{"64 needs 128", tbPrio, 64, 128},
		{"fractional value rounds up", tbPrio, 1000.5, 1024},
		{"stationary rows cap the size", tbNone, 1e9, capped},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := TableSize(context.Background(), c.tb, c.maxValue)
			if err != nil || got != c.want {
				t.Fatalf("TableSize(%g) = %d, %v; want %d", c.maxValue, got, err, c.want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		fresh, err := sanitize.NewTable(mustPrivacy(0.3, 1e-6), none, sanitize.MethodMaxSeparation)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if n, err := TableSize(ctx, fresh, 1e6); !errors.Is(err, context.Canceled) {
			t.Fatalf("TableSize with a cancelled context = %d, %v; want context.Canceled", n, err)
		}
	})
}
