#!/usr/bin/env bash
# Issue 34's targets, measured and judged in one run (make bench-zipf,
# make bench-compare REV=...; docs/performance.md, "Issue 34 targets"):
#
#   scripts/bench_compare.sh [REV]
#
# runs, in process, with -benchtime 1x (a cold case is a fresh
# default-configured server per iteration):
#   - api's BenchmarkZipfWorkload, the 18-case matrix: cold and warm release,
#     the first estimate GET after the release (first-get-ms) and a warm one;
#   - api's BenchmarkTablesRoute: GET /v1/tables/frequencies at 10^6 (eps 0.2,
#     delta 1e-7, ppswor tau 2e-5) and one row at 10^7 and 10^9 (eps 0.5,
#     delta 1e-6, tau 1e-5), both methods;
#   - api's BenchmarkZipfMatrix: one server for the 18 releases, each with
#     its first estimate GET (peak RSS over the matrix);
#   - internal/sanitize's BenchmarkMachineCalibration, first and last;
# then prints one table (cmd/benchcmp): case | REV | this tree | ratio
# (this/REV) | target | verdict. Time targets are the issue's at a
# calibration of 1.175 us, scaled by this run's.
#
# Given REV (a commit, tag or branch), the same benchmarks run on REV in a
# temporary `git worktree`, with this tree's harness copied in
# (internal/workload, internal/benchcmp, api/zipf_bench_test.go,
# api/issue34_bench_test.go); where REV's api package does not build with
# it, REV's own benchmarks run, and where none builds its column reads n/a,
# as does any case REV lacks. The two checkouts alternate case by case (one
# test-binary launch per Zipf case, per tables case, ...), the first of each
# pair alternating too, so that a shared machine's load falls on both.
#
# Environment:
#   BENCH   regexp selecting cases by name (default: all), e.g.
#           'ZipfWorkload/eps=0.1/tau=1e-4/' or 'TablesRoute/f=1e[79]' or
#           'phase=cold|ZipfMatrix'; the calibration always runs
#   COUNT   rounds (default 1): each case runs COUNT times on each side,
#           the table shows medians and ranges
#   OUT     a directory to keep the raw `go test -bench` outputs in
#   PWSD_BENCH_ALLOW_REFUSAL  1 here by default: a refused release is
#           measured and shown with its status
# Exits 1 when this tree's benchmarks failed or a release of it was refused
# (a target not met is reported in the table, not an exit status).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-}
COUNT=${COUNT:-1}
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh

go build -o "$tmp/benchcmp" ./cmd/benchcmp
"$tmp/benchcmp" units -bench "$BENCH" >"$tmp/units"
pkgs=$(cut -f1 "$tmp/units" | sort -u)

# build DIR SIDE PKG...: the test binaries of PKG... at checkout DIR into
# $tmp/SIDE/; a package that does not build is reported and left out.
build() {
	local dir=$1 side=$2 p
	shift 2
	mkdir -p "$tmp/$side"
	for p in "$@"; do
		if ! (cd "$dir" && go test -c -o "$tmp/$side/${p//\//_}.test" "./$p") >"$tmp/$side/${p//\//_}.build" 2>&1; then
			echo "$side: ./$p does not build; its cases read n/a:" >&2
			head -5 "$tmp/$side/${p//\//_}.build" >&2
			rm -f "$tmp/$side/${p//\//_}.test"
		fi
	done
}

rev=${1:-}
label=revision
if [ -n "$rev" ]; then
	label=$rev
	checkout_rev "$rev" internal/workload internal/benchcmp api/zipf_bench_test.go api/issue34_bench_test.go
	# shellcheck disable=SC2086 # $pkgs is a list of words
	build "$base" base $pkgs
	if [[ $'\n'$pkgs$'\n' == *$'\n'api$'\n'* ]] && [ ! -x "$tmp/base/api.test" ]; then
		echo "$rev: running $rev's own api benchmarks instead" >&2
		git -C "$base" checkout --quiet -- .
		git -C "$base" clean -fdq
		build "$base" base api
	fi
fi
# shellcheck disable=SC2086
build . this $pkgs

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(nproc) cores, load $(load) at the start; BENCH='${BENCH}' COUNT=$COUNT; this tree $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')${rev:+ against $rev ($(git rev-parse --short "$rev"))}"

# run SIDE DIR PKG BENCHTIME PATTERN: one launch, output appended to
# $tmp/SIDE.txt.
run() {
	local side=$1 dir=$2 pkg=$3 benchtime=$4 pattern=$5
	local bin="$tmp/$side/${pkg//\//_}.test"
	[ -x "$bin" ] || return 0
	(cd "$dir/$pkg" && "$bin" -test.run '^$' -test.bench "$pattern" -test.benchtime "$benchtime" -test.count 1) \
		>>"$tmp/$side.txt" 2>&1 || true
}
touch "$tmp/this.txt" "$tmp/base.txt"
n=$(wc -l <"$tmp/units")
for ((round = 1; round <= COUNT; round++)); do
	i=0
	while IFS=$'\t' read -r pkg benchtime pattern; do
		i=$((i + 1))
		echo "round $round/$COUNT, launch $i/$n (load $(load)): $pattern" >&2
		if [ -z "$rev" ]; then
			run this . "$pkg" "$benchtime" "$pattern"
		elif (((round + i) % 2 == 0)); then
			run base "$base" "$pkg" "$benchtime" "$pattern"
			run this . "$pkg" "$benchtime" "$pattern"
		else
			run this . "$pkg" "$benchtime" "$pattern"
			run base "$base" "$pkg" "$benchtime" "$pattern"
		fi
	done <"$tmp/units"
done
echo "load at the end: $(load)"
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	cp "$tmp/this.txt" "$OUT/this.txt"
	[ -z "$rev" ] || cp "$tmp/base.txt" "$OUT/$(printf '%s' "$rev" | tr -c 'A-Za-z0-9._-' '_').txt"
fi

echo
if [ -n "$rev" ]; then
	"$tmp/benchcmp" table -base "$tmp/base.txt" -label "$label" -this "$tmp/this.txt"
else
	"$tmp/benchcmp" table -this "$tmp/this.txt"
fi

status=0
for side in base this; do
	[ -s "$tmp/$side.txt" ] || continue
	name=this; [ "$side" = this ] || name=$rev
	if grep -q -- '--- FAIL' "$tmp/$side.txt"; then
		echo
		echo "$name: failures:"
		grep -A3 -- '--- FAIL' "$tmp/$side.txt" || true
		[ "$side" = base ] || status=1
	fi
	if grep -q 'release refused' "$tmp/$side.txt"; then
		echo
		echo "$name: refusals (each distinct problem once):"
		refusals "$tmp/$side.txt"
		[ "$side" = base ] || status=1
	fi
done
exit $status
