// Package pgtest gives tests a real PostgreSQL server: the one named by
// PWSD_TEST_DATABASE_URL, or else a throwaway cluster started with
// scripts/pg.sh for the duration of the test binary. Tests are skipped only
// when neither is possible, and never when PWSD_REQUIRE_POSTGRES is set
// (as it is in CI).
//
// Main wraps a package's TestMain; NewDatabase creates a fresh database for
// one test and drops it when the test ends, so tests can run in parallel on
// one server without seeing each other's rows.
package pgtest
