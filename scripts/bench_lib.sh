# shellcheck shell=bash
# Sourced by scripts/bench_zipf.sh and scripts/bench_compare.sh (from the
# repository root): the in-process benchmarks' environment, a temporary
# directory $tmp removed on exit, a revision checked out beside this tree,
# and the list of refusals.
export PWSD_BENCH_ALLOW_REFUSAL=${PWSD_BENCH_ALLOW_REFUSAL:-1}
# The benchmarks need no PostgreSQL; a set URL keeps api's TestMain from
# starting a throwaway cluster for nothing.
export PWSD_TEST_DATABASE_URL=${PWSD_TEST_DATABASE_URL:-postgres://unused}
tmp=$(mktemp -d)
base=
bench_cleanup() {
	if [ -n "$base" ]; then git worktree remove --force "$base" >/dev/null 2>&1 || true; fi
	rm -rf "$tmp"
}
trap bench_cleanup EXIT

# checkout_rev REV PATH...: REV in a temporary `git worktree` at $base, with
# this tree's PATHs (the harness: packages and benchmark files) copied over
# REV's.
checkout_rev() {
	local rev=$1 p
	shift
	base="$tmp/base"
	git worktree add --detach --quiet "$base" "$rev"
	for p in "$@"; do
		rm -rf "${base:?}/$p"
		cp -r "$p" "$base/$(dirname "$p")/"
	done
}

# refusals FILE: each distinct refused release of a benchmark output once,
# with its count (nothing when there is none).
refusals() {
	grep -o 'release refused with .*' "$1" | sed -e 's/: {.*"errors":/: errors /' -e 's/,"request_id".*//' \
		-e 's/elements\[[0-9]*\]/elements[i]/g' | sort | uniq -c
}
