#!/usr/bin/env sh
# The README's worked example: release examples/sample.json (561 keys of a
# ppswor sample, tau 0.01) under (0.5, 1e-6)-DP, then estimate the sum of the
# frequencies of the keys under a/ (truth: 89219) three ways. Needs curl and
# a running pwsd (make run); PWSD_URL overrides http://localhost:8080.
set -eu
url=${PWSD_URL:-http://localhost:8080}
here=$(dirname "$0")

headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
answer=$(curl -sS --fail-with-body -D "$headers" "$url/v1/samples" -H 'Content-Type: application/json' --data-binary @"$here/sample.json")
# The sample's id is the last segment of its Location header (as in the
# README): no parsing of the JSON answer.
location=$(grep -i '^location:' "$headers" | tr -d '\r' | cut -d ' ' -f 2)
id=${location##*/}
reported=$(printf '%s' "$answer" | grep -o '"key":' | wc -l)
echo "sample $id: $reported of 561 sampled keys reported"

echo "sum over a/ (MLE):"
curl -sS --fail-with-body "$url/v1/samples/$id/estimate?key_prefix=a/"
echo "sum over a/ (biased-down):"
curl -sS --fail-with-body "$url/v1/samples/$id/estimate?key_prefix=a/&estimator=biased_down"
echo "every prefix group:"
curl -sS --fail-with-body "$url/v1/samples/$id/estimate?group_by=prefix&delimiter=/"
