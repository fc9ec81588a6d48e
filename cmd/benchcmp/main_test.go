package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun drives both subcommands as scripts/bench_compare.sh does, and
// the usage errors.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	this := filepath.Join(dir, "this.txt")
	base := filepath.Join(dir, "base.txt")
	line := "BenchmarkTablesRoute/f=1e7/eps=0.5/delta=1e-6/tau=1e-5/method=discrete-2 1 %s ns/op 0 omitted 38 peak-MB %s status\n"
	if err := os.WriteFile(this, []byte(strings.ReplaceAll(strings.Replace(line, "%s", "20000000", 1), "%s", "200")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base, []byte(strings.ReplaceAll(strings.Replace(line, "%s", "2000000", 1), "%s", "422")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		want    []string // substrings of the output
		wantErr string
	}{
		{[]string{"units", "-bench", "TablesRoute/f=1e7/.*discrete"}, []string{
			"internal/sanitize\t1s\t^BenchmarkMachineCalibration$\n",
			"api\t1x\t^BenchmarkTablesRoute$/^f=1e7$/^eps=0\\.5$/^delta=1e-6$/^tau=1e-5$/^method=discrete$\n",
		}, ""},
		{[]string{"table", "-base", base, "-label", "old", "-this", this}, []string{
			"| case | old | this tree | ratio (this/old) | target | verdict |",
			"| GET /v1/tables/frequencies f=1e7 eps=0.5 delta=1e-6 tau=1e-5 method=discrete | 2.00 ms [422] | 20.0 ms | - | 200 in <= 50 ms | met |",
			"is missing, so they are judged as stated",
		}, ""},
		{[]string{"table", "-this", this}, []string{"| case | revision | this tree |", "| n/a | 20.0 ms |"}, ""},
		{nil, nil, "usage"},
		{[]string{"table"}, nil, "-this is required"},
		{[]string{"units", "-bench", "("}, nil, "-bench"},
		{[]string{"table", "-this", filepath.Join(dir, "none")}, nil, "none"},
		{[]string{"plot"}, nil, `unknown subcommand "plot"`},
	} {
		var out strings.Builder
		err := run(c.args, &out)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
}
