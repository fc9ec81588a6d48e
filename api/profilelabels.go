package api

import (
	"context"
	"net/http"
	"runtime/pprof"

	"github.com/go-chi/chi/v5"
)

// RouteLabel is the pprof label key set on the goroutine serving a request
// (and on every goroutine it starts: the draws, the chunk builders' workers)
// with the request's route, "METHOD pattern", e.g. "POST /v1/samples" or
// "GET /v1/tables/frequencies". A CPU profile of the process (a
// benchmark's -cpuprofile, scripts/profile_cold.sh) then splits by route:
//
//	go tool pprof -tagfocus 'pwsd.route=POST /v1/samples' cpu.prof
//
// The background work a request leaves behind (chunks built ahead of the
// estimates, writes to the store) carries tablecache.WorkLabel instead.
// The label holds the route's pattern, never the path's identifiers or
// anything a client sent. docs/performance.md, "The profiles behind it".
const RouteLabel = "pwsd.route"

// routeLabels labels each request that matches a route of root with
// RouteLabel (a HEAD request as its GET). Requests that match no route are
// served unlabelled.
func routeLabels(root chi.Routes) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method, pattern := routeOf(root, r)
			if pattern == "" {
				next.ServeHTTP(w, r)
				return
			}
			pprof.Do(r.Context(), pprof.Labels(RouteLabel, method+" "+pattern), func(ctx context.Context) {
				next.ServeHTTP(w, r.WithContext(ctx))
			})
		})
	}
}
