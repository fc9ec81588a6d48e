package api

import (
	"net/http"

	httpSwagger "github.com/swaggo/http-swagger/v2"

	"github.com/pwsd/pwsd/openapi"
)

// openAPIJSON serves the generated OpenAPI 3.0 description.
//
//	@Summary		The OpenAPI 3.0 description of this API
//	@ID			getOpenAPIDocument
//	@Description	Generated from the swag annotations by openapi/gen (make openapi); the HTTP tests validate every request and answer against it.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	object
//	@Router			/openapi.json [get]
func openAPIJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapi.JSON3)
}

// swaggerJSON serves swag's Swagger 2.0 output, from which /openapi.json is
// derived.
//
//	@Summary	The Swagger 2.0 description of this API (swag's output)
//	@ID			getSwaggerDocument
//	@Description	The Swagger 2.0 document swag generates from the annotations; openapi.json (OpenAPI 3.0) is derived from it and is the one to generate clients from.
//	@Tags		operations
//	@Produce	json
//	@Success	200	{object}	object
//	@Router		/swagger.json [get]
func swaggerJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapi.JSON)
}

// docsRedirect sends /docs to the Swagger UI page.
func docsRedirect(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/docs/index.html", http.StatusMovedPermanently)
}

// optionalTokenLocks is a Swagger UI plugin that draws no padlock on the
// operations. Swagger UI draws one on every operation with a security
// requirement, even when the requirement lists "none" ({}) beside bearer,
// as every /v1 operation's does: a token is optional (pwsd runs open unless
// PWSD_API_TOKENS_FILE is set), and a padlock on every line read as "locked".
// The Authorize button at the top still sends a token with every call.
const optionalTokenLocks = `function OptionalTokenLocks() {
  return { wrapComponents: { authorizeOperationBtn: function () { return function () { return null; }; } } };
}`

// docsUI serves the interactive Swagger UI, reading /openapi.json.
func docsUI() http.HandlerFunc {
	return httpSwagger.Handler(httpSwagger.URL("/openapi.json"),
		httpSwagger.BeforeScript(optionalTokenLocks), httpSwagger.Plugins([]string{"OptionalTokenLocks"}))
}
