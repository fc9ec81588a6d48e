// Command gen writes openapi/openapi.json, the OpenAPI 3.0 description of
// pwsd, from swag's Swagger 2.0 output (openapi/swagger.json): it converts
// the document with kin-openapi's openapi2conv, then adds what swag cannot
// express: the media types pwsd really sends and accepts
// (application/problem+json, application/x-ndjson, text/csv), every status
// code each operation can answer, enums and patterns for the closed sets of
// query parameters, a description on every property, the required
// properties of every answer, and HEAD next to every GET.
//
// Run it through `make openapi`; scripts/openapi-check.sh fails when the
// committed output is stale. Never edit openapi.json by hand.
package main
