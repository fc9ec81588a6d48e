package openapi

import _ "embed"

// JSON is the committed swag output (Swagger 2.0) served at /swagger.json.
// `make openapi` regenerates it; `make test` fails when it is stale.
//
//go:embed swagger.json
var JSON []byte

// JSON3 is the OpenAPI 3.0 document served at /openapi.json, generated from
// JSON by openapi/gen (`make openapi`); `make test` fails when it is stale.
//
//go:embed openapi.json
var JSON3 []byte
