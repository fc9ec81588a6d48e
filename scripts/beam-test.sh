#!/usr/bin/env bash
# The Beam pipeline's checks (beam/, its own module): go vet, then its tests,
# which run the pipeline on the local prism runner over 10^5 generated
# records and against a pwsd router started in-process. Called by
# scripts/test.sh; the Beam build is cached by the Go build cache.
set -euo pipefail
cd "$(dirname "$0")/../beam"
echo "== beam: go vet"
go vet ./...
echo "== beam: go test"
go test -count=1 -timeout 20m ./...
