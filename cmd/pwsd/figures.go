package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/pwsd/pwsd/internal/planner/plotsvg"
)

// runFigures regenerates the paper's figures (issue "The planner"):
// `pwsd figures --out DIR` writes Figures 1, 2, 4, 5, 8 and 9 as SVG files
// into DIR (created if missing) and prints the numbers the paper quotes next
// to ours.
func runFigures(args []string) error {
	return figures(args, os.Stdout)
}

func figures(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("figures", flag.ContinueOnError)
	fs.SetOutput(w)
	out := fs.String("out", "figures", "directory to write the SVG figures into")
	fs.Usage = func() {
		fmt.Fprintln(w, "usage: pwsd figures [--out DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("figures: unexpected argument %q", fs.Arg(0))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("figures: creating output directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	if err := plotsvg.WriteFigures(ctx, *out, w); err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	fmt.Fprintf(w, "done in %s; figures in %s\n", time.Since(start).Round(time.Millisecond), *out)
	return nil
}
