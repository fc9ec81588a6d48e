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

	"github.com/pwsd/pwsd/internal/planner"
	"github.com/pwsd/pwsd/internal/planner/plotsvg"
)

// runFigures regenerates a paper's figures (issues "The planner" and 36):
// `pwsd figures --out DIR` writes the PWS paper's Figures 1, 2, 4, 5, 8 and
// 9, `pwsd figures --paper improved-density` the improved-density paper's
// Figures 4-7, as SVG files into DIR (created if missing), and prints the
// numbers the paper quotes next to ours.
func runFigures(args []string) error {
	return figures(args, os.Stdout)
}

func figures(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("figures", flag.ContinueOnError)
	fs.SetOutput(w)
	out := fs.String("out", "figures", "directory to write the SVG figures into")
	paper := fs.String("paper", "pws", "whose figures: pws (Figures 1, 2, 4, 5, 8, 9; exact, seconds) or improved-density (Figures 4-7, simulated; minutes)")
	reps := fs.Int("reps", 0, "improved-density: repetitions per point instead of the paper's 1000 (Figure 4) and 300 (Figures 5-7)")
	universe := fs.Uint64("universe", 0, "improved-density: |U| = T instead of the paper's 100000 (at least 1000)")
	seed := fs.Uint64("seed", 1, "improved-density: seed of the streams and the estimators' randomness")
	fs.Usage = func() {
		fmt.Fprintln(w, "usage: pwsd figures [--out DIR] [--paper pws|improved-density] [--reps N] [--universe N] [--seed N]")
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch *paper {
	case "pws":
		for _, name := range []string{"reps", "universe", "seed"} {
			if set[name] {
				return fmt.Errorf("figures: --%s applies to --paper improved-density only", name)
			}
		}
	case "improved-density":
		if *reps < 0 {
			return fmt.Errorf("figures: --reps must not be negative")
		}
		if set["universe"] && *universe < 1000 {
			return fmt.Errorf("figures: --universe must be at least 1000")
		}
	default:
		return fmt.Errorf("figures: --paper must be pws or improved-density, not %q", *paper)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("figures: creating output directory: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	var err error
	if *paper == "pws" {
		err = plotsvg.WriteFigures(ctx, *out, w)
	} else {
		err = plotsvg.WriteDensityFigures(ctx, *out, w, planner.DensityFigureOptions{Universe: *universe, Reps: *reps, Seed: *seed})
	}
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	fmt.Fprintf(w, "done in %s; figures in %s\n", time.Since(start).Round(time.Millisecond), *out)
	return nil
}
