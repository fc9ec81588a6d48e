package api

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/service"
)

// IntervalView is a two-sided confidence interval.
type IntervalView struct {
	Level float64 `json:"level" example:"0.95"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// ReliabilityView says how much of an answer rests on keys the release
// mostly hides, and on how many keys its uncertainty rests.
type ReliabilityView struct {
	// Reliable is false, with a note, when no key was selected; when the
	// uncertainty rests on fewer than 2 effective keys; when one key the
	// sampling could have missed (unseen_weight) would move the answer by
	// more than 2 standard errors; when more than a fifth of the answer, or
	// more than one standard error of it, comes from keys near or below
	// SupportedFrom.
	Reliable bool `json:"reliable"`
	// SupportedFrom is the frequency below which sampled keys are mostly
	// withheld by the privacy mechanism (pi_i/q_i < 1/2; sampling is in the
	// inverse weights and the standard error); 0 when no frequency reaches
	// 1/2.
	SupportedFrom int64 `json:"supported_from"`
	// NearOrBelowShare is the estimated share of the answer carried by
	// reported keys whose MLE frequency is below 2*supported_from.
	NearOrBelowShare float64 `json:"near_or_below_share"`
	// EffectiveKeys is the effective number of keys the answer's
	// uncertainty rests on: (sum v_j)^2 / sum v_j^2 over the selected
	// reported keys' variance terms v_j; k for k keys of equal variance, 1
	// when one key carries it, 0 with no key.
	EffectiveKeys float64 `json:"effective_keys"`
	// Note explains an unreliable answer.
	Note string `json:"note,omitempty"`
}

// SumView is a sum estimated from a sanitized sample with its error bars:
// the fields an estimate and each of its groups share.
type SumView struct {
	Selected      int          `json:"selected"`
	Estimate      float64      `json:"estimate"`
	StandardError float64      `json:"standard_error"`
	Interval      IntervalView `json:"interval"`
	// UnseenWeight is the weight one key the client's sampling missed
	// could carry (g(i)(1-q_i)/q_i at its largest above supported_from,
	// doubled where the privacy mechanism may also withhold it; 0 without
	// sampling): the interval's upper end allows for one such key.
	UnseenWeight float64         `json:"unseen_weight"`
	Reliability  ReliabilityView `json:"reliability"`
}

// GroupView is the estimate of one group of a group-by.
type GroupView struct {
	Group string `json:"group"`
	SumView
}

// EstimateView is a linear statistic estimated from a sanitized sample, with
// its standard error (plug-in Horvitz-Thompson over the exact per-frequency
// variances: sampling and sanitizer noise), a gamma interval (Fay-Feuer)
// whose upper end allows for one key of weight unseen_weight that the
// sampling missed, and a reliability statement; with group_by, the same for
// every group.
type EstimateView struct {
	Sample    string `json:"sample"`
	G         string `json:"g"`
	Estimator string `json:"estimator"`
	SumView
	// GroupBy echoes the grouping ("prefix"), absent without one.
	GroupBy   string      `json:"group_by,omitempty"`
	Delimiter string      `json:"delimiter,omitempty"`
	Length    int         `json:"length,omitempty"`
	Groups    []GroupView `json:"groups,omitempty"`
	// Note labels the unbiased estimator.
	Note string `json:"note,omitempty"`
}

// RankedView is a reported key in the order of estimated frequency. Value is
// an ordinal token, not a frequency; Frequency is the MLE estimate of the
// key's own frequency; Contribution its term in the MLE sum estimate.
type RankedView struct {
	Rank         int     `json:"rank"`
	Key          string  `json:"key"`
	Value        float64 `json:"value"`
	Frequency    float64 `json:"frequency"`
	Contribution float64 `json:"contribution"`
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
	// Supported is false when frequency is below supported_from: keys there
	// are mostly withheld by the privacy mechanism and the answer
	// extrapolates.
	Supported bool `json:"supported"`
}

// QuantilesView lists quantiles of the frequency distribution of all keys
// (population "all", reported keys weighted by 1/pi of their MLE frequency)
// or of the reported keys (population "reported").
type QuantilesView struct {
	Sample     string `json:"sample"`
	Population string `json:"population" enums:"all,reported"`
	// SupportedFrom: below this frequency sampled keys are mostly withheld
	// by the privacy mechanism (pi_i/q_i < 1/2); quantiles below it rest on few reports with large weights.
	SupportedFrom int64 `json:"supported_from"`
	// Reliable is false (population all) when more than a fifth of the
	// estimated keys sit at frequencies below 2*supported_from: the number of
	// keys, and so every quantile's rank, is then uncertain; Note says why.
	Reliable         bool           `json:"reliable"`
	NearOrBelowShare float64        `json:"near_or_below_share"`
	Note             string         `json:"note,omitempty"`
	Quantiles        []QuantileView `json:"quantiles"`
}

func rankedView(r service.RankedElement) RankedView {
	return RankedView{Rank: r.Rank, Key: r.Key, Value: r.Value, Frequency: r.Frequency, Contribution: r.Contribution}
}

func intervalView(i estimate.Interval) IntervalView {
	return IntervalView{Level: i.Level, Lower: i.Lower, Upper: i.Upper}
}

func reliabilityView(r estimate.Reliability) ReliabilityView {
	return ReliabilityView{Reliable: r.Reliable, SupportedFrom: r.SupportedFrom, NearOrBelowShare: r.NearOrBelowShare, EffectiveKeys: r.EffectiveKeys, Note: r.Note}
}

func sumView(se estimate.SumError) SumView {
	return SumView{Selected: se.Selected, Estimate: se.Estimate, StandardError: se.StandardError,
		Interval: intervalView(se.Interval), UnseenWeight: se.UnseenWeight, Reliability: reliabilityView(se.Reliability)}
}

// maxGroupLength bounds length= of a prefix group-by.
const maxGroupLength = 1 << 16

// estimateSample estimates a linear statistic from a stored sample.
//
//	@Summary		Estimate sum_x L(x) g(w_x) from a sanitized sample, with error bars
//	@ID			getSampleEstimate
//	@Description	Selection L(x) by key (repeatable), key_prefix and key_regex (RE2, length-limited); none selects all keys. Estimators: mle (default), biased_down (never over-estimates in expectation), unbiased (exactly unbiased, but can be negative with huge variance). 422 for a keys-only sample.
//	@Description	standard_error: square root of the plug-in Horvitz-Thompson variance sum over selected reported keys of V(i)/pi_i at the key's MLE frequency i, V(i) the exact per-frequency variance of the estimator (sampling and sanitizer noise). interval at level (default 0.95): the Fay-Feuer gamma interval for weighted Poisson sums (lower: the gamma with the estimate's mean and variance; upper: the same with one more key of weight unseen_weight, what one key the client's sampling missed could weigh), which keeps its level when a few heavily weighted keys carry the answer; over many keys it is the normal interval estimate -/+ z*standard_error. reliability: reliable=false with a note when no key is selected, when effective_keys ((sum v_j)^2/sum v_j^2 over the keys' variance terms) is below 2, when unseen_weight exceeds 2 standard errors (counts under heavy sampling), or when keys with MLE frequency below 2*supported_from (pi_i/q_i >= 1/2 from supported_from on) carry more than 1/5 of the answer or more than one standard error. The interval covers sampling and sanitizer noise, not the bias from keys well below supported_from, which are almost never reported.
//	@Description	group_by=prefix with delimiter=D (the part of the key before the first D; the whole key without D) or length=N (its first N characters) answers every group that has a selected reported key.
//	@Tags			samples
//	@Produce		json
//	@Param			id			path		string		true	"sample id"
//	@Param			g			query		string		false	"identity | count | power:P | cap:T"	default(identity)
//	@Param			estimator	query		string		false	"mle | biased_down | unbiased"	default(mle)
//	@Param			key			query		[]string	false	"select these keys"	collectionFormat(multi)
//	@Param			key_prefix	query		string		false	"select keys with this prefix"
//	@Param			key_regex	query		string		false	"select keys matching this RE2 expression"
//	@Param			level		query		number		false	"confidence level of the interval, in (0, 1)"	default(0.95)
//	@Param			group_by	query		string		false	"prefix: answer every group"	Enums(prefix)
//	@Param			delimiter	query		string		false	"with group_by=prefix: group by the part of the key before the first delimiter"
//	@Param			length		query		int			false	"with group_by=prefix: group by the first length characters"
//	@Success		200			{object}	EstimateView
//	@Failure		404,422		{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/estimate [get]
func (h *handler) estimateSample(w http.ResponseWriter, r *http.Request) error {
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
	level := q.level()
	var by service.GroupBy
	length := q.int("length", 0, 1, maxGroupLength)
	delim := q.v.Get("delimiter")
	switch gb := q.v.Get("group_by"); {
	case gb == "" && (delim != "" || q.has("length")):
		q.fail("group_by", "is required (prefix) when delimiter or length is given")
	case gb == "":
	case gb != "prefix":
		q.fail("group_by", "must be prefix")
	case delim != "" && q.has("length"):
		q.fail("delimiter", "give either delimiter or length, not both")
	case delim == "" && !q.has("length"):
		q.fail("delimiter", "group_by=prefix needs delimiter=D or length=N")
	case len(delim) > h.limits.MaxKeyBytes:
		q.fail("delimiter", fmt.Sprintf("must be at most %d bytes (PWSD_MAX_KEY_BYTES)", h.limits.MaxKeyBytes))
	default:
		by = service.GroupBy{Delimiter: delim, Length: int(length)}
	}
	if err := q.problem(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	est, err := h.svc.Estimates.Sample(r.Context(), id, g, e, sel, level, by)
	if err != nil {
		return err
	}
	v := EstimateView{Sample: id, G: g.String(), Estimator: string(e), SumView: sumView(est.SumError)}
	if by != (service.GroupBy{}) {
		v.GroupBy, v.Delimiter, v.Length = "prefix", by.Delimiter, by.Length
		v.Groups = make([]GroupView, len(est.Groups))
		for i, gr := range est.Groups {
			v.Groups[i] = GroupView{Group: gr.Group, SumView: sumView(gr.SumError)}
		}
	}
	if e == "unbiased" {
		v.Note = "unbiased estimator: exactly unbiased, but per-key estimates can be negative and its variance is very large"
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// top returns the k keys with the largest estimated frequencies.
//
//	@Summary		Top-k keys by estimated frequency
//	@ID			getSampleTop
//	@Description	Ordered by MLE frequency, ties by sanitized value (the sanitized order; remaining ties at random per request). Algorithm 5 maximises the probability that any pair is ordered correctly. Each key shows its frequency (MLE) and contribution (its term in the MLE sum estimate).
//	@Tags			samples
//	@Produce		json
//	@Param			id	path		string	true	"sample id"
//	@Param			k	query		int		false	"how many"	default(10)
//	@Success		200	{object}	TopView
//	@Failure		404,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/top [get]
func (h *handler) top(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	k := q.int("k", 10, 1, int64(h.limits.MaxElements))
	if err := q.problem(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	rs, err := h.svc.Estimates.Top(r.Context(), id, int(k))
	if err != nil {
		return err
	}
	v := TopView{Sample: id, K: int(k), Keys: make([]RankedView, len(rs))}
	for i, x := range rs {
		v.Keys[i] = rankedView(x)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// rank returns one key's rank.
//
//	@Summary	Rank of a reported key by estimated frequency (1 = largest)
//	@ID			getSampleRank
//	@Description	The rank of key among the sample's reported keys ordered by estimated frequency (1 = largest), with its estimate and contribution; a 404 when the key is not reported.
//	@Tags		samples
//	@Produce	json
//	@Param		id	path		string	true	"sample id"
//	@Param		key	query		string	true	"the key"
//	@Success	200	{object}	RankView
//	@Failure	404,422	{object}	Problem
//	@Security	bearer
//	@Router		/v1/samples/{id}/rank [get]
func (h *handler) rank(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	key := q.str("key", true)
	if err := q.problem(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	x, n, err := h.svc.Estimates.Rank(r.Context(), id, key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RankView{Sample: id, Reported: n, RankedView: rankedView(x)})
	return nil
}

// quantiles returns quantiles of the estimated frequency distribution.
//
//	@Summary		Quantiles of the estimated frequency distribution
//	@ID			getSampleQuantiles
//	@Description	population=all (default): the frequency distribution of all keys, reported or not: each reported key carries its MLE frequency and weight 1/pi_i (its inverse inclusion probability at that frequency). population=reported: the reported keys, weight 1. The answer is the lower inverse-CDF quantile. supported_from is the frequency below which the privacy mechanism withholds most sampled keys (pi_i/q_i < 1/2); quantiles below it are marked supported=false: they extrapolate from few reports.
//	@Tags			samples
//	@Produce		json
//	@Param			id			path		string		true	"sample id"
//	@Param			q			query		[]number	true	"quantile in [0, 1], repeatable"	collectionFormat(multi)
//	@Param			population	query		string		false	"all | reported"	default(all)	Enums(all, reported)
//	@Success		200	{object}	QuantilesView
//	@Failure		404,422	{object}	Problem
//	@Security		bearer
//	@Router			/v1/samples/{id}/quantiles [get]
func (h *handler) quantiles(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	qs := q.floats("q", 0, 1, 100)
	if err := q.problem(); err != nil {
		return err
	}
	pop := service.Population(q.v.Get("population"))
	if pop != "" && pop != service.PopulationAll && pop != service.PopulationReported {
		q.fail("population", "must be all or reported")
	}
	if err := q.problem(); err != nil {
		return err
	}
	id := chi.URLParam(r, "id")
	res, err := h.svc.Estimates.Quantiles(r.Context(), id, qs, pop)
	if err != nil {
		return err
	}
	v := QuantilesView{Sample: id, Population: string(res.Population), SupportedFrom: res.SupportedFrom, Reliable: res.Reliable,
		NearOrBelowShare: res.NearOrBelowShare, Note: res.Note, Quantiles: make([]QuantileView, len(res.Quantiles))}
	for i, x := range res.Quantiles {
		v.Quantiles[i] = QuantileView{Q: x.Q, Frequency: x.Frequency, Supported: x.Supported}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
