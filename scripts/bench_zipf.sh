#!/usr/bin/env bash
# Issue 22's Zipf workload (api's BenchmarkZipfWorkload) in one command:
#
#   scripts/bench_zipf.sh [rev]
#
# runs the 18-case matrix (eps x tau x method; phases cold, warm, estimate)
# once per case (-benchtime 1x: cold is the first release of its parameters
# on a fresh default-configured server), prints per case the time, HTTP
# status, reported keys and peak RSS, and the benchmark process's peak RSS
# over the whole run (/usr/bin/time -v). Given a git revision (main, HEAD~3,
# a tag), it runs the same benchmark on that revision too, in a temporary
# `git worktree` with this checkout's harness copied in (internal/workload
# and api/zipf_bench_test.go), and prints both side by side, with benchstat
# when the Go module proxy serves it.
#
# Environment:
#   BENCH      sub-benchmarks, a regexp per level eps/tau/method/phase
#              (default all), e.g. 'eps=1/.*/.*/phase=cold'
#   COUNT      runs per case (default 1), BENCHTIME (default 1x)
#   PWSD_BENCH_ALLOW_REFUSAL  1 here by default: a refused release is
#              measured and shown with its status; the script then exits 1.
#              Set 0 to make a refusal fail its case outright.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-.}
COUNT=${COUNT:-1}
BENCHTIME=${BENCHTIME:-1x}
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh

# run DIR LABEL: the benchmark of the checkout at DIR into $tmp/LABEL.txt;
# prints the process's peak RSS. Fails when the benchmark does not build.
run() {
	local dir=$1 label=$2
	(cd "$dir" && go test -c -o "$tmp/$label.test" ./api/) || return 1
	(cd "$dir/api" && /usr/bin/time -v -o "$tmp/$label.time" "$tmp/$label.test" -test.run '^$' \
		-test.bench "BenchmarkZipfWorkload/$BENCH" -test.benchtime "$BENCHTIME" -test.count "$COUNT") \
		>"$tmp/$label.txt" 2>&1 || true
	awk '/Maximum resident set size/ { printf "%.0f MB\n", $NF / 1024 }' "$tmp/$label.time"
}

# table FILE...: one row per case and file: ms/op, status, keys, peak-MB.
table() {
	awk '
	FNR == 1 { f++; label[f] = FILENAME; sub(/.*\//, "", label[f]); sub(/\.txt$/, "", label[f]) }
	/^BenchmarkZipfWorkload\// {
		name = $1; sub(/^BenchmarkZipfWorkload\//, "", name); sub(/-[0-9]+$/, "", name)
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		for (i = 3; i < NF; i += 2) v[f, name, $(i + 1)] = $i
	}
	END {
		printf "%-52s", "case"
		for (j = 1; j <= f; j++) printf " | %-34s", label[j] ": ms, status, keys, peak-MB"
		printf "\n"
		for (k = 1; k <= n; k++) {
			printf "%-52s", order[k]
			for (j = 1; j <= f; j++) {
				if ((j SUBSEP order[k] SUBSEP "ns/op") in v)
					printf " | %9.1f  %6s  %5s  %7s", v[j, order[k], "ns/op"] / 1e6, v[j, order[k], "status"], v[j, order[k], "keys"], v[j, order[k], "peak-MB"]
				else
					printf " | %-34s", "(no result)"
			}
			printf "\n"
		}
	}' "$@"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); BenchmarkZipfWorkload/$BENCH, -benchtime $BENCHTIME, count $COUNT"
files=()
if [ -n "${1:-}" ]; then
	rev=$1
	label=$(printf '%s' "$rev" | tr -c 'A-Za-z0-9._-' '_')
	checkout_rev "$rev" internal/workload api/zipf_bench_test.go
	if rss=$(run "$base" "$label"); then
		echo "$rev: peak RSS of the benchmark process $rss"
		files+=("$tmp/$label.txt")
	else
		echo "$rev: the harness does not build on this revision; showing the current checkout only"
	fi
fi
rss=$(run . current)
echo "current checkout: peak RSS of the benchmark process $rss"
files+=("$tmp/current.txt")
echo
table "${files[@]}"

if [ ${#files[@]} -eq 2 ]; then
	echo
	(cd "$tmp" && go run golang.org/x/perf/cmd/benchstat@latest "$(basename "${files[0]}")" current.txt) 2>/dev/null ||
		echo "(benchstat unavailable: the table above is the comparison)"
fi

echo
grep -A3 -- '--- FAIL' "$tmp/current.txt" || true
total=$(grep -c '^BenchmarkZipfWorkload/.*phase=cold' "$tmp/current.txt" || true)
served=$(grep '^BenchmarkZipfWorkload/.*phase=cold' "$tmp/current.txt" | grep -c ' 201.0 status' || true)
if grep -q 'release refused' "$tmp/current.txt"; then
	echo "refusals of the current checkout (each distinct problem once):"
	refusals "$tmp/current.txt"
fi
echo "current checkout: $served of $total cold releases served (201)"
if [ "$served" != "$total" ] || grep -q -- '--- FAIL' "$tmp/current.txt"; then
	exit 1
fi
