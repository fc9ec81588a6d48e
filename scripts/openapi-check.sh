#!/usr/bin/env bash
# Fails when openapi/ differs from what `make openapi` would generate now:
# swag's Swagger 2.0 output and the OpenAPI 3.0 document openapi/gen derives.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go tool swag init -g openapi_info.go -d api,internal/service,internal/panprivate,internal/planner,internal/buildinfo --output "$tmp" --packageName openapi --parseInternal --quiet
go run ./openapi/gen -in "$tmp/swagger.json" -out "$tmp/openapi.json"
for f in docs.go swagger.json swagger.yaml openapi.json; do
	if ! diff -q "openapi/$f" "$tmp/$f" >/dev/null; then
		echo "openapi/$f is stale: run 'make openapi' and commit the result" >&2
		diff -u "openapi/$f" "$tmp/$f" | head -40 >&2
		exit 1
	fi
done
echo "openapi/ is up to date"
