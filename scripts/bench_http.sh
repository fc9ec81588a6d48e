#!/usr/bin/env bash
# Reproducible end-to-end measurements over HTTP against the built binary
# (embedded store, loopback only), reporting wall time and pwsd's peak RSS.
#
#   scripts/bench_http.sh [elements] [runs]
#       the 10^6-element NDJSON sanitization (upload, sanitize, store,
#       streamed answer), warm after the first run;
#   scripts/bench_http.sh frequencies [runs] [method]
#       the cold frequencies-table request of issue 12 (eps 0.2, delta 1e-7,
#       ppswor tau 2e-5, frequency 10^6: q_i < 1 on every row), each run on
#       a freshly started pwsd so nothing is cached;
#   scripts/bench_http.sh zipf [fresh]
#       issue 22's Zipf workload (internal/workload; docs/performance.md):
#       the client's ppswor sample of 300,000 keys, f_r = floor(10^7/r),
#       POSTed as JSON for each of the 18 cases eps {1, 0.5, 0.1} x tau
#       {1e-4, 1e-5, 1e-6} x method, delta 1e-6, to one pwsd with the default
#       settings: per case the status, the first (cold) and a repeated (warm)
#       release's wall time, reported keys, an estimate GET's time and pwsd's
#       peak RSS so far (VmHWM); with "fresh", a new pwsd per case, so the
#       peak RSS is the case's own. ZIPF_ARGS passes flags to the workload
#       generator (go run ./internal/workload/zipfbody -h), e.g.
#       ZIPF_ARGS='-keys 50000 -top 50000' for a smaller log.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18181}
tmp=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
go build -o "$tmp/pwsd" ./cmd/pwsd
start() {
	PWSD_ADDR=127.0.0.1:$PORT PWSD_LOG_LEVEL=warn "$tmp/pwsd" &
	pid=$!
	for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done
}
stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}
rss() { grep VmHWM /proc/$pid/status | awk '{printf "%.0f MB", $2/1024}'; }

if [ "${1:-}" = frequencies ]; then
	RUNS=${2:-3}
	METHOD=${3:-discrete}
	url="http://127.0.0.1:$PORT/v1/tables/frequencies?epsilon=0.2&delta=0.0000001&scheme=ppswor&threshold=0.00002&method=$METHOD&frequency=1000000"
	echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); cold $METHOD frequencies request at 10^6"
	for i in $(seq "$RUNS"); do
		start
		s=$(date +%s.%N)
		bytes=$(curl -fsS "$url" | wc -c)
		e=$(date +%s.%N)
		awk -v i="$i" -v s="$s" -v e="$e" -v b="$bytes" -v r="$(rss)" 'BEGIN { printf "run %d: %.2f s cold, %d bytes, peak RSS %s\n", i, e - s, b, r }'
		stop
	done
	exit 0
fi

if [ "${1:-}" = zipf ]; then
	FRESH=${2:-}
	go build -o "$tmp/zipfbody" ./internal/workload/zipfbody
	# post BODY: prints "status seconds" and leaves the answer in $tmp/out.
	post() {
		curl -sS -o "$tmp/out" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' \
			--data-binary @"$1" "http://127.0.0.1:$PORT/v1/samples"
	}
	servers="one pwsd for all cases"
	if [ -n "$FRESH" ]; then servers="a fresh pwsd per case"; fi
	echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); Zipf workload (${ZIPF_ARGS:-300,000 keys, f_r = floor(10^7/r)}), delta 1e-6, $servers"
	if [ -z "$FRESH" ]; then start; fi
	served=0
	for eps in 1 0.5 0.1; do
		for tau in 1e-4 1e-5 1e-6; do
			for method in discrete max_separation; do
				"$tmp/zipfbody" -tau "$tau" -epsilon "$eps" -delta 1e-6 -method "$method" ${ZIPF_ARGS:-} >"$tmp/body.json" 2>/dev/null
				if [ -n "$FRESH" ]; then start; fi
				r=$(post "$tmp/body.json")
				code=${r% *} cold=${r#* }
				keys=$({ grep -o '"key":' "$tmp/out" || true; } | wc -l)
				line=$(printf 'eps %-3s tau %-4s %-14s: %s, cold %6.2f s' "$eps" "$tau" "$method" "$code" "$cold")
				if [ "$code" = 201 ]; then
					served=$((served + 1))
					id=$(grep -o '"id":"[^"]*"' "$tmp/out" | head -1 | cut -d'"' -f4)
					r=$(post "$tmp/body.json")
					warm=${r#* }
					est=$(curl -sS -o /dev/null -w '%{http_code} %{time_total}' "http://127.0.0.1:$PORT/v1/samples/$id/estimate")
					line+=$(printf ', warm %6.3f s, %5d keys, estimate %s s' "$warm" "$keys" "${est#* }")
				fi
				echo "$line, peak RSS $(rss)"
				if [ "$code" != 201 ]; then
					echo "    $({ grep -o '"errors":.*' "$tmp/out" || head -c 300 "$tmp/out"; } | sed 's/,"request_id".*//' | head -c 400)"
				fi
				if [ -n "$FRESH" ]; then stop; fi
			done
		done
	done
	echo "$served of 18 releases served (201)"
	exit 0
fi

N=${1:-1000000}
RUNS=${2:-3}
python3 - "$N" > "$tmp/body.ndjson" <<'PY'
import random, sys
n = int(sys.argv[1]); r = random.Random(1)
print('{"privacy":{"epsilon":0.5,"delta":1e-6},"sampling":{"scheme":"ppswor","threshold":0.01}}')
for i in range(n):
    # Zipf-like frequencies in [1, 2^20]
    print('{"key":"key-%d","frequency":%d}' % (i, min(1 << 20, int(1 / (r.random() * 0.999999 + 1e-6)))))
PY
start
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $N elements, $(du -h "$tmp/body.ndjson" | cut -f1) body"
for i in $(seq "$RUNS"); do
	s=$(date +%s.%N)
	lines=$(curl -fsS "http://127.0.0.1:$PORT/v1/samples" -H 'Content-Type: application/x-ndjson' \
		-H 'Accept: application/x-ndjson' --data-binary @"$tmp/body.ndjson" | wc -l)
	e=$(date +%s.%N)
	awk -v i="$i" -v s="$s" -v e="$e" -v n="$((lines - 1))" 'BEGIN { printf "run %d: %.2f s end to end, %d reported lines\n", i, e - s, n }'
done
echo "peak RSS of pwsd: $(rss)"
