// Package tablecache keeps the tables pwsd derives from public parameters
// alone: sanitizer tables (package sanitize), estimator tables and the MLE
// chunks of package estimate, and the JSON answers of the table routes.
//
// Every entry is a pure function of its key (Cache.Key: the key layout's
// version, the algorithms' version, the sanitizer's canonical parameters
// and the further parameters of the table), so an entry is computed once
// and then served from memory (bounded least-recently-used caches) or from
// the store (Store: the service's PostgreSQL or in-memory store), across
// requests, restarts and replicas sharing a database. Concurrent first
// requests for one entry compute it once: one in-flight group (flight.go)
// holds every computation and every chunk under construction.
//
// Nothing here depends on data: the keys and the values are public. The
// package knows nothing about HTTP or about requests beyond their
// context; admission (what a request may cost) is the caller's, except
// for the readers' bound on the chunks a request may build (Read.MaxWork),
// above which the chunks are built in the background and the request is
// told to come back (*WarmingError).
//
// docs/store.md describes the stored formats and docs/performance.md the
// costs.
package tablecache
