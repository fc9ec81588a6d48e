package plotsvg

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pwsd/pwsd/internal/planner"
)

// WriteFigures regenerates the paper's figures (planner.Figures), writes
// each as an SVG file into dir (which must exist) and prints to w the
// numbers the paper quotes next to ours.
func WriteFigures(ctx context.Context, dir string, w io.Writer) error {
	return planner.Figures(ctx, w, saveTo(dir))
}

// WriteDensityFigures regenerates Figures 4-7 of the improved-density paper
// (planner.DensityFigures), writes each as an SVG file into dir (which must
// exist) and prints to w the numbers the paper states next to ours.
func WriteDensityFigures(ctx context.Context, dir string, w io.Writer, o planner.DensityFigureOptions) error {
	return planner.DensityFigures(ctx, w, saveTo(dir), o)
}

// saveTo returns a function that renders a chart and writes it as the file
// name in dir; planner.Figures calls it once per figure.
func saveTo(dir string) func(name string, c planner.Chart) error {
	return func(name string, c planner.Chart) error {
		svg, err := render(c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), svg, 0o644); err != nil {
			return fmt.Errorf("plotsvg: writing figure: %w", err)
		}
		return nil
	}
}
