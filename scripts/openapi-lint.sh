#!/usr/bin/env bash
# Lints openapi/openapi.json with Redocly CLI (recommended) and Spectral
# (spectral:oas), pinned in tools/lint/package-lock.json and configured by
# tools/lint/redocly.yaml and spectral.yaml: any error or warning fails.
# Installs the linters with `npm ci` when tools/lint/node_modules lacks them
# (the npm registry must then be reachable); with --install-only it stops
# there. First it checks that the lint
# can fail: a copy of the document without one operationId must be refused.
set -euo pipefail
cd "$(dirname "$0")/.."
lint=tools/lint
bin=$lint/node_modules/.bin
if [ ! -x "$bin/redocly" ] || [ ! -x "$bin/spectral" ]; then
	command -v npm >/dev/null || { echo "openapi-lint: npm is needed to install the linters (tools/lint)" >&2; exit 1; }
	(cd "$lint" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# --install-only: install and stop (make test installs beside go vet).
[ "${1:-}" = "--install-only" ] && exit 0
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1

# lint FILE: 0 when both linters find nothing, else 1 with their findings on stderr.
lint() {
	local out totals
	out=$("$bin/redocly" lint --config "$lint/redocly.yaml" --format=json "$1" 2>/dev/null || true)
	totals=$(node -e 'const t = JSON.parse(require("fs").readFileSync(0, "utf8")).totals; console.log(t.errors + " " + t.warnings)' <<<"$out" 2>/dev/null || echo "unreadable")
	if [ "$totals" != "0 0" ]; then
		echo "redocly (errors warnings: $totals):" >&2
		"$bin/redocly" lint --config "$lint/redocly.yaml" --format=stylish "$1" >&2 2>&1 || true
		return 1
	fi
	if ! "$bin/spectral" lint --quiet --fail-severity=warn -r "$lint/spectral.yaml" "$1" >&2; then
		echo "spectral found problems" >&2
		return 1
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); delete d.paths["/healthz"].get.operationId; console.log(JSON.stringify(d))' openapi/openapi.json >"$tmp/bad.json"
if lint "$tmp/bad.json" 2>/dev/null; then
	echo "openapi-lint: the linters accepted a document without an operationId: the lint cannot fail" >&2
	exit 1
fi
lint openapi/openapi.json
echo "openapi/openapi.json: Redocly recommended and Spectral spectral:oas, 0 errors, 0 warnings"
