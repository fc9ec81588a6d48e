package api

import (
	"net/http"

	"github.com/pwsd/pwsd/internal/service"
)

// ReportingView is Algorithm 3's reporting probabilities.
type ReportingView struct {
	L  float64   `json:"L" example:"17.8"`
	Q  []float64 `json:"q"`
	Pi []float64 `json:"pi"`
	// BaselinePi is sampled-SbH's reporting probability (baseline=sbh).
	BaselinePi []float64 `json:"baseline_pi,omitempty"`
}

// FrequenciesView holds rows of a frequency sanitizer.
type FrequenciesView struct {
	Rows []service.FrequencyRow `json:"rows"`
	// BiasedDownOmitted: every biased_down_contribution is null, because
	// the biased-down estimate is a recursion over every token below and
	// these rows would need more work than the limit; note says how much.
	// The mle_contribution values are those of the full table.
	BiasedDownOmitted bool `json:"biased_down_omitted,omitempty"`
	// Note explains an omission, in words.
	Note string `json:"note,omitempty"`
}

// EstimatorsView is the Section 7 planning table.
type EstimatorsView struct {
	Rows []EstimatorRowView `json:"rows"`
}

// EstimatorRowView is one frequency's planning numbers, with sampled-SbH's
// bias and variance when baseline=sbh.
type EstimatorRowView struct {
	service.EstimatorRow
	BaselineBias     *float64 `json:"baseline_bias,omitempty"`
	BaselineVariance *float64 `json:"baseline_variance,omitempty"`
}

// reporting returns pi_i and q_i for i = 1..max_frequency.
//
//	@Summary		Reporting probabilities pi_i (Algorithm 3) and L(epsilon, delta)
//	@ID			getReportingTable
//	@Description	Index 0 is frequency 1. Cached: identical parameters never recompute.
//	@Tags			tables
//	@Produce		json
//	@Param			epsilon			query		number	true	"epsilon > 0"
//	@Param			delta			query		number	true	"0 < delta <= 1"
//	@Param			scheme			query		string	false	"ppswor | priority | none | custom"	default(none)
//	@Param			threshold		query		number	false	"tau (ppswor, priority)"
//	@Param			power			query		number	false	"p (ppswor, priority)"	default(1)
//	@Param			probabilities	query		string	false	"custom: q_1,...,q_n"
//	@Param			max_frequency	query		int		false	"n"	default(100)
//	@Param			baseline		query		string	false	"sbh: add sampled-SbH's baseline_pi"
//	@Success		200				{object}	ReportingView
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/tables/reporting [get]
func (h *handler) reporting(w http.ResponseWriter, r *http.Request) error {
	rq, err := h.reportingQuery(r)
	if err != nil {
		return err
	}
	t, err := h.svc.Tables.Reporting(r.Context(), rq.privacy, rq.sampling, rq.maxFrequency)
	if err != nil {
		return err
	}
	v := ReportingView{L: t.L, Q: t.Q, Pi: t.Pi}
	if rq.baseline {
		if v.BaselinePi, err = h.svc.Tables.ReportingBaseline(r.Context(), rq.privacy, rq.sampling, rq.maxFrequency); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// frequencies returns rows of the frequency sanitizer.
//
//	@Summary		Rows of the frequency sanitizer (Algorithm 4 discrete or Algorithm 5 max_separation)
//	@ID			getFrequencyTable
//	@Description	Outcomes are pieces (lo, hi] with their probability under the row, split at the global tokens so each carries its per-token contributions to the estimate of a sum of frequencies (g = identity): mle_contribution = i*/pi_{i*} (i* the token's MLE frequency) and biased_down_contribution. A contribution is a key's term in a sum, with the inverse reporting probability in it: not a frequency estimate (the MLE frequency of a sample element is its frequency field). Tokens are ORDINAL, not frequencies. Algorithm 4 token j is (j-1, j]. Far up (where the biased-down recursion over every token below would pass the work limit) the rows come with mle_contribution only: biased_down_contribution is null, biased_down_omitted is true and note says why.
//	@Tags			tables
//	@Produce		json
//	@Param			epsilon			query		number	true	"epsilon > 0"
//	@Param			delta			query		number	true	"0 < delta <= 1"
//	@Param			scheme			query		string	false	"ppswor | priority | none | custom"	default(none)
//	@Param			threshold		query		number	false	"tau"
//	@Param			power			query		number	false	"p"	default(1)
//	@Param			probabilities	query		string	false	"custom: q_1,...,q_n"
//	@Param			method			query		string	false	"discrete | max_separation"	default(max_separation)
//	@Param			frequency		query		string	true	"F or A-B"
//	@Success		200				{object}	FrequenciesView
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/tables/frequencies [get]
func (h *handler) frequencies(w http.ResponseWriter, r *http.Request) error {
	rq, err := h.rowsQuery(r)
	if err != nil {
		return err
	}
	t, err := h.svc.Tables.FrequencyRows(r.Context(), rq.privacy, rq.sampling, rq.method, rq.lo, rq.hi)
	return answerJSON(w, FrequenciesView{Rows: t.Rows, BiasedDownOmitted: t.BiasedDownOmitted, Note: t.Note}, err)
}

// estimators returns the per-frequency planning table.
//
//	@Summary		Expected value, bias, variance and MSE of the per-key estimate per frequency (Section 7)
//	@ID			getEstimatorTable
//	@Description	estimator unbiased is labelled as such: exactly unbiased but it can be negative and its variance is huge.
//	@Tags			tables
//	@Produce		json
//	@Param			epsilon			query		number	true	"epsilon > 0"
//	@Param			delta			query		number	true	"0 < delta <= 1"
//	@Param			scheme			query		string	false	"ppswor | priority | none | custom"	default(none)
//	@Param			threshold		query		number	false	"tau"
//	@Param			power			query		number	false	"p"	default(1)
//	@Param			probabilities	query		string	false	"custom: q_1,...,q_n"
//	@Param			method			query		string	false	"discrete | max_separation"	default(max_separation)
//	@Param			g				query		string	false	"identity | count | power:P | cap:T"	default(identity)
//	@Param			estimator		query		string	false	"mle | biased_down | unbiased"	default(mle)
//	@Param			max_frequency	query		int		false	"n"	default(100)
//	@Param			baseline		query		string	false	"sbh: add sampled-SbH's baseline_bias and baseline_variance"
//	@Success		200				{object}	EstimatorsView
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/tables/estimators [get]
func (h *handler) estimators(w http.ResponseWriter, r *http.Request) error {
	eq, err := h.estimatorQuery(r, false)
	if err != nil {
		return err
	}
	rows, err := h.svc.Tables.EstimatorRows(r.Context(), eq.privacy, eq.sampling, eq.method, eq.g, eq.estimator, eq.maxFrequency)
	if err != nil {
		return err
	}
	v := EstimatorsView{Rows: make([]EstimatorRowView, len(rows))}
	for i, row := range rows {
		v.Rows[i].EstimatorRow = row
	}
	if eq.baseline {
		base, err := h.svc.Tables.EstimatorBaseline(r.Context(), eq.privacy, eq.sampling, eq.g, eq.maxFrequency)
		if err != nil {
			return err
		}
		for i := range v.Rows {
			bias, variance := base[i].Bias, base[i].Variance
			v.Rows[i].BaselineBias, v.Rows[i].BaselineVariance = &bias, &variance
		}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// AuditView is the exact privacy audit of a range of rows of a frequency
// sanitizer: per direction the worst hockey-stick divergence between
// neighbouring frequencies, its excess over delta and where it occurs.
type AuditView struct {
	// Epsilon and Delta are the guarantee audited.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Method is the sanitizer audited.
	Method string `json:"method" enums:"max_separation,discrete"`
	service.Audit
	// Tolerance is the relative allowance over delta under which the audit
	// holds (double-double rounding).
	Tolerance float64 `json:"tolerance"`
}

// audit runs the exact (epsilon, delta) audit on a range of rows.
//
//	@Summary		Exact privacy audit of the frequency sanitizer's rows (a privacy certificate)
//	@ID			getPrivacyAudit
//	@Description	For every pair of neighbouring frequencies (i-1, i) with i in the range (frequency 0 is never reported), computes exactly max over output sets S of P_i(S) - e^epsilon P_{i-1}(S) (up) and of P_{i-1}(S) - e^epsilon P_i(S) (down), over "not reported" and the common refinement of both rows' pieces, in double-double arithmetic. Answers per direction the worst loss, its excess over delta (<= 0 when the release is (epsilon, delta)-DP) and the row where it occurs. The same audit the test suite runs.
//	@Tags			tables
//	@Produce		json
//	@Param			epsilon			query		number	true	"epsilon > 0"
//	@Param			delta			query		number	true	"0 < delta <= 1"
//	@Param			scheme			query		string	false	"ppswor | priority | none | custom"	default(none)
//	@Param			threshold		query		number	false	"tau"
//	@Param			power			query		number	false	"p"	default(1)
//	@Param			probabilities	query		string	false	"custom: q_1,...,q_n"
//	@Param			method			query		string	false	"discrete | max_separation"	default(max_separation)
//	@Param			frequency		query		string	true	"F or A-B: audit the pairs (i-1, i) for i in A..B"
//	@Success		200				{object}	AuditView
//	@Failure		422				{object}	Problem
//	@Security		bearer
//	@Router			/v1/tables/audit [get]
func (h *handler) audit(w http.ResponseWriter, r *http.Request) error {
	rq, err := h.rowsQuery(r)
	if err != nil {
		return err
	}
	a, err := h.svc.Tables.AuditRows(r.Context(), rq.privacy, rq.sampling, rq.method, rq.lo, rq.hi)
	return answerJSON(w, AuditView{Epsilon: rq.privacy.Epsilon, Delta: rq.privacy.Delta, Method: string(rq.method), Audit: a, Tolerance: service.AuditTolerance}, err)
}
