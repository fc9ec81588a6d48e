#!/usr/bin/env bash
# make mutants: mutation testing (gremlins v0.6.0) over the privacy-critical
# code: every noise call and its scale, the budget check and ledger, the
# sanitizer's rounding, audit and restart junction check, the estimators'
# argmax. docs/testing.md ("Mutation testing") lists the targets, the
# efficacy measured and why each surviving mutant is equivalent.
#
#   bash scripts/mutants.sh                 # every target, one after the other
#   MUTANTS="noise budget" bash scripts/mutants.sh   # some targets
#
# CPU heavy: one worker (--workers 1, one test CPU); each mutant rebuilds and
# runs its package's tests named by the target's -run pattern (GOFLAGS, with
# vet off), so a target costs (its mutants) x (a package build and test run). Results (JSON) go to
# MUTANTS_OUT (default bin/mutants/), a summary per target to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

GREMLINS_VERSION=v0.6.0
GREMLINS=${GREMLINS:-$(go env GOPATH)/bin/gremlins}
if ! [ -x "$GREMLINS" ]; then
	echo "== installing gremlins $GREMLINS_VERSION"
	go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
fi
OUT=${MUTANTS_OUT:-bin/mutants}
mkdir -p "$OUT"

# target NAME PACKAGE_DIR "FILES" RUN_PATTERN: mutate only FILES (base
# names) of PACKAGE_DIR, killing with the package's tests matching
# RUN_PATTERN (it travels in GOFLAGS, so no spaces: subtest names have
# underscores for them).
target() {
	local name=$1 dir=$2 files=$3 run=$4
	local excl=() f base
	for f in "$dir"/*.go; do
		base=$(basename "$f")
		case "$base" in *_test.go) continue ;; esac
		if ! grep -qw -- "$base" <<<"$files"; then
			excl+=(-E "(^|/)${base//./\\.}\$")
		fi
	done
	echo "== mutants: $name ($dir: $files)"
	GOFLAGS="-vet=off -run=$run" "$GREMLINS" unleash --workers 1 --test-cpu 1 --timeout-coefficient 20 \
		--invert-logical --invert-loopctrl \
		"${excl[@]}" -o "$OUT/$name.json" "./$dir" | tee "$OUT/$name.log" | grep --line-buffered -Ev '^ +(KILLED|NOT COVERED|SKIPPED)' || true
}

# The targets, kept in one place so that docs/testing.md can quote them.
NOISE_TESTS='^(TestReleaseNoiseCalibrated|TestCounterNoiseCalibrated|TestContinualOutputNoiseCalibrated|TestCalibratedReleaseNoise|TestCountersExactWithoutNoise|TestCounterMarshalRoundTrip|TestCounterHorizon|TestCounterConfigValidate|TestStateLaws.*|TestIntrusion.*|TestPrivacyAccounting|TestReleaseLimit|TestCounterErrorBarsCover|Example.*|TestDefaultCounterAlgorithm|TestCounterTreeMeanNodes|TestDeletionRestoresNeverAppearedLaw|Test.*Golden.*|TestCounter.*Codec.*|TestUnmarshal.*)$'
STORE_TESTS='^(TestStoreBehaviour|TestBudgetOverflow)$/^(memory|postgres)$/^(datasets|budget.*|list_datasets.*|creation.*|every_release_path.*|concurrent_releases.*)$'
startpg() { # one cluster for every mutant's run
	if [ -z "${PWSD_TEST_DATABASE_URL:-}" ]; then
		pg=$(bash scripts/pg.sh start)
		eval "$pg"
		export PWSD_TEST_DATABASE_URL PWSD_PG_DIR
		trap 'bash scripts/pg.sh stop' EXIT
	fi
}
targets=()
for t in ${MUTANTS:-noise noise-cascading budget sanitize estimate}; do
	if [ "$t" = budget ]; then targets+=(budget-store budget-service); else targets+=("$t"); fi
done
for t in "${targets[@]}"; do
	case "$t" in
	noise) target noise internal/panprivate "release.go counter_simple.go counter_tree.go" "$NOISE_TESTS" ;;
	noise-cascading) target noise-cascading internal/panprivate "counter_cascading.go bitlaw.go" "$NOISE_TESTS" ;;
	budget-store)
		startpg
		target budget-store internal/store "store.go memory_datasets.go postgres_datasets.go" "$STORE_TESTS"
		;;
	budget-service)
		target budget-service internal/service "datasets.go" '^(TestCreateDataset|TestChargeDataset|TestBudgetPrecheck|ExampleDatasets_Charge)$'
		;;
	sanitize) target sanitize internal/sanitize "rounding.go audit.go restart.go chain.go prewarm.go" '^(TestDPAuditGrid|TestAuditDetectsViolations|TestRestartJunctionError|TestUncheckedRestartViolatesDP|TestRestartRandomAccess|TestRestartShortWarmUp|TestRestartPlan|ExampleAuditRows|FuzzTableAudit|TestRounding.*|Test.*Round.*|TestChain.*|TestJunctionWarmUpsMatchPlain|TestRowsDigest|TestPrewarmStopsWithTheWalk)$' ;;
	rounding) target rounding internal/sanitize "rounding.go" '^(TestTinyRoundingExact|TestDPAuditGrid|TestAuditDetectsViolations|TestRounding.*|Test.*Round.*)$' ;;
	estimate) target estimate internal/estimate "densemle.go generalref.go argmax.go" '^(TestMLETieRule|TestMLEBeatsTable|Test.*BruteForce|TestDenseMLEMatchesRef|TestUnitRowsShareCopiedBuffers|TestGeneralBuilderMatchesRefOnHandMadeTables|TestBuildUnitMatchesRef)$' ;;
	*)
		echo "mutants: unknown target $t (noise, noise-cascading, budget = budget-store + budget-service, sanitize, rounding, estimate)" >&2
		exit 2
		;;
	esac
done
