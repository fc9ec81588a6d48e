package service

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/tablecache"

	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// ReportingTable is Algorithm 3's end-to-end reporting probabilities.
type ReportingTable struct {
	L  float64   `json:"L"`
	Q  []float64 `json:"q"`  // q_1..q_n
	Pi []float64 `json:"pi"` // pi_1..pi_n
}

// Reporting returns pi_1..pi_n and L(eps, delta), cached under their
// canonical parameters.
func (s *Tables) Reporting(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, n int64) (ReportingTable, error) {
	key := s.cache.Key("reporting", p, smp, "", tablecache.Int("n", n))
	return cached(ctx, s.deps, key, func() (ReportingTable, error) {
		t := ReportingTable{L: sanitize.L(p), Pi: sanitize.ReportingProbabilities(p, smp, int(n)), Q: make([]float64, n)}
		for i := range t.Q {
			t.Q[i] = smp.Q(int64(i + 1))
		}
		return t, nil
	})
}

// Outcome is one output token (Lo, Hi] of a row with its probability and the
// per-token estimates a_j of a sum of frequencies (g = identity): the
// contribution of a key released in this token to the estimate of a sum,
// e.g. i*/pi_{i*} for the MLE (i* its MLE frequency). A contribution is
// not a frequency estimate: it carries the inverse reporting probability.
type Outcome struct {
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Probability float64 `json:"probability"`
	// MLEContribution: the MLE contribution a_j = i*/pi_{i*} (eq. 11), i*
	// the MLE frequency of the token.
	MLEContribution float64 `json:"mle_contribution"`
	// BiasedDownContribution: the biased-down contribution a_j (eq. 41),
	// which never over-estimates the sum in expectation; null when the
	// table omits it (FrequencyTable.BiasedDownOmitted).
	BiasedDownContribution *float64 `json:"biased_down_contribution" extensions:"x-nullable"`
}

// FrequencyRow is one row of a frequency sanitizer: the reporting probability
// and the outcomes, split at the global tokens so that each outcome has one
// estimate.
type FrequencyRow struct {
	Frequency int64     `json:"frequency"`
	Reported  float64   `json:"reported"`
	Outcomes  []Outcome `json:"outcomes"`
}

// FrequencyTable is rows of a frequency sanitizer with what their
// contributions are.
type FrequencyTable struct {
	Rows []FrequencyRow `json:"rows"`
	// BiasedDownOmitted says every outcome's biased-down contribution is
	// null: it is a recursion over every token below (eq. 41), so rows this
	// far up would need all the rows below them, more than the request may
	// compute; Note says how much. The MLE contributions come from a band
	// of rows around the frequencies asked and are those of the full table.
	BiasedDownOmitted bool   `json:"biased_down_omitted,omitempty"`
	Note              string `json:"note,omitempty"`
}

// FrequencyRows returns rows from..to of the frequency sanitizer, cached.
// When the biased-down contributions would take more work than the
// request's limit (they read every row below to) but the MLE ones fit
// (FrequencyRowsMLEWork), the rows come with the MLE contributions alone
// and say so; above both, a 422 names the frequency.
func (s *Tables) FrequencyRows(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, from, to int64) (FrequencyTable, error) {
	var answer FrequencyTable
	full := func(rows, top int64) (float64, float64) { return FrequencyRowsWork(p, smp, rows, top) }
	if err := s.checkWorkOf(ctx, full, to-from+1, to, "epsilon", "frequency"); err != nil {
		mle := func(rows, _ int64) (float64, float64) { return FrequencyRowsMLEWork(p, rows) }
		if s.checkWorkOf(ctx, mle, to-from+1, to, "epsilon", "frequency") != nil {
			return answer, err
		}
		work, _ := full(to-from+1, to)
		limit := s.workLimit(ctx)
		answer.BiasedDownOmitted = true
		answer.Note = fmt.Sprintf("biased_down_contribution is omitted (null): the biased-down estimate is a recursion over every token below (eq. 41), so these rows would need about %.3g window cells of work, above the limit of %d (%s); mle_contribution comes from a band of rows around the frequencies asked, as in the full table", work, limit.cells, limit.setting)
	}
	parts := []tablecache.Part{tablecache.Range(from, to)}
	if answer.BiasedDownOmitted {
		parts = append(parts, tablecache.Str("biased_down", "omitted"))
	}
	key := s.cache.Key("rows", p, smp, m, parts...)
	rows, err := cachedCtx(ctx, s.deps, key, func(ctx context.Context) ([]FrequencyRow, error) {
		t, err := s.cache.Sanitizer(p, smp, m)
		if err != nil {
			return nil, err
		}
		if limit := frequencyLimit(t); to > limit {
			return nil, fieldErr("frequency", "must be at most %d for this sampling scheme (q_i < 1 beyond it)", limit)
		}
		return s.frequencyRows(ctx, t, from, to, answer.BiasedDownOmitted)
	})
	answer.Rows = rows
	return answer, err
}

// frequencyRows computes rows from..to and their estimates (estimate.Open
// asked for rows): where the rows are stationary below to, from the small
// cached estimator tables and their tails (estimatorTable), else in one
// pass over a band of rows, building no estimator table. With mleOnly the
// biased-down contributions are left null and the band starts near from.
func (s *Tables) frequencyRows(ctx context.Context, t *sanitize.Table, from, to int64, mleOnly bool) ([]FrequencyRow, error) {
	rows := make([]FrequencyRow, 0, to-from+1)
	margin := rowsMargin(t.Privacy())
	tables := func(spec estimate.Spec) (*estimate.Table, error) { return s.estimatorTable(ctx, t, spec) }
	_, err := estimate.Open(ctx, t, estimate.Ask{Rows: &estimate.RowsAsk{G: identityG, From: from, To: to, Margin: margin, Tables: tables, MLEOnly: mleOnly, Fn: func(r sanitize.Row, out []estimate.RowOutcome) error {
		fr := FrequencyRow{Frequency: r.Frequency, Reported: r.Pi, Outcomes: make([]Outcome, len(out))}
		bd := make([]float64, len(out)) // one allocation for the row's contributions
		for k, o := range out {
			fr.Outcomes[k] = Outcome{Lo: o.Lo, Hi: o.Hi, Probability: o.P, MLEContribution: o.MLE}
			if !mleOnly {
				bd[k] = o.BiasedDown
				fr.Outcomes[k].BiasedDownContribution = &bd[k]
			}
		}
		rows = append(rows, fr)
		return nil
	}}})
	if err != nil {
		return nil, estimateErr(err)
	}
	return rows, nil
}

// rowsMargin is the band of rows below the first row asked that a rows
// ask reads for its MLE estimates (estimate.RowsAsk.Margin): a few
// windows, 4L + 64, which covers the support of the first row.
func rowsMargin(p sanitize.Privacy) int64 { return 4*int64(math.Ceil(sanitize.L(p))) + 64 }

// identityG is g(w) = w.
var identityG = estimate.G{Kind: estimate.GIdentity}

// EstimatorRow is the Section 7 planning view for one frequency.
type EstimatorRow struct {
	Frequency         int64   `json:"frequency"`
	Reported          float64 `json:"reported"`
	Expected          float64 `json:"expected"`
	Bias              float64 `json:"bias"`
	Variance          float64 `json:"variance"`
	MSE               float64 `json:"mse"`
	ReferenceVariance float64 `json:"reference_variance"`
}

// EstimatorRows returns expected value, bias, variance and MSE of the per-key
// estimate for frequencies 1..n, with the non-private reference variance.
func (s *Tables) EstimatorRows(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, g estimate.G, e estimate.Estimator, n int64) ([]EstimatorRow, error) {
	if err := s.checkWork(ctx, p, smp, 0, n, 1, "epsilon", "max_frequency"); err != nil {
		return nil, err
	}
	key := s.cache.Key("estimator-rows", p, smp, m, tablecache.Str("g", g.String()), tablecache.Str("est", string(e)), tablecache.Int("n", n))
	return cachedCtx(ctx, s.deps, key, func(ctx context.Context) ([]EstimatorRow, error) {
		et, err := s.estimatorTableFor(ctx, p, smp, m, estimate.Spec{MaxFrequency: n, G: g, Estimator: e})
		if err != nil {
			return nil, err
		}
		ref, err := estimate.NewNonPrivateBaseline(g, smp)
		if err != nil {
			return nil, err
		}
		rows := make([]EstimatorRow, n)
		for i := int64(1); i <= n; i++ {
			st := et.Frequencies[i-1]
			rows[i-1] = EstimatorRow{Frequency: i, Reported: st.Reported, Expected: st.Expected, Bias: st.Bias,
				Variance: st.Variance, MSE: st.MSE, ReferenceVariance: ref.Variance(i)}
		}
		return rows, nil
	})
}

// estimatorTableFor is estimatorTable for the sanitizer (p, smp, m).
func (s *deps) estimatorTableFor(ctx context.Context, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, spec estimate.Spec) (*estimate.Table, error) {
	t, err := s.cache.Sanitizer(p, smp, m)
	if err != nil {
		return nil, err
	}
	return s.estimatorTable(ctx, t, spec)
}

// estimatorSize picks the table size for estimating values up to maxValue:
// a power of two (so tables are shared between samples), and when the rows
// are stationary no further than a little past the stationary point, since
// the table's tail extends estimates beyond it.
func estimatorSize(t *sanitize.Table, maxValue float64) int64 {
	n, _ := estimatorSizeContext(context.Background(), t, maxValue)
	return n
}

// estimatorSizeContext is estimatorSize that stops with ctx's error when
// ctx is cancelled while it looks for the stationary point
// (estimate.TableSize, shared with the Beam pipeline).
func estimatorSizeContext(ctx context.Context, t *sanitize.Table, maxValue float64) (int64, error) {
	return estimate.TableSize(ctx, t, maxValue)
}

// gErr names g when err is a non-finite estimate and g itself overflows
// below frequency n (e.g. power:400); otherwise it returns err.
func gErr(err error, g estimate.G, n int64) error {
	if !errors.Is(err, estimate.ErrNotFinite) {
		return err
	}
	if v := g.Eval(float64(n)); math.IsInf(v, 0) || math.IsNaN(v) || math.IsInf(v*float64(n), 0) {
		return fieldErr("g", "is out of range: g(w) overflows float64 for frequencies up to %d; use a smaller exponent or a cap", n)
	}
	return err
}

// estimateErr maps the estimators' parameter-dependent limits to 422s.
func estimateErr(err error) error {
	var ue *estimate.UnstableError
	switch {
	case errors.As(err, &ue):
		return fieldErr("estimator", "unbiased estimates cannot be computed beyond frequency %d for these parameters (they alternate in sign and grow exponentially); use biased_down or mle", ue.Frequency)
	case errors.Is(err, estimate.ErrOutOfRange):
		return fieldErr("estimator", "this estimator cannot be extended to values this large for these parameters; use mle")
	case errors.Is(err, estimate.ErrNotFinite):
		return fmt.Errorf("%w: %w", &checks.FieldError{Field: "estimator", Reason: "gives estimates that are not finite for these parameters (the unbiased system is ill-conditioned); use biased_down or mle"}, err)
	}
	return fmt.Errorf("estimating: %w", err)
}
