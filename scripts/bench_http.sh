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
#       a freshly started pwsd so nothing is cached.
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
