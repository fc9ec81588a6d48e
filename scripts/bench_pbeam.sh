#!/usr/bin/env bash
# The Privacy on Beam comparison (outside make test): pbeam.Count (Google's
# differential-privacy library, Privacy on Beam v3.0.0) on the same
# generated file as scripts/bench_beam.sh, on prism, measured by
# /usr/bin/time. The pbeam program is written into a throwaway module in a
# temporary directory (nothing is vendored); its dependencies come from the
# Go module proxy. RECORDS (default 10^6) records over KEYS (default
# RECORDS/10) Zipf(1.1) keys. Prints one Markdown table row.
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-1000000}
KEYS=${KEYS:-$((RECORDS / 10))}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd beam && go build -trimpath -o "$work/" ./cmd/pwsd-gen)
"$work/pwsd-gen" --records "$RECORDS" --keys "$KEYS" --zipf 1.1 > "$work/raw.ndjson"

mkdir "$work/pbeam"
cat > "$work/pbeam/main.go" <<'GO'
// Command pbeamcount counts records per key with Privacy on Beam
// (pbeam.Count, epsilon 1, delta 1e-6, one partition per record's key,
// each record its own privacy unit) and writes the noisy counts.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/google/differential-privacy/privacy-on-beam/v3/pbeam"
)

// rec is one record: its line number is its privacy unit.
type rec struct {
	ID  string
	Key string
}

func init() {
	register.Function3x0(parse)
	register.Function2x1(format)
	register.Emitter1[rec]()
}

var n int64

func parse(file, line string, emit func(rec)) {
	var r struct {
		Key string `json:"key"`
	}
	if json.Unmarshal([]byte(line), &r) == nil {
		n++
		emit(rec{ID: fmt.Sprintf("%s:%d:%s", file, n, line), Key: r.Key})
	}
}

func format(k string, c int64) string { return fmt.Sprintf("%s,%d", k, c) }

func main() {
	input := flag.String("input", "", "input")
	output := flag.String("output", "", "output")
	flag.Parse()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	recs := beam.ParDo(s, parse, textio.ReadWithFilename(s, *input))
	spec, err := pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{AggregationEpsilon: 0.5, PartitionSelectionEpsilon: 0.5, PartitionSelectionDelta: 1e-6})
	if err != nil {
		log.Fatal(err)
	}
	pc := pbeam.MakePrivateFromStruct(s, recs, spec, "ID")
	keys := pbeam.ParDo(s, func(r rec) string { return r.Key }, pc)
	counts := pbeam.Count(s, keys, pbeam.CountParams{MaxPartitionsContributed: 1, MaxValue: 1})
	textio.Write(s, *output, beam.ParDo(s, format, counts))
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatal(err)
	}
}
GO
(
	cd "$work/pbeam"
	go mod init pbeamcount > /dev/null 2>&1
	go get github.com/google/differential-privacy/privacy-on-beam/v3@v3.0.0 github.com/apache/beam/sdks/v2@v2.77.0 > /dev/null
	go mod tidy > /dev/null
	go build -o "$work/pbeamcount" .
)
/usr/bin/time -f '%U %S %M %e' -o "$work/time" "$work/pbeamcount" --input "$work/raw.ndjson" --output "$work/pbeam-out" > "$work/out" 2> "$work/err" || {
	tail -20 "$work/err" >&2
	exit 1
}
read -r user sys rss wall < "$work/time"
awk -v u="$user" -v s="$sys" -v r="$rss" -v w="$wall" -v recs="$RECORDS" \
	'BEGIN { cpu = u + s; printf "| Privacy on Beam v3.0.0, pbeam.Count | %d | %.1f | %.2f | %.0f MiB | %.1f |\n", recs, cpu, cpu / recs * 1e6, r / 1024, w }'
