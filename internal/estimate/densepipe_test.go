package estimate

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// runsSource gives dense unit rows of width w below their frequency whose
// masses follow one of two patterns, switching every period rows: runs of
// shifted copies broken by rows that differ (a stress case for rows that
// share buffers; no sanitizer table breaks a run once it has begun).
type runsSource struct{ w, period int64 }

func (s runsSource) UnitRows(from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	m := make([]float64, s.w)
	for i := from; i <= to; i++ {
		lo := max(i-s.w, 0)
		m = m[:i-lo]
		alt := (i/s.period)%2 == 1
		pi := 0.0
		for k := range m {
			v := float64(k+1) / float64(s.w*s.w)
			if alt {
				v = float64(len(m)-k) / float64(3*s.w*s.w)
			}
			if k == len(m)-1 {
				v += 0.01 // the top cell carries mass
			}
			m[k] = v
			pi += v
		}
		if !fn(i, pi, float64(lo), m) {
			return nil
		}
	}
	return nil
}

// TestUnitRowsShareCopiedBuffers: on the row goroutine, a row the shift
// tracker reports as a copy of the row before it shares that row's masses
// and suffix sums instead of filling its own; the estimates and statistics
// are bit for bit those of rows that each hold their own (the pieces path)
// and, for the MLE, scan every token (denseMLERef: no copy shortcut), and
// most stationary rows do share.
func TestUnitRowsShareCopiedBuffers(t *testing.T) {
	t.Parallel()
	const n = 8000
	smp, err := sanitize.NewSampling(sanitize.SchemeNone, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := func() unitSource {
		tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), smp, sanitize.MethodDiscrete)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	for _, c := range []struct {
		name   string
		src    func() unitSource
		shares int // at least this many rows must share
	}{
		{"stationary table", table, n / 2},
		{"runs broken every 37 rows", func() unitSource { return runsSource{w: 40, period: 37} }, n / 2},
		// Long runs: a row that lent its buffers comes back from the
		// row goroutine's pool (batches of pipeBatchRows) while rows of
		// its run still read them.
		{"runs broken every 2500 rows", func() unitSource { return runsSource{w: 40, period: 2500} }, n / 2},
	} {
		for _, est := range []Estimator{MLE, BiasedDown} {
			t.Run(c.name+"/"+string(est), func(t *testing.T) {
				testSharedBuffers(t, c.src, est, n, c.shares)
			})
		}
	}
}

// testSharedBuffers builds a unit-cell table of src with the row goroutine
// (rows may share buffers) and row by row on the caller's goroutine with
// addDense (every row fills its own), and compares them bit for bit.
func testSharedBuffers(t *testing.T, src func() unitSource, est Estimator, n int64, minShared int) {
	t.Helper()
	{
		{
			newLoop := func() denseLoop {
				if est == MLE {
					return newDenseMLE(G{Kind: GIdentity}, n)
				}
				return newDenseBD(G{Kind: GIdentity}, n, 0)
			}
			loop := newLoop()
			u := loop.window()
			u.stats = make([]FrequencyStats, n)
			tr := &shiftTracker{}
			pre := func(it *denseItem, m []float64) error {
				it.copied = tr.trackShiftDense(it.i, it.pi, int64(it.lo), m)
				return nil
			}
			shared := 0
			var lerr error
			fn := func(it *denseItem) bool {
				if it.err != nil {
					lerr = it.err
					return false
				}
				if it.r.aliased {
					shared++
				}
				it.r.copied = it.copied
				if lerr = linkDense(loop, it.r); lerr != nil {
					return false
				}
				return !u.done
			}
			if err := u.pipeDense(context.Background(), src(), 1, n+maxLookahead, math.MaxInt64, pre, fn); err != nil || lerr != nil || !u.done {
				t.Fatalf("dense build: %v, %v (done %v)", err, lerr, u.done)
			}
			// The reference holds its own buffers and, for the MLE, scans
			// every token (denseMLERef, no copy shortcut): the fast loop is
			// never compared with itself.
			refLoop := newLoop()
			if est == MLE {
				refLoop = newDenseMLERef(G{Kind: GIdentity}, n)
			}
			ref := refLoop.window()
			ref.stats = make([]FrequencyStats, n)
			err := src().UnitRows(1, n+maxLookahead, func(i int64, pi, lo float64, m []float64) bool {
				if lerr = addDense(refLoop, i, pi, lo, m); lerr != nil {
					return false
				}
				return !ref.done
			})
			if err != nil || lerr != nil || !ref.done {
				t.Fatalf("reference build: %v, %v", err, lerr)
			}
			if !slices.Equal(u.a, ref.a) || !slices.Equal(u.stats, ref.stats) {
				t.Fatal("shared buffers changed an estimate or a statistic")
			}
			if shared < minShared {
				t.Errorf("%d of %d rows shared their predecessor's buffers", shared, n)
			}
		}
	}
}
