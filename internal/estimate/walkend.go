package estimate

import (
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// Where a chunk run's walk is asked to end (docs/algorithms.md, "Where a
// chunk run's walk ends").
//
// A chunk run reads rows until their supports start above the run (or the
// statistics it collects): it cannot say in advance which row that is, so
// it used to ask the table for rows up to maxLookahead beyond the run. The
// table takes a walk's end as where the walk will go: a walk to a far end
// crosses many junctions, so it checked the junction above with a warm-up
// beside its rows and had a second goroutine compute the next junctions'
// warm-ups ahead, for junctions the run stopped below. On the Zipf release
// at eps 0.1 that was 17% of the rows the release stepped. A run now asks
// for rows up to where it expects to stop (walkEnd) and reads on only when
// it has not stopped there (readRows): the same rows, bit for bit, from a
// walk that knows how far it goes.

// walkMargin is the rows past a run's last token, beyond walkSpan row
// supports, at which its walk is first asked to end.
const walkMargin = 64

// walkSpan is the support widths, in L (sanitize.L), past a run's last
// token at which its walk is first asked to end. Supports span at most
// about 2.15 L on the test grid; a run that reads further continues
// (readRows).
const walkSpan = 3

// privacySource is a row source that reports its privacy parameters
// (sanitize.Table does).
type privacySource interface {
	Privacy() sanitize.Privacy
}

// walkEnd returns the row at which a walk over src that stops once row
// supports start above top is first asked to end: walkSpan row supports
// and walkMargin rows above top, at most far. It returns far for a source
// that does not report its privacy parameters.
func walkEnd(src any, top float64, far int64) int64 {
	ps, ok := src.(privacySource)
	if !ok {
		return far
	}
	l := sanitize.L(ps.Privacy())
	if !(l > 0) || !(top >= 0) || top+walkSpan*l >= float64(far) {
		return far
	}
	return min(int64(math.Ceil(top+walkSpan*l))+walkMargin, far)
}

// readRows reads rows from..far through read(from, to), which walks rows
// from..to through the caller's callback; the callback sets *stopped when
// it ends the walk. It asks for rows up to end first (walkEnd) and, when
// the callback has not stopped the walk there, reads the rest with a
// second walk (the same rows, bit for bit).
func readRows(from, end, far int64, stopped *bool, read func(from, to int64) error) error {
	to := far
	if end >= from && end < far {
		to = end
	}
	if err := read(from, to); err != nil || *stopped || to == far {
		return err
	}
	return read(to+1, far)
}
