package api

// This file holds swag's general API annotations (the document's title,
// description and security scheme), apart from the package documentation.
// `make openapi` reads them with `swag init -g openapi_info.go`.
//
//	@title						pwsd — private weighted sampling service
//	@version					1
//	@description				pwsd turns non-private weighted samples (threshold, ppswor, priority) into (epsilon, delta)-differentially private ones, estimates linear and ordinal statistics from them, and runs pan-private streaming estimators and counters under continual observation.
//	@description				Sanitized values ("value", table "outcomes") are ORDINAL TOKENS, not frequencies: a key of true frequency i is typically reported near i - L. Use the "frequency" fields for frequencies ("contribution" is a key's term in a sum, with 1/q weighting under sampling).
//	@description				Every error is application/problem+json naming the invalid fields; every response carries X-Request-Id and every problem its request_id. Unknown or repeated query parameters are a 400.
//	@BasePath					/
//	@securityDefinitions.apikey	bearer
//	@in							header
//	@name						Authorization
//	@description				"Bearer <token>" when PWSD_API_TOKENS_FILE is set (the scheme is case-insensitive).
var _ struct{}
