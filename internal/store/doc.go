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
package store
