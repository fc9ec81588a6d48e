// Package storetest is the behavioural suite every store.Store
// implementation passes: the in-memory store and the PostgreSQL store run
// it from their tests (store_test.go), and a new implementation should too.
//
// Run takes a function that opens a fresh, empty store and runs each check
// as a named parallel subtest on its own store. The checks are kept by
// domain, one file each, as the store's code is: tables.go (the cache and
// its byte bound), samples.go (round trips, listing, deletion, expiry),
// datasets.go (budget ledgers: a charge that would overspend is refused
// atomically through every release path, also under concurrent releases),
// streams.go (stream and counter state: updates serialise, deletes wait for
// them), idempotency.go (reservation, replay, redaction, leases); the
// checks of no single domain are in storetest.go (readiness, unsafe
// identifiers) and rewrite.go (rows stored in the previous release's
// formats).
package storetest
