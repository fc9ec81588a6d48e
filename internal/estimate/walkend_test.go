package estimate

import (
	"context"
	"math"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// recordingRows is a sanitizer table that records the rows each walk is
// asked for. It does not report its privacy parameters, so walkEnd asks
// it for the far end, as every chunk run did before walkEnd.
type recordingRows struct {
	t     *sanitize.Table
	calls [][2]int64
}

func (s *recordingRows) Rows(from, to int64, fn func(sanitize.Row) bool) error {
	s.calls = append(s.calls, [2]int64{from, to})
	return s.t.Rows(from, to, fn)
}

func (s *recordingRows) UnitRows(from, to int64, fn func(i int64, pi, lo float64, m []float64) bool) error {
	s.calls = append(s.calls, [2]int64{from, to})
	return s.t.UnitRows(from, to, fn)
}

func (s *recordingRows) Method() sanitize.Method { return s.t.Method() }

// recordingTable is recordingRows reporting privacy parameters p (the
// table's own, or others that make walkEnd's guess too short).
type recordingTable struct {
	*recordingRows
	p sanitize.Privacy
}

func (s recordingTable) Privacy() sanitize.Privacy { return s.p }

// TestWalkEnd: the end a run's walk is first asked for is walkSpan row
// supports and walkMargin rows above its last token, at most far; a source
// that does not report its privacy parameters is asked for far.
func TestWalkEnd(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(0.1, 1e-6)
	l := sanitize.L(p)
	tab, err := sanitize.NewTable(p, mustSampling(sanitize.SchemeNone, 0, nil), sanitize.MethodMaxSeparation)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		src  any
		top  float64
		far  int64
		want int64
	}{
		{"a table", tab, 1000, 1 << 30, int64(math.Ceil(1000+3*l)) + 64},
		{"capped at far", tab, 1000, 1200, 1200},
		{"far below the guess", tab, 1000, 1100, 1100},
		{"no privacy parameters", &recordingRows{t: tab}, 1000, 1 << 30, 1 << 30},
		{"top not a number", tab, math.NaN(), 1 << 30, 1 << 30},
	} {
		if got := walkEnd(c.src, c.top, c.far); got != c.want {
			t.Errorf("%s: walkEnd = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestChunkRunsAskForTheirEnd checks that the three chunk builders (the
// grid, the unit cells, the general one) ask the table for rows up to
// where their run stops (walkEnd), not maxLookahead beyond it: one walk
// that ends there. The chunks are those of a run asked for the far end,
// bit for bit, and the table steps no more rows for them. When the guess
// is too short (the source reports a larger epsilon, so a smaller L), the
// run reads on with a second walk from the row after it, and its chunks
// are still the same bit for bit.
func TestChunkRunsAskForTheirEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gs := []G{{Kind: GIdentity}, {Kind: GCount}}
	p := mustPrivacy(0.1, 1e-6)
	smp := mustSampling(sanitize.SchemePPSWOR, 1e-4, nil)
	size := ChunkSize(p)
	const k0, n = 3000, 1 // far up, where rows are computed by restart
	lo, hi := int64(k0*size), int64((k0+n)*size)
	far := min(hi+maxLookahead, sanitize.MaxFrequency)
	for _, c := range []struct {
		name   string
		method sanitize.Method
		build  func(src RowSource, band int64) ([][]*Chunk, error)
	}{
		{"grid", sanitize.MethodMaxSeparation, func(src RowSource, band int64) ([][]*Chunk, error) {
			out, ok, err := buildChunksGrid(ctx, src, gs, size, k0, n, lo+1, true, nil)
			if err == nil && !ok {
				t.Fatal("the grid builder declined")
			}
			return out, err
		}},
		{"unit", sanitize.MethodDiscrete, func(src RowSource, band int64) ([][]*Chunk, error) {
			return buildChunksUnit(ctx, src.(unitSource), gs, size, k0, n, band, nil)
		}},
		{"general", sanitize.MethodMaxSeparation, func(src RowSource, band int64) ([][]*Chunk, error) {
			return buildChunksGeneral(ctx, src, newEstimatesOnly, gs, size, k0, n, band)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			newTable := tableMaker(t, p, smp, c.method)
			// The band starts where row lo+1's support does (chunkBand).
			var band int64
			if err := newTable().Rows(lo+1, lo+1, func(r sanitize.Row) bool {
				band = int64(math.Floor(r.Pieces[0].Lo))
				return false
			}); err != nil {
				t.Fatal(err)
			}
			run := func(src RowSource, rec *recordingRows) ([][]*Chunk, int64) {
				out, err := c.build(src, band)
				if err != nil {
					t.Fatal(err)
				}
				return out, rec.t.RowsStepped()
			}
			farRec := &recordingRows{t: newTable()}
			want, farRows := run(farRec, farRec)
			if len(farRec.calls) != 1 || farRec.calls[0][1] != far {
				t.Fatalf("a source without privacy parameters was asked for %v, want one walk to %d", farRec.calls, far)
			}

			rec := &recordingRows{t: newTable()}
			got, rows := run(recordingTable{rec, p}, rec)
			sameChunks(t, got, want)
			if len(rec.calls) != 1 || rec.calls[0][1] >= far {
				t.Fatalf("the run asked for %v: want one walk that ends near the run, below %d", rec.calls, far)
			}
			if rows > farRows {
				t.Errorf("the table stepped %d rows for the run asked for its end, %d for the far end", rows, farRows)
			}
			t.Logf("rows stepped: %d asked for the end (%d), %d for the far end", rows, rec.calls[0][1], farRows)

			short := &recordingRows{t: newTable()}
			got, _ = run(recordingTable{short, mustPrivacy(2, 1e-6)}, short)
			sameChunks(t, got, want)
			if len(short.calls) != 2 || short.calls[1][0] != short.calls[0][1]+1 || short.calls[1][1] != far {
				t.Fatalf("with a guess too short the run asked for %v: want a first walk and a second from the row after it to %d", short.calls, far)
			}
		})
	}
}
