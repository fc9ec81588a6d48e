// Command benchcmp is issue 34's benchmark comparison table
// (internal/benchcmp); scripts/bench_compare.sh drives it:
//
//	benchcmp units [-bench REGEXP]
//
// prints one line per test-binary launch of a round, tab-separated: the
// package directory, the -test.benchtime and the -test.bench pattern;
// REGEXP selects cases by name (e.g. 'ZipfWorkload/eps=0.1/tau=1e-4/').
//
//	benchcmp table [-base FILE -label REV] -this FILE
//
// reads the `go test -bench` output of the revision (optional) and of this
// tree and prints the Markdown table: case | REV | this tree | ratio |
// target | verdict.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/pwsd/pwsd/internal/benchcmp"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: benchcmp units [-bench REGEXP] | benchcmp table [-base FILE -label REV] -this FILE")
	}
	fs := flag.NewFlagSet("benchcmp "+args[0], flag.ContinueOnError)
	switch args[0] {
	case "units":
		bench := fs.String("bench", "", "regexp selecting cases by name (empty: all)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var filter *regexp.Regexp
		if *bench != "" {
			var err error
			if filter, err = regexp.Compile(*bench); err != nil {
				return fmt.Errorf("-bench: %w", err)
			}
		}
		for _, u := range benchcmp.Units(filter) {
			if _, err := fmt.Fprintf(out, "%s\t%s\t%s\n", u.Pkg, u.Benchtime, u.Pattern); err != nil {
				return err
			}
		}
		return nil
	case "table":
		basePath := fs.String("base", "", "`go test -bench` output of the revision (empty: none)")
		label := fs.String("label", "revision", "the revision's column heading")
		thisPath := fs.String("this", "", "`go test -bench` output of this tree")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *thisPath == "" {
			return errors.New("table: -this is required")
		}
		this, err := parseFile(*thisPath)
		if err != nil {
			return err
		}
		var base *benchcmp.Results
		if *basePath != "" {
			if base, err = parseFile(*basePath); err != nil {
				return err
			}
		}
		return benchcmp.Write(out, *label, benchcmp.Rows(base, this))
	default:
		return fmt.Errorf("unknown subcommand %q: want units or table", args[0])
	}
}

// parseFile parses one file of benchmark output.
func parseFile(path string) (*benchcmp.Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := benchcmp.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
