package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pwsd/pwsd/internal/panprivate"
)

// describe returns the description of property prop of schema (short name),
// from kindDocs then propertyDocs: "Schema.prop" first, then "prop". Swag's
// descriptions (from Go doc comments on the fields) take precedence over
// all.
func describe(schema, prop string) string {
	if d, ok := kindDocs[schema+"."+prop]; ok {
		return d
	}
	if d, ok := propertyDocs[schema+"."+prop]; ok {
		return d
	}
	return propertyDocs[prop]
}

// propertyDocs describes the properties whose Go fields carry no doc comment.
var propertyDocs = map[string]string{
	"ChargeRequest.description":         "What was released outside pwsd (e.g. the Beam pipeline run); kept in the dataset's ledger. Never put data in it.",
	"ChargeView.description":            "The charge's description as given.",
	"StepsView.monotone":                "With postprocess monotone: each step's count clamped to [0, t] and made non-decreasing (isotonic regression given what was published; free post-processing), beside the raw outputs.",
	"IntervalView.level":                "Confidence level of the interval (default 0.95, the level query parameter).",
	"IntervalView.lower":                "Lower end: for a sample's sums the Fay-Feuer gamma interval's (the gamma with the estimate's mean and variance, at least 0); for streams and counters the normal interval's, estimate - z*standard_error clipped to the estimand's range.",
	"IntervalView.upper":                "Upper end: for a sample's sums the Fay-Feuer gamma interval's (the gamma with one more key of weight unseen_weight); for streams and counters the normal interval's, estimate + z*standard_error clipped to the estimand's range (range.max).",
	"QuantilesView.near_or_below_share": "Share of the estimated keys (population all) whose MLE frequency is below 2*supported_from.",
	"QuantilesView.note":                "Why the answer is unreliable, when it is.",
	"QuantilesView.population":          "all: the frequency distribution of all keys (reported keys weighted by 1/pi of their MLE frequency); reported: the reported keys only.",
	"StreamPrivacy.max_total_epsilon":   "With max_releases: the most epsilon this stream can spend, max_releases * release_epsilon.",
	"EstimateView.delimiter":            "With group_by=prefix: the delimiter that ends a group's prefix.",
	"EstimateView.groups":               "With group_by: one estimate per group of reported keys (groups add up to the whole).",
	"EstimateView.interval":             "Confidence interval of the estimate: Fay-Feuer's gamma interval for weighted Poisson sums, which keeps its level when a few heavily weighted keys carry the answer (covers sampling and sanitizer noise, not the bias of keys below supported_from).",
	"EstimateView.standard_error":       "Standard error of the estimate: plug-in over the exact per-frequency variances (sampling and sanitizer noise).",
	"EstimateView.length":               "With group_by=prefix: the number of leading characters that make a group.",
	"EstimateView.reliability":          "How much of the answer rests on keys the release mostly hides.",
	"CounterView.monotone_count":        "With postprocess monotone: the latest post-processed count, beside count (the raw one).",
	"RankView.contribution":             "This key's term in the estimate of a sum of frequencies (with sampling it includes 1/q: not a frequency).",
	"RankedView.contribution":           "This key's term in the estimate of a sum of frequencies (with sampling it includes 1/q: not a frequency).",
	"SanitizedElement.contribution":     "This key's term in the estimate of a sum of frequencies under the sample's estimator (with sampling it includes 1/q: not a frequency).",
	"GroupView.group":                   "The group: the part of the key before the delimiter, or its first length characters.",
	"GroupView.interval":                "Confidence interval of the group's estimate (the gamma interval, as the overall one).",
	"GroupView.reliability":             "How much of the group's estimate rests on keys the release mostly hides.",
	"GroupView.standard_error":          "Standard error of the group's estimate.",
	"L":                                 "L(epsilon, delta): the frequency scale below which keys are rarely reported.",
	"accuracy":                          "Pick the sample size m* that meets this (alpha, beta) accuracy target instead of giving sample_size.",
	"CounterRequest.algorithm":          "The counter: simple, randomized_response, cascading or tree; omitted: the lowest-error one for the horizon.",
	"CounterView.algorithm":             "The counter algorithm in use.",
	"alpha":                             "Additive error bound alpha (0 < alpha < 1).",
	"beta":                              "Failure probability beta (0 < beta < 1).",
	"baseline_bias":                     "sampled-SbH's bias at this frequency (baseline=sbh).",
	"baseline_variance":                 "sampled-SbH's variance at this frequency (baseline=sbh).",
	"bias":                              "Expected estimate minus the true value g(frequency).",
	"bits":                              "Input bits, each 0 or 1, one per step.",
	"config":                            "The stream's configuration as pwsd resolved it (estimator parameters, or the continual density configuration).",
	"StreamRequest.continual":           "Run the continual-observation density estimator (latest output in GET).",
	"StreamView.continual":              "Whether this is a continual-observation stream.",
	"count":                             "The counter's latest noisy output.",
	"counter":                           "Continual mode: the counter algorithm feeding the outputs.",
	"created_at":                        "When the resource was created (UTC, RFC 3339).",
	"d":                                 "cascading: the number of buffers.",
	"dataset":                           "The dataset whose privacy budget the release is charged to; omitted: none.",
	"delta":                             "delta of the (epsilon, delta) guarantee, 0 < delta <= 1.",
	"Spend.delta":                       "delta spent or remaining.",
	"ReleaseView.delta":                 "delta charged for this release.",
	"delta_budget":                      "The dataset's total delta budget.",
	"detail":                            "What went wrong in this occurrence; never contains request data.",
	"SampleRequest.elements":            "The raw elements: each key once with its integer frequency >= 1.",
	"SampleView.elements":               "The reported keys, in random order.",
	"epsilon":                           "epsilon of the guarantee, > 0.",
	"CounterView.epsilon":               "The counter's epsilon (event-level DP).",
	"CounterRequest.epsilon":            "The counter's epsilon (event-level DP), > 0.",
	"StreamRequest.epsilon":             "The stream's epsilon, > 0.",
	"Spend.epsilon":                     "epsilon spent or remaining.",
	"ReleaseView.epsilon":               "epsilon charged for this release.",
	"epsilon_budget":                    "The dataset's total epsilon budget.",
	"epsilon_spent":                     "epsilon charged for this release.",
	"errors":                            "Each invalid field or parameter, by its path as the client wrote it.",
	"estimate":                          "The MLE estimate of this key's frequency.",
	"EstimateView.estimate":             "The estimate of sum over the selected keys of g(frequency).",
	"StreamReleaseView.estimate":        "The noisy estimate released.",
	"EstimateView.estimator":            "The estimator used: mle, biased_down or unbiased.",
	"EventsRequest.events":              "The events, applied in order: {\"user\": id or name} or {\"user\": ..., \"op\": \"delete\"}.",
	"StreamView.events":                 "The number of events applied.",
	"expected":                          "Expected value of the per-key estimate at this frequency.",
	"field":                             "The JSON path (privacy.epsilon, elements[3].key) or query parameter name.",
	"frequency":                         "A true frequency (number of occurrences).",
	"SanitizedElement.frequency":        "The MLE estimate i* of this key's own frequency (the frequency most likely to produce its sanitized value; an integer, no inverse-probability weighting). Raw frequencies are never released.",
	"RankedView.frequency":              "The MLE estimate of this key's own frequency (an integer, no inverse-probability weighting).",
	"RankView.frequency":                "The MLE estimate of this key's own frequency (an integer, no inverse-probability weighting).",
	"AuditView.frequency":               "The row i of the pair (i-1, i) where the worst loss occurs.",
	"from":                              "The first row audited: the pair (from-1, from).",
	"to":                                "The last row audited: the pair (to-1, to).",
	"SampleElement.frequency":           "The key's frequency: a JSON integer >= 1 (5.0 and 1e2 are accepted, strings are not).",
	"QuantileView.frequency":            "The MLE frequency estimate at this quantile.",
	"g":                                 "The function g of the statistic: identity, count, power:P or cap:T.",
	"guarantee":                         "The privacy guarantee in words.",
	"hi":                                "Upper end of the outcome piece (lo, hi]; an ordinal token, not a frequency.",
	"horizon":                           "The number of steps T the counter runs for.",
	"StreamRequest.horizon":             "Continual mode: the number of steps T.",
	"id":                                "The resource's id.",
	"intrusions":                        "The number of announced intrusions.",
	"TopView.k":                         "How many keys were asked for.",
	"kappa":                             "cascading: the buffer growth parameter.",
	"key":                               "The key.",
	"keys":                              "The keys in the sanitized order, largest first.",
	"kind":                              "What was released: sample, stream, or external (charged through POST /v1/datasets/{name}/charges).",
	"l":                                 "cascading: the level parameter l.",
	"lo":                                "Lower end of the outcome piece (lo, hi]; an ordinal token, not a frequency.",
	"max_releases":                      "The most releases the stream allows (409 after).",
	"message":                           "What is wrong, in words; never quotes the value.",
	"method":                            "The frequency sanitizer: max_separation (Algorithm 5) or discrete (Algorithm 4).",
	"mse":                               "Mean squared error of the per-key estimate: variance plus bias squared.",
	"name":                              "The dataset's name: 1-128 letters, digits, '.', '_' or '-'.",
	"outcomes":                          "The row's outcomes with their probabilities and estimates.",
	"output":                            "Continual mode: the latest output.",
	"outputs":                           "One noisy count per step fed.",
	"pi":                                "pi_i, the end-to-end reporting probability of frequency i (index 0 is frequency 1).",
	"power":                             "The sampling power p (ppswor, priority), default 1.",
	"privacy":                           "The (epsilon, delta) guarantee of the release.",
	"StreamView.privacy":                "The stream's guarantee: state_epsilon and release_epsilon.",
	"probabilities":                     "custom: the inclusion probabilities q_1..q_n, nondecreasing in (0, 1].",
	"probability":                       "The probability of this outcome under the row.",
	"QuantileView.q":                    "The quantile level in [0, 1].",
	"ReportingView.q":                   "q_i, the sampling inclusion probability of frequency i (index 0 is frequency 1).",
	"quantiles":                         "The quantiles asked for, in order.",
	"rank":                              "The rank in the sanitized order, 1 = largest.",
	"ref":                               "The id of the sample or stream charged.",
	"reference_variance":                "The variance of the non-private estimate from the sample alone, for comparison.",
	"release":                           "What is released: frequencies (keys with sanitized values, default) or keys only.",
	"release_epsilon":                   "epsilon each release spends.",
	"DatasetView.releases":              "The ledger: every release charged to the dataset.",
	"StreamView.releases":               "The number of releases drawn.",
	"remaining":                         "Budget remaining.",
	"reported":                          "The probability that a key of this frequency is reported.",
	"RankView.reported":                 "How many keys the sample reports.",
	"rows":                              "One row per frequency.",
	"sample":                            "The sample's id.",
	"sample_size":                       "The number of users sampled, m.",
	"sampling":                          "How the non-private sample was drawn.",
	"scheme":                            "The sampling scheme: ppswor, priority, none or custom.",
	"selected":                          "How many reported keys the selection matched.",
	"spent":                             "Budget spent.",
	"state_epsilon":                     "epsilon of the state against one unannounced intrusion (user level).",
	"status":                            "The HTTP status code.",
	"steps":                             "Steps fed so far.",
	"t":                                 "The threshold t (cropped_mean, incidence).",
	"threshold":                         "The sampling threshold tau (ppswor, priority).",
	"title":                             "The HTTP status text.",
	"type":                              "A stable URI naming the kind of problem.",
	"universe_size":                     "The number of possible users |U|.",
	"value":                             "The sanitized value: an ORDINAL token, not a frequency.",
	"variance":                          "Variance of the per-key estimate at this frequency.",
	"ModulusState.counters":             "One counter mod p per user.",
	"ModulusState.noise":                "The initial noise law: P(noise = i) for i = 0..p-1.",
	"ModulusState.p":                    "The prime modulus p.",
	"State.algorithm":                   "The density algorithm (density streams).",
	"State.estimator":                   "The estimator whose state this is.",
	"State.members":                     "ppds: the distinct-sample size.",
	"State.p1":                          "P(bit = 1) for users that have appeared.",
	"State.p0":                          "P(bit = 1) for users that have not appeared.",
	"TableState.counters":               "One counter per user in [0, t), in units of 1/resolution.",
	"TableState.resolution":             "The counters' resolution: a counter c stands for c/resolution.",
	"request_id":                        "The request's id, as in the X-Request-Id header and the server's log; on a replayed answer, the id of the request that produced it (Idempotent-Original-Request-Id).",
	"Comparison.pws":                    "PWS (this service's private weighted sampling).",
	"Comparison.sbh":                    "Sampled-SbH, the baseline (Sample and Hold with the PWS threshold).",
	"Comparison.nonprivate":             "The non-private estimate from the sample alone.",
	"PlanPoint.reported_fraction":       "The expected fraction of the distribution's keys each method reports at this threshold.",
	"PlanPoint.nrmse":                   "The NRMSE of each method's estimate at this threshold.",
	"PlanResult.description":            "The synthetic distribution and statistic planned for, in words.",
	"PlanResult.approximated_keys":      "Keys above exact_up_to, whose PWS statistics use the non-private reference instead.",
	"PlanResult.sweep":                  "With sweep=true: the comparison at each threshold of the sweep.",
	"PlanResult.sweep_scheme":           "With sweep=true: the scheme swept (none sweeps priority).",
}

// kindDocs describes the StreamRequest properties that depend on the
// estimator kind, from panprivate's kind registry: a new kind documents its
// parameters where it is registered.
var kindDocs = streamKindDocs(panprivate.Kinds())

// streamKindDocs returns the descriptions of StreamRequest.estimator,
// .algorithm and each kind's parameters: "kinds (required): doc" for the
// kinds that read it (kinds documenting it alike share one sentence).
func streamKindDocs(kinds []panprivate.KindInfo) map[string]string {
	type use struct {
		kinds []string
		param panprivate.Param
	}
	var names, algs, order []string
	uses := map[string][]use{}
	for _, k := range kinds {
		names = append(names, string(k.Kind))
		a := make([]string, len(k.Algorithms))
		for i, x := range k.Algorithms {
			a[i] = string(x)
		}
		algs = append(algs, fmt.Sprintf("%s: %s (default %s)", k.Kind, strings.Join(a, " | "), k.DefaultAlgorithm))
		for _, p := range k.Params {
			if !slices.Contains(order, p.Name) {
				order = append(order, p.Name)
			}
			if i := slices.IndexFunc(uses[p.Name], func(u use) bool { return u.param == p }); i >= 0 {
				uses[p.Name][i].kinds = append(uses[p.Name][i].kinds, string(k.Kind))
				continue
			}
			uses[p.Name] = append(uses[p.Name], use{kinds: []string{string(k.Kind)}, param: p})
		}
	}
	docs := map[string]string{
		"StreamRequest.estimator": "The pan-private estimator: " + strings.Join(names, ", ") + ".",
		"StreamRequest.algorithm": "The state distributions (for density also the sampling scheme), per estimator: " + strings.Join(algs, "; ") + ".",
	}
	for _, name := range order {
		var parts []string
		for _, u := range uses[name] {
			req := "optional"
			if u.param.Required {
				req = "required"
			}
			parts = append(parts, fmt.Sprintf("%s (%s): %s", strings.Join(u.kinds, " and "), req, u.param.Doc))
		}
		docs["StreamRequest."+name] = strings.Join(parts, ". ") + ". Other estimators refuse it."
	}
	return docs
}
