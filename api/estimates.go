package api

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/service"
)

// EstimateView is a linear statistic estimated from a sanitized sample.
type EstimateView struct {
	Sample    string  `json:"sample"`
	G         string  `json:"g"`
	Estimator string  `json:"estimator"`
	Selected  int     `json:"selected"`
	Estimate  float64 `json:"estimate"`
	// Note labels the unbiased estimator.
	Note string `json:"note,omitempty"`
}

// RankedView is a reported key in the sanitized order. Value is an ordinal
// token, not a frequency; Estimate is the MLE frequency estimate.
type RankedView struct {
	Rank     int     `json:"rank"`
	Key      string  `json:"key"`
	Value    float64 `json:"value"`
	Estimate float64 `json:"estimate"`
}

// TopView lists the top-k keys.
type TopView struct {
	Sample string       `json:"sample"`
	K      int          `json:"k"`
	Keys   []RankedView `json:"keys"`
}

// RankView is one key's rank among the reported keys.
type RankView struct {
	Sample   string `json:"sample"`
	Reported int    `json:"reported"`
	RankedView
}

// QuantileView is one quantile of the estimated frequency distribution.
type QuantileView struct {
	Q         float64 `json:"q"`
	Frequency float64 `json:"frequency"`
}

// QuantilesView lists quantiles.
type QuantilesView struct {
	Sample    string         `json:"sample"`
	Quantiles []QuantileView `json:"quantiles"`
}

func rankedView(r service.RankedElement) RankedView {
	return RankedView{Rank: r.Rank, Key: r.Key, Value: r.Value, Estimate: r.Estimate}
}

// estimateSample estimates a linear statistic from a stored sample.
//
//	@Summary		Estimate sum_x L(x) g(w_x) from a sanitized sample
//	@Description	Selection L(x) by key (repeatable), key_prefix and key_regex (RE2, length-limited); none selects all keys. Estimators: mle (default), biased_down (never over-estimates in expectation), unbiased (exactly unbiased, but can be negative with huge variance). 422 for a keys-only sample.
//	@Tags			samples
//	@Produce		json
//	@Param			id			path		string		true	"sample id"
//	@Param			g			query		string		false	"identity | count | power:P | cap:T"	default(identity)
//	@Param			estimator	query		string		false	"mle | biased_down | unbiased"	default(mle)
//	@Param			key			query		[]string	false	"select these keys"	collectionFormat(multi)
//	@Param			key_prefix	query		string		false	"select keys with this prefix"
//	@Param			key_regex	query		string		false	"select keys matching this RE2 expression"
//	@Success		200			{object}	EstimateView
//	@Failure		404,422		{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/estimate [get]
func (h *handler) estimateSample(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	g, e := q.g(), q.estimator()
	sel := service.Selection{Keys: q.v["key"], Prefix: q.v.Get("key_prefix")}
	if re := q.v.Get("key_regex"); re != "" {
		if len(re) > h.limits.MaxRegexBytes {
			q.fail("key_regex", fmt.Sprintf("must be at most %d bytes (PWSD_MAX_REGEX_BYTES)", h.limits.MaxRegexBytes))
		} else if c, err := regexp.Compile(re); err != nil {
			q.fail("key_regex", "must be a valid RE2 regular expression")
		} else {
			sel.Regex = c
		}
	}
	if err := q.problem(); err != nil {
		writeError(w, err)
		return
	}
	id := chi.URLParam(r, "id")
	est, err := h.svc.EstimateSample(r.Context(), id, g, e, sel)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	v := EstimateView{Sample: id, G: g.String(), Estimator: string(e), Selected: est.Selected, Estimate: est.Estimate}
	if e == "unbiased" {
		v.Note = "unbiased estimator: exactly unbiased, but per-key estimates can be negative and its variance is very large"
	}
	writeJSON(w, http.StatusOK, v)
}

// top returns the k keys with the largest sanitized values.
//
//	@Summary		Top-k keys in the sanitized order
//	@Description	Ordered by sanitized value (ordinal tokens; ties broken at random per request). Algorithm 5 maximises the probability that any pair is ordered correctly.
//	@Tags			samples
//	@Produce		json
//	@Param			id	path		string	true	"sample id"
//	@Param			k	query		int		false	"how many"	default(10)
//	@Success		200	{object}	TopView
//	@Failure		404,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/top [get]
func (h *handler) top(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	k := q.int("k", 10, 1, int64(h.limits.MaxElements))
	if err := q.problem(); err != nil {
		writeError(w, err)
		return
	}
	id := chi.URLParam(r, "id")
	rs, err := h.svc.Top(r.Context(), id, int(k))
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	v := TopView{Sample: id, K: int(k), Keys: make([]RankedView, len(rs))}
	for i, x := range rs {
		v.Keys[i] = rankedView(x)
	}
	writeJSON(w, http.StatusOK, v)
}

// rank returns one key's rank.
//
//	@Summary	Rank of a reported key in the sanitized order (1 = largest)
//	@Tags		samples
//	@Produce	json
//	@Param		id	path		string	true	"sample id"
//	@Param		key	query		string	true	"the key"
//	@Success	200	{object}	RankView
//	@Failure	404,422	{object}	Problem
//	@Security	bearer
//	@Router		/v1/samples/{id}/rank [get]
func (h *handler) rank(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	key := q.str("key", true)
	if err := q.problem(); err != nil {
		writeError(w, err)
		return
	}
	id := chi.URLParam(r, "id")
	x, n, err := h.svc.Rank(r.Context(), id, key)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, RankView{Sample: id, Reported: n, RankedView: rankedView(x)})
}

// quantiles returns quantiles of the estimated frequency distribution.
//
//	@Summary		Quantiles of the estimated frequency distribution
//	@Description	Reported keys in sanitized order, each weighted by its biased-down estimated count (so unsampled and unreported keys are accounted for); the quantile is the MLE frequency estimate of the key where the cumulative weight reaches q.
//	@Tags			samples
//	@Produce		json
//	@Param			id	path		string		true	"sample id"
//	@Param			q	query		[]number	true	"quantile in [0, 1], repeatable"	collectionFormat(multi)
//	@Success		200	{object}	QuantilesView
//	@Failure		404,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/quantiles [get]
func (h *handler) quantiles(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	qs := q.floats("q", 0, 1, 100)
	if err := q.problem(); err != nil {
		writeError(w, err)
		return
	}
	id := chi.URLParam(r, "id")
	res, err := h.svc.Quantiles(r.Context(), id, qs)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	v := QuantilesView{Sample: id, Quantiles: make([]QuantileView, len(res))}
	for i, x := range res {
		v.Quantiles[i] = QuantileView{Q: x.Q, Frequency: x.Frequency}
	}
	writeJSON(w, http.StatusOK, v)
}
