package estimate

import (
	"math"
	"testing"
)

// TestTrackShiftDenseReportsCopies: the row goroutine's tracker, which
// flags the rows the unit-cell MLE may take its shortcut on, says "copy"
// exactly for the previous row shifted up one cell bit for bit.
func TestTrackShiftDenseReportsCopies(t *testing.T) {
	t.Parallel()
	m := []float64{0.1, 0.2, 0.3}
	for _, c := range []struct {
		name string
		pi   float64
		lo   int64
		m    []float64
		want bool
	}{
		{"copy", 0.6, 11, m, true},
		{"same cells", 0.6, 10, m, false},
		{"pi differs in the last bit", math.Nextafter(0.6, 1), 11, m, false},
		{"a mass differs", 0.6, 11, []float64{0.1, 0.2, math.Nextafter(0.3, 1)}, false},
		{"wider", 0.6, 11, []float64{0.1, 0.2, 0.3, 0}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &shiftTracker{}
			if tr.trackShiftDense(13, 0.6, 10, m) {
				t.Fatal("the first row cannot be a copy")
			}
			if got := tr.trackShiftDense(14, c.pi, c.lo, c.m); got != c.want {
				t.Errorf("copied = %v, want %v", got, c.want)
			}
		})
	}
}
