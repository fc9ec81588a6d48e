package estimate

import (
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// statsAt is the statistics at the MLE frequencies of some values that a
// chunk run computes besides its chunks (ChunkAsk.StatsAt; docs/algorithms.md,
// "Statistics with the release"). A release reads the estimates-only chunks
// holding its values; its first estimate GET then reads the statistics at
// the values' MLE frequencies, about L above them (often in the next chunk).
// Those need row i and the final estimates of the tokens of its support,
// about (i - 2L, i], which need the rows up to about i + 2L: the run's band,
// widened by reach below its lowest value and above its highest, holds them
// at a fraction of the cost of building the next chunk later.
type statsAt struct {
	values []float64
	reach  float64
	got    map[int64][]FrequencyStats
	wants  map[int64]bool // the values' MLE rows (buildChunksUnit)
}

// put records the statistics of the m-th of n frequency functions at i.
func (a *statsAt) put(i int64, m, n int, st FrequencyStats) {
	if a.got[i] == nil {
		a.got[i] = make([]FrequencyStats, n)
	}
	a.got[i][m] = st
}

// statsReachFactor is reach in units of L: a value's MLE frequency lies
// about L above it (0.92 L to 1.08 L on the test grid) and row i's support
// spans about 2L below i (1.9 L to 2.2 L), so the rows a value's statistics
// read start about 1.1 L below it and the tokens they read end about 1.1 L
// above it. A frequency outside the reach is simply not collected.
const statsReachFactor = 1.12

// newStatsAt returns the statsAt of c's StatsAt inside the run, or nil when
// there are none or src does not say its privacy parameters (the reach is
// a multiple of L).
func newStatsAt(src RowSource, c *ChunkAsk) *statsAt {
	ps, ok := src.(interface{ Privacy() sanitize.Privacy })
	if !ok || len(c.StatsAt) == 0 || !c.EstimatesOnly {
		return nil
	}
	l := sanitize.L(ps.Privacy())
	if !(l > 0) || math.IsInf(l, 0) {
		return nil
	}
	lo, hi := float64(c.First*c.Size), float64((c.First+c.Count)*c.Size)
	var vs []float64
	for _, v := range c.StatsAt {
		if v > lo && v <= hi {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	slices.Sort(vs)
	return &statsAt{values: slices.Compact(vs), reach: math.Ceil(statsReachFactor*l) + 2, got: map[int64][]FrequencyStats{}}
}

// answer gives a chunk builder's answer the statistics collected (none
// when a is nil or collected nothing).
func (a *statsAt) answer(out *Opened, err error) (*Opened, error) {
	if out != nil && a != nil && len(a.got) > 0 {
		out.StatsAt = a.got
	}
	return out, err
}

// band widens a run's band (its first row and the top of its grid) to reach
// below the lowest value and above the highest.
func (a *statsAt) band(bandStart int64, top float64) (int64, float64) {
	from := max(1, min(bandStart, int64(math.Floor(a.values[0]-a.reach))))
	return from, math.Min(math.Max(top, math.Ceil(a.values[len(a.values)-1]+a.reach)), float64(sanitize.MaxFrequency))
}

// collect computes, for each value, the statistics of every g at the MLE
// row of the value's token where they are exact: the row was read, its
// support lies at or above bandStart - 1 (every token of it final: all
// the rows holding it were read) and at or below top (inside the grid).
// It sums them as the chunk builders do (gridCells in the pieces' order,
// rowStatsBatch), so each equals its chunk's statistics bit for bit.
func (a *statsAt) collect(band []sanitize.Row, pts []float64, top float64, bandStart int64, tables []*Table, best []int) {
	var cells gridCells
	for _, v := range a.values {
		j, _ := slices.BinarySearch(pts, v)
		if j == 0 || j >= len(pts) || best[j] == 0 {
			continue
		}
		r := band[best[j]-1]
		if _, done := a.got[r.Frequency]; done || len(r.Pieces) == 0 ||
			r.Pieces[0].Lo < float64(bandStart-1) || float64(r.Frequency) > top || !cells.of(r, pts, top) {
			continue
		}
		stats := make([]FrequencyStats, len(tables))
		for m, t := range tables {
			cells.a = cells.a[:0]
			for _, tok := range cells.tok {
				cells.a = append(cells.a, t.A[tok-1])
			}
			rowStatsBatch([]statsJob{{freq: r.Frequency, g: t.G.at(r.Frequency), pi: r.Pi, masses: cells.mass, a: cells.a, out: &stats[m]}})
		}
		a.got[r.Frequency] = stats
	}
}
