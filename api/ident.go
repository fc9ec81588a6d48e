package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/pwsd/pwsd/internal/checks"
)

// validPathIDs answers 404, before anything else runs, a request whose
// path names a resource by an identifier no resource can have (see
// checks.Identifier: invalid UTF-8, a control character such as NUL, or
// more than checks.MaxIdentifierBytes bytes). Such a value never reaches
// the store, a log line or the problem, which says only what kind of
// resource is missing.
func validPathIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc := chi.RouteContext(r.Context()); rc != nil {
			for i, name := range rc.URLParams.Keys {
				if name != "*" && !checks.Identifier(rc.URLParams.Values[i]) { // "*": the mount's rest of the path
					writeProblem(w, newProblem(http.StatusNotFound, fmt.Sprintf("no %s has this %s: it is not a valid identifier (1 to %d bytes of UTF-8 without control characters)",
						resourceKind(r), name, checks.MaxIdentifierBytes)))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// resourceKind names the kind of resource a /v1 route addresses by its
// pattern ("sample" for /v1/samples/{id}/top).
func resourceKind(r *http.Request) string {
	for _, kind := range []string{"sample", "stream", "counter", "dataset"} {
		if strings.HasPrefix(routePattern(r), "/v1/"+kind+"s/{") {
			return kind
		}
	}
	return "resource"
}

// maxCursorBytes bounds a listing cursor: base64url of a kind, a time and
// an identifier.
const maxCursorBytes = 4 * (checks.MaxIdentifierBytes + 32) / 3

// validCursor reports whether c looks like a cursor pwsd issues: base64url
// (no padding) of bounded length. What it decodes to is checked by the
// service (the same identifier rule applies to the id inside).
func validCursor(c string) bool {
	if len(c) > maxCursorBytes {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !('A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}
