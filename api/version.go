package api

import (
	"net/http"

	"github.com/pwsd/pwsd/internal/buildinfo"
)

// versionOf answers which pwsd is running (Deps.Build).
//
//	@Summary	The running build
//	@ID			getVersion
//	@Description	The module version, the VCS commit the binary was built from (`unknown` for a build outside a git checkout), whether that tree had uncommitted changes, and the Go version: the same figures as the `pwsd_build_info` metric and `pwsd --version`. Public: never needs a token.
//	@Tags		operations
//	@Produce	json
//	@Success	200	{object}	buildinfo.Info
//	@Router		/version [get]
func versionOf(in buildinfo.Info) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, in) }
}
