package api

// This file holds swag's general API annotations (the document's title,
// description and security scheme), apart from the package documentation.
// `make openapi` reads them with `swag init -g openapi_info.go`.
//
//	@title						pwsd — private weighted sampling service
//	@version					1
//	@description				pwsd turns non-private weighted samples (threshold, ppswor, priority) into (epsilon, delta)-differentially private ones, estimates linear and ordinal statistics from them, and runs pan-private streaming estimators and counters under continual observation. The planner plans both before any data is touched.
//	@description				## Sanitized values are tokens
//	@description				Sanitized values ("value", table "outcomes") are ORDINAL TOKENS, not frequencies: a key of true frequency i is typically reported near i - L, where L = L(ε, δ) = (1/ε) ln((e^ε - 1 + 2δ) / (δ (e^ε + 1))) (equation 4 of the PWS paper: about the number of frequencies over which the reporting probability climbs from δ to 1/2; GET /v1/plan/summary states it). Use the "frequency" fields for frequencies ("contribution" is a key's term in a sum, with 1/q weighting under sampling).
//	@description				## Errors and requests
//	@description				Every error is application/problem+json naming the invalid fields; every response carries X-Request-Id and every problem its request_id. Unknown or repeated query parameters are a 400. Every GET also answers HEAD (the same headers, no body).
//	@description				## Authentication
//	@description				Open by default: no token is needed. With PWSD_API_TOKENS_FILE every /v1 operation needs "Authorization: Bearer TOKEN" (a reader token may only GET). Each /v1 operation therefore lists both requirements, none ({}) and bearer; this page draws no padlock on them (the token is optional), and its Authorize button sends a token with every call.
//	@license.name				Apache-2.0
//	@license.url				https://www.apache.org/licenses/LICENSE-2.0
//	@BasePath					/
//	@tag.name					samples
//	@tag.description			Sanitize a non-private weighted sample into a differentially private one (Algorithms 4 and 5) and estimate from it: sums with confidence intervals, top-k, rank, quantiles.
//	@tag.name					budgets
//	@tag.description			Datasets and their (epsilon, delta) budgets: every release names a dataset and is charged to its ledger; an overspend is a 409 that changes nothing.
//	@tag.name					streams
//	@tag.description			Pan-private streaming estimators (density, cropped mean, heavy hitters, incidence): feed events, draw noisy releases, announce intrusions.
//	@tag.name					counters
//	@tag.description			Differentially private counters under continual observation: feed bits, read one noisy count per step.
//	@tag.name					tables
//	@tag.description			Exact tables computed from the privacy and sampling parameters alone (no data): reporting probabilities, sanitized frequency outcomes, estimator bias and variance, a privacy audit.
//	@tag.name					planner
//	@tag.description			Plan a release before making it: SVG plots and a summary comparing PWS with sampled-SbH and the non-private estimate on a synthetic distribution; for a pan-private density stream, the algorithm and sample size with the theorems' MSE beside a simulation.
//	@tag.name					operations
//	@tag.description			Health, readiness and this API's description. Public: never need a token.
//	@securityDefinitions.apikey	bearer
//	@in							header
//	@name						Authorization
//	@description				"Bearer TOKEN" when PWSD_API_TOKENS_FILE is set (the scheme is case-insensitive).
var _ struct{}
