#!/usr/bin/env bash
# make test: go vet, OpenAPI freshness, then `go test -race ./...` with a real
# PostgreSQL 15 (PWSD_TEST_DATABASE_URL if given, else a throwaway cluster
# started by scripts/pg.sh and stopped afterwards), then short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."

phase() { echo "== $1 (at ${SECONDS}s)"; }
phase "go vet"
go vet ./...
phase "openapi freshness"
bash scripts/openapi-check.sh
phase "openapi lint"
bash scripts/openapi-lint.sh

started=""
if [ -z "${PWSD_TEST_DATABASE_URL:-}" ]; then
	echo "== starting a throwaway PostgreSQL cluster"
	eval "$(bash scripts/pg.sh start)"
	started=1
	trap 'bash scripts/pg.sh stop' EXIT
fi
export PWSD_TEST_DATABASE_URL
# Tests needing PostgreSQL must run, never skip, under make test.
export PWSD_REQUIRE_POSTGRES=1

phase "go test -race"
go test -race -count=1 -timeout 30m ./...
phase "generated client (clienttest, its own module)"
(cd clienttest && go vet ./... && go test -race -count=1 ./...)
phase "beam"
bash scripts/beam-test.sh

phase "fuzz (short)"
FUZZTIME=${FUZZTIME:-2s} bash scripts/fuzz.sh  # a smoke run; `make fuzz` runs each target 10 s
echo "== make test passed in ${SECONDS}s"
