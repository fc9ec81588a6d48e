package estimate

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// bandSource is a RowSource that records the rows it hands out: how
// many, and the lowest frequency.
type bandSource struct {
	src      RowSource
	rows     int64
	min      int64
	calledAt []int64
}

func (c *bandSource) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	c.calledAt = append(c.calledAt, from)
	return c.src.Rows(from, to, func(r sanitize.Row) bool {
		c.rows++
		if c.min == 0 || r.Frequency < c.min {
			c.min = r.Frequency
		}
		return fn(r)
	})
}

// readAhead is the most rows the row goroutine reads beyond the one where
// its consumer stops (pipeBatches batches of pipeBatchRows): row counts
// seen by the source vary with scheduling by up to this much.
const readAhead = pipeBatches * pipeBatchRows

// rowsAnswer is what a rows ask passed to its Fn.
type rowsAnswer struct {
	rows []string
	outs [][]RowOutcome
}

func askRows(t *testing.T, src RowSource, ask RowsAsk) rowsAnswer {
	t.Helper()
	var a rowsAnswer
	ask.Fn = func(r sanitize.Row, out []RowOutcome) error {
		a.rows = append(a.rows, fmt.Sprint(r.Frequency, r.Pi, r.Pieces))
		a.outs = append(a.outs, append([]RowOutcome(nil), out...))
		return nil
	}
	if _, err := Open(context.Background(), src, Ask{Rows: &ask}); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRowsMLEOnlyMatchFull: asked for the MLE alone, a rows ask answers the
// same rows and outcomes with the same MLE estimates bit for bit as the
// full ask (which reads every row from 1 for the biased-down recursion),
// every BiasedDown is NaN, and it reads no row below the band (From less
// the margin) and about as many rows as the band holds, whatever From is.
func TestRowsMLEOnlyMatchFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps, tau float64
		m        sanitize.Method
		from, to int64
	}{
		{1, 1e-4, sanitize.MethodDiscrete, 3000, 3003},
		{1, 1e-4, sanitize.MethodMaxSeparation, 3000, 3003},
		{0.5, 1e-5, sanitize.MethodDiscrete, 20_000, 20_001},
		{0.5, 1e-5, sanitize.MethodMaxSeparation, 20_000, 20_001},
		{2, 1e-3, sanitize.MethodMaxSeparation, 1, 5}, // the band reaches row 1
	} {
		t.Run(fmt.Sprintf("eps=%g/tau=%g/%s/%d", tc.eps, tc.tau, tc.m, tc.from), func(t *testing.T) {
			t.Parallel()
			p := sanitize.Privacy{Epsilon: tc.eps, Delta: 1e-6}
			smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: tc.tau, Power: 1}
			tab, err := sanitize.NewTable(p, smp, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			margin := 4*int64(math.Ceil(sanitize.L(p))) + 64
			g := G{Kind: GIdentity}
			fullSrc := &bandSource{src: tab}
			full := askRows(t, fullSrc, RowsAsk{G: g, From: tc.from, To: tc.to, Margin: margin})
			fresh, err := sanitize.NewTable(p, smp, tc.m) // nothing cached from the full ask
			if err != nil {
				t.Fatal(err)
			}
			src := &bandSource{src: fresh}
			only := askRows(t, src, RowsAsk{G: g, From: tc.from, To: tc.to, Margin: margin, MLEOnly: true})
			if len(only.rows) != len(full.rows) {
				t.Fatalf("%d rows, the full ask %d", len(only.rows), len(full.rows))
			}
			for k := range full.rows {
				if only.rows[k] != full.rows[k] {
					t.Fatalf("row %d differs", tc.from+int64(k))
				}
				if len(only.outs[k]) != len(full.outs[k]) {
					t.Fatalf("row %d: %d outcomes, the full ask %d", tc.from+int64(k), len(only.outs[k]), len(full.outs[k]))
				}
				for x, w := range full.outs[k] {
					o := only.outs[k][x]
					if o.Lo != w.Lo || o.Hi != w.Hi || math.Float64bits(o.P) != math.Float64bits(w.P) || math.Float64bits(o.MLE) != math.Float64bits(w.MLE) {
						t.Fatalf("row %d, outcome %d: %+v, the full ask %+v", tc.from+int64(k), x, o, w)
					}
					if !math.IsNaN(o.BiasedDown) || math.IsNaN(w.BiasedDown) {
						t.Fatalf("row %d, outcome %d: biased-down %g (MLE only), %g (full)", tc.from+int64(k), x, o.BiasedDown, w.BiasedDown)
					}
				}
			}
			bandStart := max(1, tc.from-margin)
			if src.min < bandStart {
				t.Errorf("read row %d, below the band's first row %d", src.min, bandStart)
			}
			// Never more rows than the full ask; far up, the band's rows
			// and those whose supports settle the last token: a few
			// windows, not From. Both counts include what the row
			// goroutine read ahead before the consumer stopped it, which
			// depends on scheduling: at most readAhead rows.
			if src.rows > fullSrc.rows+readAhead {
				t.Errorf("read %d rows, the full ask %d", src.rows, fullSrc.rows)
			}
			if limit := tc.to - bandStart + 1 + 8*margin + readAhead; tc.from > 8*margin && src.rows > limit {
				t.Errorf("read %d rows, more than the band's %d", src.rows, limit)
			}
		})
	}
}

// TestRowsMLEOnlyFarUp: at a frequency no full ask could reach cheaply
// (10^7: the biased-down recursion would read ten million rows), the MLE
// alone reads a band of a few thousand rows, and its estimates are those
// of an MLE chunk covering the same tokens (an independent builder).
func TestRowsMLEOnlyFarUp(t *testing.T) {
	t.Parallel()
	oracleOnly(t)
	p := sanitize.Privacy{Epsilon: 0.5, Delta: 1e-6}
	smp := sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 1e-5, Power: 1}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		tab, err := sanitize.NewTable(p, smp, m)
		if err != nil {
			t.Fatal(err)
		}
		const f = 10_000_000
		margin := 4*int64(math.Ceil(sanitize.L(p))) + 64
		src := &bandSource{src: tab}
		only := askRows(t, src, RowsAsk{G: G{Kind: GIdentity}, From: f, To: f, Margin: margin, MLEOnly: true})
		if len(only.rows) != 1 || len(only.outs[0]) == 0 {
			t.Fatalf("%s: %d rows", m, len(only.rows))
		}
		if src.rows > 8*margin+readAhead {
			t.Errorf("%s: read %d rows for one row at 10^7", m, src.rows)
		}
		size := ChunkSize(p)
		for _, o := range only.outs[0] {
			k := ChunkOf((o.Lo+o.Hi)/2, size)
			ch, err := BuildChunk(context.Background(), tab, G{Kind: GIdentity}, size, k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ch.Estimate((o.Lo + o.Hi) / 2)
			if err != nil {
				t.Fatal(err)
			}
			if !relClose(o.MLE, want, 1e-12) {
				t.Fatalf("%s: outcome (%g, %g]: MLE %g, the chunk %g", m, o.Lo, o.Hi, o.MLE, want)
			}
		}
	}
}
