#!/usr/bin/env bash
# make test: go vet, OpenAPI freshness, then `go test -race ./...` with a real
# PostgreSQL 15 (PWSD_TEST_DATABASE_URL if given, else a throwaway cluster
# started by scripts/pg.sh and stopped afterwards), the maths packages' oracle
# grids once without -race, the generated client, the Beam module, then short
# fuzz runs. No test reads the wall clock for a speed claim, so a busy machine
# passes too (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."

phase() { echo "== $1 (at ${SECONDS}s)"; }
# The OpenAPI linters' npm install is network-bound: it runs beside go vet.
lint_log=$(mktemp)
bash scripts/openapi-lint.sh --install-only >"$lint_log" 2>&1 &
lint_install=$!
phase "go vet"
go vet ./...
phase "go mod tidy (every module)"
for m in . clienttest beam; do
	(cd "$m" && go mod tidy -diff >/dev/null) || { echo "make test: go.mod of $m is not tidy: run (cd $m && go mod tidy)" >&2; exit 1; }
done
phase "openapi freshness"
bash scripts/openapi-check.sh
phase "openapi lint"
if ! wait "$lint_install"; then
	cat "$lint_log" >&2
	echo "make test: installing the OpenAPI linters failed (see above)" >&2
	exit 1
fi
rm -f "$lint_log"
bash scripts/openapi-lint.sh

if [ -z "${PWSD_TEST_DATABASE_URL:-}" ]; then
	echo "== starting a throwaway PostgreSQL cluster"
	# pg.sh makes its own directory and port, so parallel runs in other
	# checkouts are untouched; a failed start stops make test here.
	if ! pg=$(bash scripts/pg.sh start); then
		echo "make test: the test PostgreSQL cluster could not start (see above)" >&2
		exit 1
	fi
	PWSD_TEST_DATABASE_URL=$(sed -n "s/^export PWSD_TEST_DATABASE_URL='\(.*\)'\$/\1/p" <<<"$pg")
	PWSD_PG_DIR=$(sed -n "s/^export PWSD_PG_DIR='\(.*\)'\$/\1/p" <<<"$pg")
	export PWSD_PG_DIR
	[ -n "$PWSD_PG_DIR" ] && trap 'bash scripts/pg.sh stop' EXIT
	if [ -z "$PWSD_TEST_DATABASE_URL" ] || [ -z "$PWSD_PG_DIR" ]; then
		echo "make test: scripts/pg.sh start printed no URL and directory" >&2
		exit 1
	fi
fi
export PWSD_TEST_DATABASE_URL
# Tests needing PostgreSQL must run, never skip, under make test.
export PWSD_REQUIRE_POSTGRES=1

# The maths packages' oracle grids and statistical checks (oracleOnly) cost
# CPU-minutes under the race detector and run no concurrency of their own:
# under -race these packages run -short (everything concurrent, the grids
# skipped), then in full without -race, so every oracle runs exactly once.
maths="./internal/sanitize ./internal/estimate ./internal/panprivate"
phase "go test -race (the maths packages -short)"
go test -race -count=1 -timeout 30m $(go list ./... | grep -v -e '/internal/sanitize$' -e '/internal/estimate$' -e '/internal/panprivate$')
go test -race -short -count=1 -timeout 30m $maths
phase "oracles: the maths packages in full, and the CPU-time checks, without -race"
go test -count=1 -timeout 30m $maths
go test -count=1 -run 'TestWorstAdmittedReleaseFinishes' ./internal/service
phase "reference build: every fast estimator and sanitizer path replaced by its reference (-tags pwsd_reference)"
go test -count=1 -timeout 30m -tags pwsd_reference ./internal/estimate ./internal/sanitize
phase "generated client (clienttest, its own module)"
(cd clienttest && go vet ./... && go test -race -count=1 ./...)
phase "beam"
bash scripts/beam-test.sh

phase "fuzz (short)"
# A smoke run of 1000 executions per target: a count, not a duration. Go
# 1.26's fuzz coordinator can report "context deadline exceeded" when a
# -fuzztime duration ends while a worker is busy on a loaded machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
# `make fuzz` runs each target 10 s.
FUZZTIME=${FUZZTIME:-1000x} bash scripts/fuzz.sh
echo "== make test passed in ${SECONDS}s"
