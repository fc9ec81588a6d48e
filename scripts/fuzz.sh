#!/usr/bin/env bash
# Runs every fuzz target (every `func Fuzz...` in a _test.go file) for
# FUZZTIME (default 5s) each. Targets over the PostgreSQL store (e.g.
# api's FuzzIdentifiersPostgres: path segments and cursors) use
# PWSD_TEST_DATABASE_URL, which make test exports; they skip without it
# unless PWSD_REQUIRE_POSTGRES is set.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-5s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "-- $pkg $f ($t)"
		go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
	done
done
