#!/usr/bin/env bash
# The CPU profiles behind issue 34's two targets that are not met
# (make profile-cold; docs/performance.md, "The profiles behind it"):
#
#   scripts/profile_cold.sh [DIR]
#
# runs, COUNT times each (default 3), a fresh api test binary (a fresh
# process: a cold heap, nothing cached) for
#   release  BenchmarkZipfWorkload/eps=0.1/tau=1e-5/method=max_separation/
#            phase=cold: the Zipf release, POST /v1/samples;
#   tables   BenchmarkTablesRoute/f=1e6/eps=0.2/delta=1e-7/tau=2e-5/
#            method=discrete: GET /v1/tables/frequencies at 10^6;
# with -cpuprofile, merges each case's profiles into DIR/CASE.prof (default
# DIR: a temporary directory, removed on exit) and prints, for each, the
# split of the CPU by pprof label (api.RouteLabel: the request's own work
# and what it starts; tablecache.WorkLabel: the background work it leaves,
# chunks built ahead of the estimates and writes to the store; neither:
# the benchmark's set-up and the runtime's own goroutines) and the top
# functions of the request's own work. Then, for example:
#
#   go tool pprof -http :8081 -tagfocus 'pwsd.route=POST /v1/samples' DIR/release.prof
#
# Environment: COUNT (rounds), TOP (functions listed, default 25).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
TOP=${TOP:-25}
# The benchmarks need no PostgreSQL (api's TestMain starts none when set).
export PWSD_TEST_DATABASE_URL=${PWSD_TEST_DATABASE_URL:-postgres://unused}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${1:-$tmp/profiles}
mkdir -p "$out"

go test -c -o "$tmp/api.test" ./api
cases=(
	"release|^BenchmarkZipfWorkload\$/^eps=0.1\$/^tau=1e-5\$/^method=max_separation\$/^phase=cold\$|POST /v1/samples"
	"tables|^BenchmarkTablesRoute\$/^f=1e6\$/^eps=0.2\$/^delta=1e-7\$/^tau=2e-5\$/^method=discrete\$|GET /v1/tables/frequencies"
)
for c in "${cases[@]}"; do
	IFS='|' read -r name pattern route <<<"$c"
	profiles=()
	for n in $(seq "$COUNT"); do
		(cd api && "$tmp/api.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 1x \
			-test.cpuprofile "$tmp/$name.$n.prof") | grep '^Benchmark' | sed 's/^/  /'
		profiles+=("$tmp/$name.$n.prof")
	done
	go tool pprof -proto "$tmp/api.test" "${profiles[@]}" >"$out/$name.prof" 2>/dev/null
	echo "== $name ($route, $COUNT fresh processes): CPU by label"
	go tool pprof -tags "$tmp/api.test" "$out/$name.prof" 2>/dev/null | sed -n '/pwsd\./,$p'
	go tool pprof -top -nodecount 1 "$tmp/api.test" "$out/$name.prof" 2>/dev/null | grep 'Total samples' | sed 's/^/  all: /'
	echo "== $name: the request's own work (pwsd.route=$route), top $TOP"
	go tool pprof -top -nodecount "$TOP" -tagfocus "pwsd.route=^$route\$" "$tmp/api.test" "$out/$name.prof" 2>/dev/null |
		sed -n '/^Showing nodes/,$p'
	echo
done
[ -n "${1:-}" ] && echo "profiles kept in $out"
exit 0
