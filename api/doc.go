// Package api is pwsd's HTTP layer. NewRouter builds the whole service: the
// /v1 routes of samples, tables, plots, plans, streams, counters and
// datasets, and the operational routes (health, readiness, metrics, the
// OpenAPI documents and their interactive page).
//
// Handlers are thin: they decode and validate a request, call
// internal/service, which holds all logic and all mathematics, and encode the
// answer. Every request is strict: each route declares its query parameters
// where it is registered (v1Routes in routes.go), JSON bodies refuse unknown fields, and every
// error is an RFC 9457 application/problem+json answer that names the field
// as the client wrote it and carries the request id. No input is answered
// with a 5xx. Bearer tokens, request limits and timeouts are enforced by the
// middleware set up in NewRouter; the OpenAPI description is generated from
// the swag annotations on the handlers (see openapi_info.go and openapi/).
//
// The routes, their parameters and answers are described in docs/api.md and
// in the generated OpenAPI document served at /openapi.json.
package api
