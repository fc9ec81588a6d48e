package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// Ask is what a caller asks of the estimators of a row source: exactly one
// of a full table, a run of MLE chunks, or a stretch of rows with their
// estimates.
type Ask struct {
	Table  *Spec     // the estimator table of the spec (Build)
	Chunks *ChunkAsk // MLE chunks (BuildChunks, BuildChunkEstimates)
	Rows   *RowsAsk  // rows and their outcomes' estimates (RowEstimates)
}

// ChunkAsk asks for the MLE chunks First .. First+Count-1 of size Size of
// each of Gs, built in one pass. With EstimatesOnly the chunks may hold
// their tokens and estimates only (Chunk.HasStats).
//
// StatsAt (with EstimatesOnly) names sanitized values inside the run whose
// MLE frequencies' statistics the caller will read (a release's values,
// whose estimate GET reads the statistics at their MLE frequencies, about
// L above the values and often in the next chunk): where the builder can
// have them exactly from the rows it reads, a little beyond the run, they
// come back in Opened.StatsAt. Which ones come back is a matter of speed,
// never of the answer: each equals the statistics of the chunk holding its
// frequency, bit for bit, and the caller builds that chunk for the others.
type ChunkAsk struct {
	Gs                 []G
	Size, First, Count int64
	EstimatesOnly      bool
	StatsAt            []float64
}

// RowsAsk asks for rows From..To with their outcomes cut at the global
// tokens and each outcome's MLE and biased-down estimate of G, passed to
// Fn in ascending order (RowEstimates says what Margin is). Tables, when
// set, gives the estimator tables of a spec (a caller's cache): where the
// rows of a *sanitize.Table are stationary below To, the answer is read
// from the two tables of size TableSize and their stationary tails
// instead of from a band of rows starting near From (rowsFromTables).
//
// MLEOnly asks for the MLE estimates alone: every outcome's BiasedDown is
// NaN, and the rows are read from the MLE band (about Margin below From)
// instead of from row 1, so the cost no longer grows with From. The
// biased-down estimate (eq. 41) is a recursion over every token below, so
// it cannot be had from a band; the MLE values are those of the full
// answer, bit for bit (TestRowsMLEOnlyMatchFull).
type RowsAsk struct {
	G                G
	From, To, Margin int64
	Fn               func(sanitize.Row, []RowOutcome) error
	Tables           func(Spec) (*Table, error)
	MLEOnly          bool
}

// Opened is what Open built: for a table ask the Table, for a chunk ask
// Chunks[k][m], chunk First+k of Gs[m] (nothing for a rows ask, whose
// answer went to Fn). By names the row of the decision table (builders)
// that built it.
//
// StatsAt[i][m] are the statistics of Gs[m] at frequency i, for the MLE
// frequencies of ChunkAsk.StatsAt that the builder could compute (see
// there); nil when it computed none.
type Opened struct {
	Table   *Table
	Chunks  [][]*Chunk
	StatsAt map[int64][]FrequencyStats
	By      string
}

// Open is the one entry point of the estimator builders: it validates what
// is asked, picks the builder from the decision table (builders: the first
// row whose condition holds and whose builder does not decline) and
// returns what it built. Under the build tag pwsd_reference every fast row
// is skipped and the reference builders build everything (same results,
// bit for bit; docs/estimator-builders.md). Open stops with ctx's error
// soon after ctx is cancelled.
func Open(ctx context.Context, src RowSource, ask Ask) (*Opened, error) {
	j := &job{ctx: ctx, src: src, ask: ask}
	if err := j.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("estimate: nil row source")
	}
	j.method = methodOf(src)
	for _, row := range builders {
		if row.form != j.form || (row.fast && referenceOnly) || !row.when(j) {
			continue
		}
		out, err := row.build(j)
		if errors.Is(err, errDecline) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.By = row.name
		return out, nil
	}
	return nil, errors.New("estimate: internal error: no builder for the request") // the reference rows take any source
}

// ServedByChunks reports whether MLE chunks (Ask.Chunks) serve estimator
// e near given values: only the MLE, whose a_j depends on the rows whose
// support holds token j alone (eq. 11); the biased-down (eq. 41) and
// unbiased estimates are recursions over every token below and come from
// a table (Ask.Table). Callers that cache chunks and tables choose the form
// of their ask with it.
func ServedByChunks(e Estimator) bool { return e == MLE }

// errDecline is a builder's answer when the rows turn out not to suit it
// (errNotUnit, errNotGrid, the chunk grid's ok = false): Open takes the
// next row of the decision table.
var errDecline = errors.New("estimate: builder declines these rows")

// form is the kind of answer asked for.
type form int

const (
	formTable form = iota
	formChunks
	formRows
)

// job is one call of Open: what is asked, of which source.
type job struct {
	ctx    context.Context
	src    RowSource
	ask    Ask
	form   form
	method sanitize.Method
	band   int64 // chunks: the first row of the band (chunkBand), 0 until found
}

// validate checks the ask and sets its form.
func (j *job) validate() error {
	n := 0
	for _, set := range []bool{j.ask.Table != nil, j.ask.Chunks != nil, j.ask.Rows != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("estimate: ask exactly one of a table, chunks or rows")
	}
	switch {
	case j.ask.Table != nil:
		j.form = formTable
		return j.ask.Table.Validate()
	case j.ask.Chunks != nil:
		j.form = formChunks
		c := j.ask.Chunks
		if len(c.Gs) == 0 {
			return errors.New("estimate: no frequency function")
		}
		for _, g := range c.Gs {
			if err := g.Validate(); err != nil {
				return err
			}
		}
		if c.Size < 1 || c.Count < 1 || c.First < 0 || c.First > sanitize.MaxFrequency/c.Size-c.Count {
			return fmt.Errorf("estimate: chunks %d+%d of size %d out of range", c.First, c.Count, c.Size)
		}
		return nil
	default:
		j.form = formRows
		r := j.ask.Rows
		if r.From < 1 || r.To < r.From {
			return errors.New("estimate: row estimates need 1 <= from <= to")
		}
		if r.Fn == nil {
			return errors.New("estimate: row estimates need a function to call")
		}
		return r.G.Validate()
	}
}

// fastEstimator reports whether the table asked for has fast builders
// (MLE and biased-down; the unbiased estimator has the reference only).
func (j *job) fastEstimator() bool {
	e := j.ask.Table.Estimator
	return e == MLE || e == BiasedDown
}

// always is the condition of the rows that take any source.
func always(*job) bool { return true }

// unitRows reports whether the source gives Algorithm 4 rows in dense
// form (a unitSource, as *sanitize.Table).
func (j *job) unitRows() bool {
	_, us := j.src.(unitSource)
	return us && j.method == sanitize.MethodDiscrete
}

// tablesGiven reports whether a rows ask may be answered from the
// caller's tables (RowsAsk.Tables) of a sanitizer table's rows (not for
// the MLE alone: the tables would serve the biased-down estimates too).
func (j *job) tablesGiven() bool {
	_, ok := j.src.(*sanitize.Table)
	return ok && j.ask.Rows.Tables != nil && !j.ask.Rows.MLEOnly
}

// builderRow is one row of the decision table: for asks of its form, when
// the condition holds, build builds the answer or declines (errDecline).
// fast marks a fast builder, skipped under pwsd_reference; ref names the
// reference row it is tested against bit for bit (TestBuilderPairs).
type builderRow struct {
	name  string
	form  form
	fast  bool
	ref   string
	when  func(j *job) bool
	build func(j *job) (*Opened, error)
}

// builders is the decision table, read top down: the first row whose
// condition holds and whose builder does not decline builds the answer.
// docs/estimator-builders.md holds the same table with the reasons.
var builders = []builderRow{
	// Tables.
	{name: "unit", form: formTable, fast: true, ref: "general-ref",
		when: func(j *job) bool { return j.fastEstimator() && j.method == sanitize.MethodDiscrete },
		build: func(j *job) (*Opened, error) {
			t, err := buildUnit(j.ctx, j.src, *j.ask.Table)
			return table(decline(t, err, errNotUnit))
		}},
	{name: "grid", form: formTable, fast: true, ref: "general-ref",
		when: func(j *job) bool {
			_, ps := j.src.(pieceSource)
			return j.fastEstimator() && j.method == sanitize.MethodMaxSeparation && ps &&
				mostlyStationary(j.src, j.ask.Table.MaxFrequency)
		},
		build: func(j *job) (*Opened, error) {
			t, err := buildGrid(j.ctx, j.src, j.src.(pieceSource), *j.ask.Table)
			return table(decline(t, err, errNotGrid))
		}},
	{name: "general", form: formTable, fast: true, ref: "general-ref",
		when:  func(j *job) bool { return j.fastEstimator() },
		build: func(j *job) (*Opened, error) { return table(buildGeneral(j.ctx, j.src, *j.ask.Table)) }},
	{name: "general-ref", form: formTable,
		when:  always,
		build: func(j *job) (*Opened, error) { return table(buildGeneralRef(j.ctx, j.src, *j.ask.Table)) }},
	// MLE chunks.
	{name: "chunks-grid-estimates", form: formChunks, fast: true, ref: "chunks-general-ref",
		when: func(j *job) bool { return j.ask.Chunks.EstimatesOnly && j.method == sanitize.MethodMaxSeparation },
		build: func(j *job) (*Opened, error) {
			c := j.ask.Chunks
			at := newStatsAt(j.src, c)
			return at.answer(chunksOrDecline(buildChunksGrid(j.ctx, j.src, c.Gs, c.Size, c.First, c.Count, c.First*c.Size+1, true, at)))
		}},
	{name: "chunks-unit", form: formChunks, fast: true, ref: "chunks-general-ref",
		when: (*job).unitRows,
		build: func(j *job) (*Opened, error) {
			c := j.ask.Chunks
			at := newStatsAt(j.src, c)
			return at.answer(bandChunks(j, func(band int64) ([][]*Chunk, error) {
				return buildChunksUnit(j.ctx, j.src.(unitSource), c.Gs, c.Size, c.First, c.Count, band, at)
			}))
		}},
	{name: "chunks-grid", form: formChunks, fast: true, ref: "chunks-general-ref",
		when: func(j *job) bool { return j.method == sanitize.MethodMaxSeparation },
		build: func(j *job) (*Opened, error) {
			c := j.ask.Chunks
			band, err := j.chunkBand()
			if err != nil {
				return nil, err
			}
			return chunksOrDecline(buildChunksGrid(j.ctx, j.src, c.Gs, c.Size, c.First, c.Count, band, false, nil))
		}},
	{name: "chunks-general", form: formChunks, fast: true, ref: "chunks-general-ref", when: always, build: generalChunks(newEstimatesOnly)},
	{name: "chunks-general-ref", form: formChunks, when: always, build: generalChunks(newEstimatesOnlyRef)},
	// Rows with their estimates.
	{name: "rows-from-tables", form: formRows, when: (*job).tablesGiven, build: rowsFromTables},
	{name: "rows-unit", form: formRows, fast: true, ref: "rows-general-ref",
		when: func(j *job) bool { return j.unitRows() && !j.ask.Rows.MLEOnly }, // its fast part is the biased-down pass
		build: func(j *job) (*Opened, error) {
			us := j.src.(unitSource)
			return rowsOrDecline(rowEstimates(j, func(bandStart int64) ([]sanitize.Row, *Table, *Table, error) {
				r := j.ask.Rows
				return rowBandUnit(j.ctx, us, r.G, r.From, r.To, bandStart)
			}))
		}},
	{name: "rows-general", form: formRows, fast: true, ref: "rows-general-ref", when: always, build: generalRows(newEstimatesOnly)},
	{name: "rows-general-ref", form: formRows, when: always, build: generalRows(newEstimatesOnlyRef)},
}

// decline turns a builder's own "not these rows" error into errDecline.
func decline(t *Table, err, not error) (*Table, error) {
	if errors.Is(err, not) {
		return nil, errDecline
	}
	return t, err
}

// table wraps a built table.
func table(t *Table, err error) (*Opened, error) {
	if err != nil {
		return nil, err
	}
	return &Opened{Table: t}, nil
}

// chunksOrDecline wraps the chunk grid's answer (ok = false: declined).
func chunksOrDecline(out [][]*Chunk, ok bool, err error) (*Opened, error) {
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errDecline
	}
	return &Opened{Chunks: out}, nil
}

// bandChunks builds chunks from the band of rows that reach them.
func bandChunks(j *job, build func(band int64) ([][]*Chunk, error)) (*Opened, error) {
	band, err := j.chunkBand()
	if err != nil {
		return nil, err
	}
	out, err := build(band)
	if err != nil {
		return nil, err
	}
	return &Opened{Chunks: out}, nil
}

// generalChunks is the builder of chunks on general loops (newEstimatesOnly
// or its reference).
func generalChunks(newLoop newGeneralLoop) func(j *job) (*Opened, error) {
	return func(j *job) (*Opened, error) {
		c := j.ask.Chunks
		return bandChunks(j, func(band int64) ([][]*Chunk, error) {
			return buildChunksGeneral(j.ctx, j.src, newLoop, c.Gs, c.Size, c.First, c.Count, band)
		})
	}
}

// generalRows is the builder of a rows answer on general loops
// (newEstimatesOnly or its reference).
func generalRows(newLoop newGeneralLoop) func(j *job) (*Opened, error) {
	return func(j *job) (*Opened, error) {
		r := j.ask.Rows
		return rowsOrDecline(rowEstimates(j, func(bandStart int64) ([]sanitize.Row, *Table, *Table, error) {
			return rowBand(j.ctx, j.src, newLoop, r.G, r.From, r.To, bandStart, r.MLEOnly)
		}))
	}
}

// rowsOrDecline wraps a rows answer (errNotUnit: declined).
func rowsOrDecline(err error) (*Opened, error) {
	if errors.Is(err, errNotUnit) {
		return nil, errDecline
	}
	if err != nil {
		return nil, err
	}
	return &Opened{}, nil
}

// chunkBand returns the first row of the band a chunk run reads: where row
// lo+1's support starts (tokens above lo get mass only from rows above it),
// found once per Open.
func (j *job) chunkBand() (int64, error) {
	if j.band > 0 {
		return j.band, nil
	}
	c := j.ask.Chunks
	lo := c.First * c.Size
	band := int64(1)
	if lo > 0 {
		var first sanitize.Row
		if err := j.src.Rows(lo+1, lo+1, func(r sanitize.Row) bool { first = r.Clone(); return false }); err != nil {
			return 0, fmt.Errorf("estimate: chunk %d: %w", c.First, err)
		}
		band = lo + 1
		if len(first.Pieces) > 0 {
			band = max(1, int64(math.Floor(first.Pieces[0].Lo)))
		}
	}
	j.band = band
	return band, nil
}
