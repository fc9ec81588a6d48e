// Package storetest is the behavioural suite every store.Store
// implementation passes: the in-memory store and the PostgreSQL store run
// it from their tests (store_test.go), and a new implementation should too.
//
// Run takes a function that opens a fresh, empty store and runs each check
// as a named subtest on its own store: tables, samples and their listing and
// expiry, datasets and budget ledgers (a charge that would overspend is
// refused atomically, also under concurrent releases), stream and counter
// state (updates serialise), idempotency keys, and the rewrite of rows stored
// in the previous release's formats.
package storetest
