package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFiguresFlags: `pwsd figures` refuses an unknown paper and the
// improved-density flags with the PWS paper, naming the flag, and
// `--paper improved-density` on a small universe writes the twelve SVG
// files of Figures 4-7 (uniform and Zipf; Figures 5 and 6 at two sample
// sizes).
func TestFiguresFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--paper", "dwork"}, "--paper must be pws or improved-density"},
		{[]string{"--reps", "5"}, "--reps applies to --paper improved-density only"},
		{[]string{"--universe", "5000"}, "--universe applies to --paper improved-density only"},
		{[]string{"--paper", "improved-density", "--reps", "-1"}, "--reps must not be negative"},
		{[]string{"--paper", "improved-density", "--universe", "999"}, "--universe must be at least 1000"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out strings.Builder
		err := figures(append(tc.args, "--out", t.TempDir()), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("figures %v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	dir := t.TempDir()
	var out strings.Builder
	if err := figures([]string{"--paper", "improved-density", "--universe", "1000", "--reps", "2", "--out", dir}, &out); err != nil {
		t.Fatal(err)
	}
	svgs, err := filepath.Glob(filepath.Join(dir, "density-fig*.svg"))
	if err != nil || len(svgs) != 12 {
		t.Fatalf("wrote %d figures (%v), want 12:\n%s", len(svgs), err, out.String())
	}
	for _, f := range svgs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "<svg") {
			t.Errorf("%s: not an SVG (%v)", f, err)
		}
	}
}
