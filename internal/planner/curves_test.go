package planner

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestCurveFrequencies checks the frequencies curves are evaluated at: all
// of 1..n for small n, increasing and ending at n otherwise, and that the
// data match the underlying tables.
func TestCurveFrequencies(t *testing.T) {
	t.Parallel()
	if f := plotFrequencies(7); len(f) != 7 || f[0] != 1 || f[6] != 7 {
		t.Fatalf("plotFrequencies(7) = %v", f)
	}
	f := plotFrequencies(1 << 20)
	if len(f) > curvePoints+1 || f[0] != 1 || f[len(f)-1] != 1<<20 {
		t.Fatalf("plotFrequencies: %d points ending at %d", len(f), f[len(f)-1])
	}
	for j := 1; j < len(f); j++ {
		if f[j] <= f[j-1] {
			t.Fatal("plotFrequencies not increasing")
		}
	}
	p := mustPrivacy(t, 1, 1e-3)
	s := mustSampling(t, sanitize.SchemePriority, 0.01, 1, nil)
	d, err := Reporting(p, s, 5000, true)
	if err != nil {
		t.Fatal(err)
	}
	pi := sanitize.ReportingProbabilities(p, s, 5000)
	b := mustSbH(t, p, s)
	for k, i := range d.Frequencies {
		if d.PWS[k] != pi[i-1] || d.Q[k] != s.Q(i) || d.SbH[k] != b.Reporting(i) {
			t.Fatalf("reporting data at %d do not match the tables", i)
		}
	}
	if _, err := Reporting(p, s, 0, false); err == nil {
		t.Fatal("max_frequency 0 accepted")
	}
}

// TestFigure1Output runs the Figure 1 step and checks the charts it saves
// (rendering them is package plotsvg's) and the numbers it prints.
func TestFigure1Output(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	saved := map[string]Chart{}
	save := func(name string, c Chart) error { saved[name] = c; return nil }
	f := &figures{ctx: context.Background(), w: &out, saveChart: save}
	if err := f.figure1(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fig1a.svg", "fig1b.svg"} {
		c, ok := saved[name]
		if !ok {
			t.Fatalf("%s not saved", name)
		}
		if !strings.Contains(c.Title, "Figure 1") || len(c.Curves) < 2 {
			t.Fatalf("%s: title %q, %d curves", name, c.Title, len(c.Curves))
		}
		if !strings.Contains(out.String(), "wrote "+name) {
			t.Fatalf("output does not report %s", name)
		}
	}
	for _, want := range []string{"eps=0.1 delta=0.01: L=17.83", "ours [2.000, 17.177]", "i=1: 2.000 (2i=2)", "PWS reaches 1 at i=37"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}
