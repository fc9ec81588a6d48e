// Command pwsd-floor is the engine's floor for pwsd-beam's benchmark
// (scripts/bench_beam.sh): the least a Beam pipeline does with the same
// input on the same runner, read → JSON → stats.Count → write, with no
// validation, sampling or sanitizing. pwsd-beam's CPU per record is
// compared with it.
//
//	pwsd-floor --input raw.ndjson --output /tmp/floor/counts
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

func init() {
	register.Function2x0(parse)
	register.Function2x1(format)
	register.Emitter1[string]()
}

// record is the one field the floor reads.
type record struct {
	Key string `json:"key"`
}

// parse decodes one line into its key with encoding/json (a struct).
func parse(line string, emit func(string)) {
	var r record
	if json.Unmarshal([]byte(line), &r) == nil && r.Key != "" {
		emit(r.Key)
	}
}

// format renders one count.
func format(key string, n int) string { return key + "," + strconv.Itoa(n) }

func main() {
	input := flag.String("input", "", "input file pattern (NDJSON with a key field)")
	output := flag.String("output", "", "output prefix")
	flag.Parse()
	beam.Init()
	if *input == "" || *output == "" {
		fmt.Fprintln(os.Stderr, "pwsd-floor: --input and --output are required")
		os.Exit(2)
	}
	p, s := beam.NewPipelineWithRoot()
	keys := beam.ParDo(s, parse, textio.Read(s, *input))
	textio.Write(s, *output, beam.ParDo(s, format, stats.Count(s, keys)))
	if err := beamx.Run(context.Background(), p); err != nil {
		fmt.Fprintln(os.Stderr, "pwsd-floor:", err)
		os.Exit(1)
	}
}
