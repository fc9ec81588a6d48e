package estimate

import (
	"slices"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestDenseMLEMatchesRef: on stationary rows (q = 1, every row the
// previous one shifted up by a cell, bit for bit) the dense MLE (denseMLE)
// takes each token's argmax from the previous token's without scanning the
// rows; the estimates and statistics are bit for bit those of its
// reference, which scans every token (denseMLERef), and the shortcut is
// taken on most tokens (it cannot pass by never being used). Rows that are
// not copies (ppswor with q_i < 1) never take it. (Both against the
// reference builder: TestBuildUnitMatchesRef, TestBuildGridMatchesRef.)
func TestDenseMLEMatchesRef(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		scheme   sanitize.Scheme
		tau      float64
		n        int64
		wantMost bool
	}{
		{"none", sanitize.SchemeNone, 0, 3000, true},
		{"ppswor q<1", sanitize.SchemePPSWOR, 2e-5, 1500, false},
		{"ppswor reaching q=1", sanitize.SchemePPSWOR, 0.05, 3000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			smp, err := sanitize.NewSampling(c.scheme, c.tau, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			build := func(loop denseLoop) *denseRows {
				tab, err := sanitize.NewTable(mustPrivacy(0.5, 1e-6), smp, sanitize.MethodDiscrete)
				if err != nil {
					t.Fatal(err)
				}
				u := loop.window()
				u.stats = make([]FrequencyStats, c.n)
				err = tab.UnitRows(1, c.n+maxLookahead, func(i int64, pi, lo float64, m []float64) bool {
					if err = addDense(loop, i, pi, lo, m); err != nil {
						return false
					}
					return !u.done
				})
				if err != nil || !u.done {
					t.Fatalf("build: %v (done %v)", err, u.done)
				}
				return u
			}
			mle := newDenseMLE(G{Kind: GIdentity}, c.n)
			fast, scan := build(mle), build(newDenseMLERef(G{Kind: GIdentity}, c.n))
			if !slices.Equal(fast.a, scan.a) || !slices.Equal(fast.stats, scan.stats) {
				t.Fatal("the shortcut changed an estimate or a statistic")
			}
			if most := mle.shortcuts > int(c.n)/2; most != c.wantMost || (!c.wantMost && mle.shortcuts != 0) {
				t.Errorf("shortcut taken on %d of %d tokens", mle.shortcuts, c.n)
			}
		})
	}
}
