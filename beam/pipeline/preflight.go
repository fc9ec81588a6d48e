package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
)

// ErrPreflight marks a run refused by the pre-flight checks: nothing was
// charged and nothing was written.
var ErrPreflight = errors.New("pre-flight check failed; nothing was charged and nothing was written")

// preflight checks, before any charge and before the job is submitted,
// what would otherwise fail on the workers after the budget is spent: the
// input pattern matches at least one file, the seed is readable (and valid)
// at the location the workers read it from, and the output's filesystem is
// registered and writable (a probe file is written next to the output and
// removed, with any directory it created). It returns the files the input
// matched.
func preflight(ctx context.Context, input, seedURI, output string) ([]string, error) {
	files, err := matchInput(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if _, err := ReadSeed(ctx, seedURI); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if err := probeOutput(ctx, output); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return files, nil
}

// matchInput lists the files matching the --input pattern; none is an error.
func matchInput(ctx context.Context, glob string) ([]string, error) {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("listing --input: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--input %s matches no file", glob)
	}
	return files, nil
}

// probeOutput writes and removes PREFIX-preflight-<random> through Beam's
// filesystem for the output prefix. On the local filesystem the directories
// the probe had to create are removed again (they are created for real when
// the shards are written).
func probeOutput(ctx context.Context, output string) error {
	fs, err := filesystem.New(ctx, output)
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	defer fs.Close()
	rm, ok := fs.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("--output: the filesystem of %s cannot remove files, so the pre-flight probe cannot be cleaned up", output)
	}
	probe := output + "-preflight-" + newID()
	var created []string // local directories the probe creates, deepest first
	if !strings.Contains(output, "://") {
		for d := filepath.Dir(probe); ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
				break
			}
			created = append(created, d)
		}
	}
	defer func() {
		for _, d := range created {
			_ = os.Remove(d) // only if empty
		}
	}()
	w, err := fs.OpenWrite(ctx, probe)
	if err != nil {
		return fmt.Errorf("--output %s is not writable: %w", output, err)
	}
	_, werr := w.Write([]byte("pwsd-beam pre-flight probe\n"))
	cerr := w.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = rm.Remove(ctx, probe)
		return fmt.Errorf("--output %s is not writable: %w", output, err)
	}
	if err := rm.Remove(ctx, probe); err != nil {
		return fmt.Errorf("removing the pre-flight probe %s: %w", probe, err)
	}
	return nil
}
