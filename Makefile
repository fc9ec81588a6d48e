# pwsd — see README.md. Two set-up commands: `make run` and `make test`.
GO       ?= go
BIN      ?= bin/pwsd
SWAGARGS  = init -g openapi_info.go -d api,internal/service,internal/panprivate,internal/planner,internal/buildinfo -o $(1) --packageName openapi --parseInternal --quiet

.PHONY: run build test vet openapi openapi-check bench bench-zipf bench-compare bench-zipf-phases profile-cold bench-beam fuzz load clean beam mutants

## run: start pwsd on :8080 with the embedded in-memory store (or PostgreSQL with PWSD_DATABASE_URL)
run:
	$(GO) run ./cmd/pwsd

## build: a static binary in bin/pwsd
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/pwsd

## test: vet, OpenAPI freshness and lint, every test with -race (the maths packages -short) and their oracles once without, against a throwaway PostgreSQL 15
test:
	bash scripts/test.sh

vet:
	$(GO) vet ./...

## openapi: regenerate openapi/ from the swag annotations: Swagger 2.0 by swag, then OpenAPI 3.0 (openapi.json) by openapi/gen, then the Go clients clienttest/ generates from it (oapi-codegen, ogen)
openapi:
	$(GO) tool swag $(call SWAGARGS,openapi)
	$(GO) run ./openapi/gen -in openapi/swagger.json -out openapi/openapi.json
	cd clienttest && $(GO) generate ./client ./ogenclient

## openapi-check: fail when openapi/ is stale
openapi-check:
	bash scripts/openapi-check.sh

## bench: the benchmarks quoted in README.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/... ./api/...

## bench-zipf: issue 34's targets judged in one run: the Zipf matrix, the first estimate GET after a release, the tables route, peak RSS, the machine calibration (REV=3db805d side by side with a revision; BENCH='regexp' COUNT=n; docs/performance.md)
bench-zipf:
	bash scripts/bench_compare.sh $(REV)

## bench-compare: bench-zipf side by side with REV (default 3db805d, the revision issue 34 compares with)
bench-compare:
	bash scripts/bench_compare.sh $(or $(REV),3db805d)

## profile-cold: CPU profiles of issue 34's two unmet targets (cold eps 0.1 release, the 10^6 frequencies table), split by route and background work (COUNT=n; DIR=... keeps them; docs/performance.md "The profiles behind it")
profile-cold:
	bash scripts/profile_cold.sh $(DIR)

## bench-zipf-phases: issue 22's per-case table of the Zipf matrix (ms, status, keys, peak MB per phase; REV=main beside it)
bench-zipf-phases:
	bash scripts/bench_zipf.sh $(REV)

## fuzz: each fuzz target for FUZZTIME (default 10s)
fuzz:
	FUZZTIME=$${FUZZTIME:-10s} bash scripts/fuzz.sh

## mutants: mutation testing (gremlins v0.6.0) of the noise, budget, sanitizer and argmax code; MUTANTS="noise budget" for some targets (slow: docs/testing.md)
mutants:
	MUTANTS="$(MUTANTS)" bash scripts/mutants.sh

## load: 50 clients for 30 s against pwsd with PostgreSQL (loopback only)
load:
	bash scripts/load.sh

## beam: build the Beam pipeline (beam/, its own module) into bin/pwsd-beam and bin/pwsd-gen
beam:
	cd beam && $(GO) build -trimpath -o ../bin/ ./cmd/pwsd-beam ./cmd/pwsd-gen

## bench-beam: pwsd-beam against the engine's floor on a generated file (RECORDS=10000000 for the README's figures)
bench-beam:
	bash scripts/bench_beam.sh

clean:
	rm -rf bin
