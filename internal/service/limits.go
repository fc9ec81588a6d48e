package service

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// frequencyLimit returns the largest frequency pwsd can sanitize and estimate
// under t's parameters: every one up to sanitize.MaxFrequency, since rows by
// restart (docs/algorithms.md) cost O(L) each at any frequency once a
// restart has warmed up. What a request may cost is bounded by the work
// model below instead. The limit depends on public parameters only.
func frequencyLimit(*sanitize.Table) int64 { return sanitize.MaxFrequency }

// firstQOne returns the first frequency i with q_i = 1 in float64, or 0 when
// q stays below 1 up to 2^62 (q is non-decreasing, so binary search).
func firstQOne(s sanitize.Sampling) int64 {
	hi := int64(1) << 62
	if s.Q(hi) < 1 {
		return 0
	}
	lo := int64(1)
	if s.Q(lo) >= 1 {
		return 1
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if s.Q(mid) >= 1 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// DefaultMaxTableWork is the default bound on one request's table work
// (PWSD_MAX_TABLE_WORK), in window cells (see tableWork). It was set when
// estimator tables cost about 1.5 µs per cell (15 s of one core); today's
// builders take about 10 ns per cell on full tables (0.24 s for a
// 10^6-row discrete table at epsilon 0.5) and 30-110 ns on MLE chunks
// (TestWorstAdmittedReleaseFinishes), so one admitted table request costs
// at most about a second; the per-stretch bound of a release uses it too
// (releaseWork), its total PWSD_MAX_RELEASE_WORK.
const DefaultMaxTableWork = 10_000_000

// DefaultTableFrequency is the largest frequency of a reporting or
// estimator table (and its plots) whose max_frequency is not given.
const DefaultTableFrequency = 100

// tableWork estimates, before any computation, the work of the tables a
// request needs, in window cells. Every sanitizer or estimator row holds a
// window of w = ceil(L(epsilon, delta)) + 1 cells (docs/algorithms.md), so the
// work is w times the rows computed:
//   - rows: the rows asked for (a frequencies range);
//   - w rows: the outcomes of a row span about L tokens, so tables and
//     estimates reach about w rows past the largest frequency (measured:
//     10 estimator rows at L = 13816 cost as much as w^2 cells);
//   - the rows computed to reach frequency top: all of them, or when the
//     scheme reaches q_i = 1 at q1, up to the stationary point, about q1 + 4w
//     (measured: rows are stationary from about 4L with q = 1);
//   - estimators tables of size 4 times that point plus 64, rounded up to a
//     power of two (estimatorSize), or top+1 when smaller.
//
// The estimate depends on public parameters only, never on data.
func tableWork(p sanitize.Privacy, smp sanitize.Sampling, rows, top int64, estimators int) (work, window float64) {
	window = math.Ceil(sanitize.L(p)) + 1
	reach := float64(top)
	if qOne := firstQOne(smp); qOne > 0 {
		reach = math.Min(reach, float64(qOne)+4*window)
	}
	est := math.Max(64, math.Min(float64(top)+1, 4*reach+64))
	est = math.Exp2(math.Ceil(math.Log2(est)))
	return window * (float64(rows) + reach + window + float64(estimators)*est), window
}

// bandCellCost is the cost of one window cell of the frequencies band path
// (a sanitizer row, the lean biased-down pass and the MLE band: no
// estimator table) in the unit of tableWork, a cell of an estimator table
// with its statistics. Measured on the reference machine (eps 0.2, delta
// 1e-7, ppswor tau 2e-5, frequency 10^6, L = 70): the band path takes about
// 25-30 ns per cell, a discrete estimator table with statistics 40-45 ns
// per cell at L = 25 and more at larger L (the 1.5 µs of DefaultMaxTableWork
// is the wide-window worst case), so a band cell counts as 1/16 of a cell.
const bandCellCost = 1.0 / 16

// FrequencyRowsWork is tableWork for a frequencies request (rows from..top,
// rows = top - from + 1): when the rows are not stationary by top (the
// estimator tables would be at least top+1 long) the request computes no
// estimator table but reads the sanitizer rows 1..top plus about two windows
// once, with the lean biased-down pass and the MLE band
// (estimate.RowEstimates), and its work is those cells at bandCellCost;
// otherwise it is tableWork with the two estimator tables (MLE and
// biased-down) the rows are looked up in. Public parameters only.
func FrequencyRowsWork(p sanitize.Privacy, smp sanitize.Sampling, rows, top int64) (work, window float64) {
	window = math.Ceil(sanitize.L(p)) + 1
	reach := float64(top)
	if qOne := firstQOne(smp); qOne > 0 {
		reach = math.Min(reach, float64(qOne)+4*window)
	}
	if est := math.Exp2(math.Ceil(math.Log2(math.Max(64, math.Min(float64(top)+1, 4*reach+64))))); est > float64(top) {
		return bandCellCost * window * (float64(top) + float64(rows) + 2*window), window
	}
	return tableWork(p, smp, rows, top, 2)
}

// FrequencyRowsMLEWork is the work of a frequencies request (rows rows)
// that omits the biased-down contributions: a restart's warm-up
// (sanitize.RestartCost) to reach the band, the rows asked, and the band's
// margin (rowsMargin) and look-ahead (two windows above),
// at bandCellCost per window cell. It does not grow with the frequency.
// Public parameters only.
func FrequencyRowsMLEWork(p sanitize.Privacy, rows int64) (work, window float64) {
	window = math.Ceil(sanitize.L(p)) + 1
	band := float64(rowsMargin(p)) + 2*window
	return bandCellCost * window * (float64(sanitize.RestartCost(p)) + float64(rows) + band), window
}

// workBound is a bound on one request's table work and the setting that
// configures it, named in refusals.
type workBound struct {
	cells   int64
	setting string
}

// workBoundKey is the context key of a request's own work bound.
type workBoundKey struct{}

// WithWorkLimit returns ctx carrying a bound on its request's table work,
// named setting in refusals (the API puts PWSD_MAX_READER_TABLE_WORK on
// requests of reader tokens). It applies beside Config.MaxTableWork: the
// lower bound wins. cells <= 0 adds no bound.
func WithWorkLimit(ctx context.Context, cells int64, setting string) context.Context {
	if cells <= 0 {
		return ctx
	}
	return context.WithValue(ctx, workBoundKey{}, workBound{cells: cells, setting: setting})
}

// workLimit is the bound on the table work of ctx's request: the lower of
// s.maxWork and the request's own (WithWorkLimit); cells <= 0 is none.
func (s *deps) workLimit(ctx context.Context) workBound {
	b := workBound{cells: s.maxWork, setting: "PWSD_MAX_TABLE_WORK"}
	if own, ok := ctx.Value(workBoundKey{}).(workBound); ok && (b.cells <= 0 || own.cells < b.cells) {
		b = own
	}
	return b
}

// checkWork refuses, with a 422 naming the parameter responsible, a request
// whose tableWork exceeds its work limit (workLimit). epsField names epsilon as the client
// wrote it ("epsilon", "privacy.epsilon"); rowsField the rows or frequency
// parameter. When even the smallest request (one row of frequency 1) is too
// much, or rowsField is empty, epsilon is named: L is too large.
func (s *deps) checkWork(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, rows, top int64, estimators int, epsField, rowsField string) error {
	return s.checkWorkOf(ctx, func(rows, top int64) (float64, float64) { return tableWork(p, smp, rows, top, estimators) },
		rows, top, epsField, rowsField)
}

// checkWorkOf is checkWork for the work estimate work(rows, top).
func (s *deps) checkWorkOf(ctx context.Context, work func(rows, top int64) (float64, float64), rows, top int64, epsField, rowsField string) error {
	limit := s.workLimit(ctx)
	if limit.cells <= 0 {
		return nil
	}
	w, window := work(rows, top)
	if w <= float64(limit.cells) {
		return nil
	}
	if base, _ := work(1, 1); base > float64(limit.cells) || rowsField == "" {
		return fieldErr(epsField, "with this delta gives L = %.6g: the tables need about %.3g window cells (rows × (L+1)), above the limit of %d (%s); use a larger epsilon or delta", window-1, w, limit.cells, limit.setting)
	}
	return fieldErr(rowsField, "asks for about %.3g window cells of table work (rows × (L+1), L = %.6g), above the limit of %d (%s); ask for fewer or smaller frequencies", w, window-1, limit.cells, limit.setting)
}

// checkSampleWork bounds a sample release before reading its elements, on
// public parameters only: the rows one stretch of the release reads (a
// restart's warm-up, and for a frequencies release the MLE chunk with its
// band, releaseWork) must fit the request's work limit (workLimit). A
// release's cost then grows with the number of distinct stretches of
// frequencies it holds, never with how large they are, and is bounded by
// PWSD_MAX_ELEMENTS and the request timeout.
func (s *Samples) checkSampleWork(ctx context.Context, spec SampleSpec) error {
	limit := s.workLimit(ctx)
	if limit.cells <= 0 {
		return nil
	}
	w, window := releaseWork(spec.Privacy, spec.Release == ReleaseFrequencies)
	if w <= float64(limit.cells) {
		return nil
	}
	return fieldErr("privacy.epsilon", "with this delta gives L = %.6g: one stretch of a release reads about %.3g window cells (rows × (L+1)), above the limit of %d (%s); use a larger epsilon or delta", window-1, w, limit.cells, limit.setting)
}

// releaseWork is the work, in window cells of tableWork, of one stretch of
// a release under p: the rows of a fresh restart (sanitize.RestartCost)
// and, with estimates, an MLE chunk and the band around it
// (estimate.ChunkSize plus two windows), counted as full estimator cells.
func releaseWork(p sanitize.Privacy, estimates bool) (work, window float64) {
	window = math.Ceil(sanitize.L(p)) + 1
	rows := float64(sanitize.RestartCost(p))
	if estimates {
		rows += float64(estimate.ChunkSize(p)) + 2*window
	}
	return window * rows, window
}

// sampleFrequencyLimit returns the largest frequency an element of a release
// under spec may have (FrequencyLimit).
func (s *Samples) sampleFrequencyLimit(_ context.Context, spec SampleSpec, _ *sanitize.Table) int64 {
	return FrequencyLimit(spec.Privacy)
}

// FrequencyLimit returns the largest frequency, and the largest sanitized
// value, a release under p may hold: sanitize.MaxFrequency less a margin of
// four estimator chunks and eight windows (L + 1). A key's MLE estimate and
// its error bar read the chunk of its MLE frequency, whose rows reach about
// a window past its value, and that chunk's tokens are settled only by rows
// whose supports have moved past it, about two windows further up; all of
// them must exist (rows stop at 2^33). Before this margin a release at 2^33
// was charged and then answered 500 at every estimate GET (issue 31). The
// margin is under 10^6 for every epsilon the work bounds admit, a part in
// 10^4 of the range, and depends on public parameters only.
func FrequencyLimit(p sanitize.Privacy) int64 {
	window := int64(math.Ceil(sanitize.L(p))) + 1
	return sanitize.MaxFrequency - 4*estimate.ChunkSize(p) - 8*window
}

// DefaultMaxReleaseWork is the default bound on one sample release's total
// table work (PWSD_MAX_RELEASE_WORK), in window cells as releaseCost counts
// them. Calibrated in CPU time on this project's 2-core machine kind with
// the worst stretch the per-stretch bound admits
// (TestWorstAdmittedReleaseFinishes: epsilon 0.0095, L = 890, about 270 ns
// of CPU per cell at the reference calibration unit of 1.18 µs), it is
// about 32 CPU-seconds, half of the default PWSD_REQUEST_TIMEOUT (60 s) on
// one core: a release refused for it could not have finished in time, and
// the Zipf matrix's largest release (eps 0.1, tau 1e-4) uses 40% of it
// (TestZipfMatrixWithinReleaseWork).
const DefaultMaxReleaseWork = 120_000_000

// releaseStretches counts the frequencies of a release by chunk
// (estimate.ChunkSize), remembering the first elements of each, so that
// its cost is known before any table is built (releaseCost).
type releaseStretches struct {
	field string // the element field a refusal names: "frequency", or an import's "value"
	size  int64
	elems map[int64][]int // chunk -> indices of its first elements
	full  int64           // a chunk known to hold its 4 elements (-1: none)
}

func newReleaseStretches(p sanitize.Privacy) *releaseStretches {
	return &releaseStretches{field: "frequency", size: estimate.ChunkSize(p), elems: make(map[int64][]int), full: -1}
}

// add records element i of frequency (or an import's sanitized value) f.
func (r *releaseStretches) add(i int, f float64) {
	k := estimate.ChunkOf(f, r.size)
	if k == r.full {
		return // repeated frequencies (Zipf tails): no map lookup
	}
	if e := r.elems[k]; len(e) < 4 {
		r.elems[k] = append(e, i)
	} else {
		r.full = k
	}
}

// releaseCost checks a release's total work: its chunks, grouped into runs
// of consecutive chunks, each cost a restart's warm-up and the run's rows
// (with estimates, the chunks and their band), times the window L + 1. Above
// s.maxReleaseWork it names every element of the runs past the limit
// (taken in ascending frequency, at most 20 named), the limit and the
// setting. It depends on the release's frequencies, never on anything
// released.
func (s *Samples) releaseCost(spec SampleSpec, r *releaseStretches) error {
	if s.maxReleaseWork <= 0 || len(r.elems) == 0 {
		return nil
	}
	window := math.Ceil(sanitize.L(spec.Privacy)) + 1
	var over checks.Errors
	named := 0
	r.runningCost(spec.Privacy, func(k int64, total float64) {
		if total <= float64(s.maxReleaseWork) {
			return
		}
		for _, i := range r.elems[k] {
			if named < 20 {
				over.Add(fmt.Sprintf("elements[%d].%s", i, r.field), fmt.Sprintf("needs rows of its own: the release would need about %.3g window cells of table work (rows × (L+1), L = %.6g), above the limit of %d (PWSD_MAX_RELEASE_WORK); split the release, use a larger epsilon, or raise the setting", total, window-1, s.maxReleaseWork))
			}
			named++
		}
	})
	return over.Err()
}

// runningCost walks the release's chunks in ascending order, calling visit
// with each chunk and the release's work up to and including it (in window
// cells): each run of consecutive chunks costs a restart's warm-up and two
// windows, each chunk its rows, all times the window L + 1. It returns the
// total.
func (r *releaseStretches) runningCost(p sanitize.Privacy, visit func(k int64, total float64)) float64 {
	ks := make([]int64, 0, len(r.elems))
	for k := range r.elems {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	start, chunk := tablecache.RunWork(p, r.size)
	total := 0.0
	for n, k := range ks {
		if n == 0 || ks[n-1] != k-1 {
			total += start
		}
		total += chunk
		visit(k, total)
	}
	return total
}
