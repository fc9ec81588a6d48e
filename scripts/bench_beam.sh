#!/usr/bin/env bash
# make bench-beam: pwsd-beam against the engine's floor (beam/cmd/pwsd-floor:
# read → JSON → stats.Count → write) on the same generated file, one after
# the other on prism, each measured by /usr/bin/time (CPU = user + sys,
# peak RSS). RECORDS (default 10^6; the README's figures use 10^7, which
# takes minutes) records over KEYS (default RECORDS/10) Zipf(1.1) keys.
# Outside make test. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-1000000}
KEYS=${KEYS:-$((RECORDS / 10))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd beam && go build -trimpath -o "$work/" ./cmd/pwsd-beam ./cmd/pwsd-gen ./cmd/pwsd-floor)
"$work/pwsd-gen" --records "$RECORDS" --keys "$KEYS" --zipf 1.1 > "$work/raw.ndjson"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/seed.hex"

measure() { # name, command...
	local name=$1
	shift
	/usr/bin/time -f '%U %S %M %e' -o "$work/time" "$@" > "$work/$name.out" 2> "$work/$name.err" || {
		tail -20 "$work/$name.err" >&2
		exit 1
	}
	read -r user sys rss wall < "$work/time"
	awk -v n="$name" -v u="$user" -v s="$sys" -v r="$rss" -v w="$wall" -v recs="$RECORDS" \
		'BEGIN { cpu = u + s; printf "| %s | %d | %.1f | %.2f | %.0f MiB | %.1f |\n", n, recs, cpu, cpu / recs * 1e6, r / 1024, w }'
}

echo "| pipeline | records | CPU s | µs/record (CPU) | peak RSS | wall s |"
echo "|---|---|---|---|---|---|"
measure floor "$work/pwsd-floor" --input "$work/raw.ndjson" --output "$work/floor/counts"
measure pwsd-beam "$work/pwsd-beam" --input "$work/raw.ndjson" --epsilon 1 --delta 1e-6 --scheme none \
	--seed-uri "$work/seed.hex" --output "$work/beam/sample"
