// Package store persists what pwsd may keep: data-independent tables,
// sanitized samples, pan-private stream and counter state, and privacy
// budgets with their ledger. It never receives raw samples or raw events.
//
// Two implementations satisfy Store: Memory (the embedded default) and
// Postgres (pgx, schema applied by package migrations at start-up). Both pass
// the same behavioural suite (package storetest), run against a real
// PostgreSQL server through package pgtest. A budget charge is made in the
// same transaction as the release it pays for: a release that would exceed
// a dataset's budget is refused and changes nothing.
//
// Store is the union of one small interface per domain (Tables, Samples,
// Datasets, States, Idempotency, Purger), declared in store.go; each
// domain's code is in one file per implementation, postgres_<domain>.go
// (all of the domain's SQL) and memory_<domain>.go. docs/store.md maps the
// domains to their files and lists the steps of a schema change.
package store
