package benchcmp

import (
	"regexp"
	"strings"
	"testing"
)

// canned is `go test -bench` output as the benchmarks print it (names with
// the GOMAXPROCS suffix, custom metrics in go's alphabetical order, log
// and PASS lines around), for two runs of a few cases.
const cannedThis = `goos: linux
goarch: amd64
pkg: github.com/pwsd/pwsd/internal/sanitize
BenchmarkMachineCalibration-2   	 1000000	      1250 ns/op
PASS
pkg: github.com/pwsd/pwsd/api
BenchmarkZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=cold-2         	       1	1200000000 ns/op	         5434 keys	       231.0 peak-MB	       201.0 status
BenchmarkZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=warm-2         	       1	  60000000 ns/op	         5434 keys	       180.0 peak-MB	       201.0 status
BenchmarkZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=estimate-2     	       1	   7500000 ns/op	       920.0 first-get-ms	         5434 keys	       251.0 peak-MB	       201.0 status
BenchmarkZipfWorkload/eps=0.1/tau=1e-5/method=max_separation/phase=cold-2         	       1	 400000000 ns/op	          786 keys	       130.0 peak-MB	       201.0 status
BenchmarkTablesRoute/f=1e6/eps=0.2/delta=1e-7/tau=2e-5/method=discrete-2          	       1	 900000000 ns/op	         0 omitted	        38.00 peak-MB	       200.0 status
BenchmarkTablesRoute/f=1e7/eps=0.5/delta=1e-6/tau=1e-5/method=discrete-2          	       1	  16000000 ns/op	         1.000 omitted	        38.70 peak-MB	       200.0 status
BenchmarkTablesRoute/f=1e9/eps=0.5/delta=1e-6/tau=1e-5/method=discrete-2          	       1	 130000000 ns/op	         1.000 omitted	        38.70 peak-MB	       200.0 status
BenchmarkZipfMatrix-2   	       1	9000000000 ns/op	      2500 first-get-max-ms	       814.0 peak-MB	      1100 release-max-ms	        18.00 served
BenchmarkMachineCalibration-2   	 1000000	      1350 ns/op
BenchmarkZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=cold-2         	       1	 900000000 ns/op	         5434 keys	       231.0 peak-MB	       201.0 status
    zipf_bench_test.go:95: release refused with 422: {"title":"..."}
BenchmarkTablesRoute/f=1e6/eps=0.2/delta=1e-7/tau=2e-5/method=discrete-2          	       1	1100000000 ns/op	         0 omitted	        38.00 peak-MB	       200.0 status
ok  	github.com/pwsd/pwsd/api	12.3s
`

const cannedBase = `BenchmarkMachineCalibration-2   	 1000000	      1200 ns/op
BenchmarkZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=cold-2         	       1	2000000000 ns/op	         5434 keys	       231.0 peak-MB	       201.0 status
BenchmarkZipfWorkload/eps=0.1/tau=1e-5/method=max_separation/phase=cold-2         	       1	 100000000 ns/op	            0 keys	        90.0 peak-MB	       422.0 status
BenchmarkTablesRoute/f=1e6/eps=0.2/delta=1e-7/tau=2e-5/method=discrete-2          	       1	 800000000 ns/op	         0 omitted	        38.00 peak-MB	       200.0 status
BenchmarkTablesRoute/f=1e7/eps=0.5/delta=1e-6/tau=1e-5/method=discrete-2          	       1	   1000000 ns/op	         0 omitted	        38.00 peak-MB	       422.0 status
BenchmarkZipfMatrix-2   	       1	1568000000 ns/op	        75.20 peak-MB	       323.0 release-max-ms	         0 served	       422.0 status
--- FAIL: BenchmarkZipfWorkload/eps=1/tau=1e-4/method=discrete/phase=estimate
`

func mustParse(t *testing.T, s string) *Results {
	t.Helper()
	r, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParse(t *testing.T) {
	t.Parallel()
	r := mustParse(t, cannedThis)
	for _, c := range []struct {
		name, unit string
		want       []float64 // per run, in order
	}{
		{"MachineCalibration", "ns/op", []float64{1250, 1350}},
		{"ZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=cold", "ns/op", []float64{1.2e9, 0.9e9}},
		{"ZipfWorkload/eps=0.1/tau=1e-4/method=max_separation/phase=estimate", "first-get-ms", []float64{920}},
		{"ZipfMatrix", "served", []float64{18}},
		{"TablesRoute/f=1e9/eps=0.5/delta=1e-6/tau=1e-5/method=discrete", "omitted", []float64{1}},
	} {
		runs := r.Runs[c.name]
		if len(runs) != len(c.want) {
			t.Errorf("%s: %d runs, want %d", c.name, len(runs), len(c.want))
			continue
		}
		for i, w := range c.want {
			if got := runs[i][c.unit]; got != w {
				t.Errorf("%s run %d %s = %v, want %v", c.name, i, c.unit, got, w)
			}
		}
	}
	if len(r.Runs) != 9 {
		t.Errorf("%d cases, want 9: %v", len(r.Runs), r.Runs)
	}
	b := mustParse(t, cannedBase)
	if len(b.Failures) != 1 || !strings.Contains(b.Failures[0], "phase=estimate") {
		t.Errorf("failures %q, want the one FAIL line", b.Failures)
	}
}

func TestParseRejectsBrokenLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		wantErr bool
	}{
		{"BenchmarkX-2 1 100 ns/op 5\n", true},  // a value without a unit
		{"BenchmarkX-2 1 fast ns/op\n", true},   // a value that is no number
		{"BenchmarkX-2 1 1 ns/op 2 B\n", false}, // a good line
		{"BenchmarkX is slow: 3 s\n", false},    // a log line, no count
	} {
		if _, err := Parse(strings.NewReader(c.in)); (err != nil) != c.wantErr {
			t.Errorf("Parse(%q): error %v, want error %v", c.in, err, c.wantErr)
		}
	}
}

// find returns the row named name.
func find(t *testing.T, rows []Row, name string) Row {
	t.Helper()
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q", name)
	return Row{}
}

func TestRowsRatiosAndVerdicts(t *testing.T) {
	t.Parallel()
	base, this := mustParse(t, cannedBase), mustParse(t, cannedThis)
	rows := Rows(base, this)
	// This tree's calibration is the median of 1250 and 1350 ns: 1.3 us,
	// so time targets are judged x1.3/1.175 (1 s -> 1106 ms).
	scale := Scale(rows)
	if want := 1.3 / RefCalibrationMicros; scale < want-1e-12 || scale > want+1e-12 {
		t.Fatalf("scale %v, want %v", scale, want)
	}
	for _, c := range []struct {
		name      string
		base      float64 // median; -1: n/a
		this      float64
		ratio     float64 // -1: none
		verdict   string
		thisRange [2]float64
	}{
		{calibrationRow, 1.2, 1.3, 1.3 / 1.2, "", [2]float64{1.25, 1.35}},
		// median of 1200 and 900 ms is 1050, under 1106 ms scaled: met.
		{"cold release, eps 0.1, tau 1e-4, max_separation", 2000, 1050, 1050.0 / 2000, "met", [2]float64{900, 1200}},
		// 400 ms against 500 ms scaled to 553; the revision refused (422):
		// no ratio.
		{"cold release, eps 0.1, tau 1e-5, max_separation", 100, 400, -1, "met", [2]float64{400, 400}},
		{"warm release, eps 0.1, tau 1e-4, max_separation", -1, 60, -1, "met", [2]float64{60, 60}},
		{"first estimate GET after the release, eps 0.1, tau 1e-4, max_separation", -1, 920, -1, "not met: 920 ms > 55.32 ms", [2]float64{920, 920}},
		{"estimate GET, warm, eps 0.1, tau 1e-4, max_separation", -1, 7.5, -1, "met", [2]float64{7.5, 7.5}},
		// The revision's worst includes a refusal: no ratio.
		{"cold release, worst of 2", 2000, 1050, -1, "met", [2]float64{900, 1200}},
		{"first estimate GET after the release, worst of 1", -1, 920, -1, "not met: 920 ms > 55.32 ms", [2]float64{920, 920}},
		{"peak RSS of one case, worst of 4 (fresh server per case)", 231, 251, -1, "met", [2]float64{251, 251}},
		// 1.0 s median against 0.8 s for the revision: slower, though
		// under 1 s.
		{"GET /v1/tables/frequencies f=1e6 eps=0.2 delta=1e-7 tau=2e-5 method=discrete", 800, 1000, 1.25, "not met: slower than the revision", [2]float64{900, 1100}},
		{"GET /v1/tables/frequencies f=1e7 eps=0.5 delta=1e-6 tau=1e-5 method=discrete", 1, 16, -1, "met", [2]float64{16, 16}},
		{"GET /v1/tables/frequencies f=1e9 eps=0.5 delta=1e-6 tau=1e-5 method=discrete", -1, 130, -1, "not met: 130 ms > 110.6 ms", [2]float64{130, 130}},
		// The revision refused every release of the one-server matrix:
		// its figures show, with no ratio, and it has no first GET.
		{"one server: releases served (201)", 0, 18, -1, "met", [2]float64{18, 18}},
		{"one server: slowest first estimate GET, after whatever was released before", -1, 2500, -1, "not met: 2500 ms > 55.32 ms", [2]float64{2500, 2500}},
		{"one server: peak RSS over the matrix", 75.2, 814, -1, "met", [2]float64{814, 814}},
	} {
		r := find(t, rows, c.name)
		near := func(a, b float64) bool { return a > b*(1-1e-9)-1e-12 && a < b*(1+1e-9)+1e-12 }
		if c.base < 0 && r.Base.N != 0 || c.base >= 0 && !near(r.Base.Median, c.base) {
			t.Errorf("%s: base %+v, want %v", c.name, r.Base, c.base)
		}
		if !near(r.This.Median, c.this) || !near(r.This.Min, c.thisRange[0]) || !near(r.This.Max, c.thisRange[1]) {
			t.Errorf("%s: this %+v, want %v in %v", c.name, r.This, c.this, c.thisRange)
		}
		q, ok := r.Ratio()
		if ok != (c.ratio >= 0) || ok && !near(q, c.ratio) {
			t.Errorf("%s: ratio %v %v, want %v", c.name, q, ok, c.ratio)
		}
		if got := r.Verdict(scale); got != c.verdict {
			t.Errorf("%s: verdict %q, want %q", c.name, got, c.verdict)
		}
	}
	// The revision's failed status is carried into the worst-of row, and
	// the rows absent from both runs are not printed.
	if w := find(t, rows, "cold release, worst of 2"); w.Base.Status != 422 || w.This.Status != 0 {
		t.Errorf("worst cold: base status %v, this %v; want 422 and 0", w.Base.Status, w.This.Status)
	}
	for _, r := range rows {
		if strings.Contains(r.Name, "eps 1,") || strings.Contains(r.Name, "max_separation f=1e7") {
			t.Errorf("row %q printed with no figure on either side", r.Name)
		}
	}
}

func TestVerdictStatusAndMissing(t *testing.T) {
	t.Parallel()
	ok := Stat{N: 1, Median: 10}
	for _, c := range []struct {
		name string
		row  Row
		want string
	}{
		{"no target", Row{Unit: "ms", This: ok}, ""},
		{"no figure", Row{Unit: "ms", Target: &Target{Max: 50}}, "n/a"},
		{"refused", Row{Unit: "ms", This: Stat{N: 1, Median: 1, Status: 422}, Target: &Target{Max: 50, Status: 200}}, "not met: status 422"},
		{"refused, no status asked", Row{Unit: "ms", This: Stat{N: 1, Median: 1, Status: 503}, Target: &Target{Max: 50}}, "not met: status 503"},
		{"no revision", Row{Unit: "ms", This: ok, Target: &Target{NotAboveBase: true}}, "n/a: no revision figure"},
		{"no revision, bound passed", Row{Unit: "ms", This: ok, Target: &Target{Max: 4, NotAboveBase: true}}, "not met: 10 ms > 8 ms"},
		{"equal to revision", Row{Unit: "ms", Base: ok, This: ok, Target: &Target{NotAboveBase: true}}, "met"},
		{"MB not scaled", Row{Unit: "MB", This: Stat{N: 1, Median: 1100}, Target: &Target{Max: 1000}}, "not met: 1100 MB > 1000 MB"},
		{"too few", Row{This: Stat{N: 1, Median: 17}, Target: &Target{Min: 18}}, "not met: 17 < 18"},
	} {
		if got := c.row.Verdict(2); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestUnits(t *testing.T) {
	t.Parallel()
	all := Units(nil)
	// calibration twice, 18 Zipf cases, the tables cases, the matrix.
	if want := 2 + 18 + len(TablesRouteCases()) + 1; len(all) != want {
		t.Fatalf("%d units, want %d", len(all), want)
	}
	if all[0].Cases[0] != calibrationCase || all[len(all)-1].Cases[0] != calibrationCase {
		t.Errorf("calibration not first and last: %+v ... %+v", all[0], all[len(all)-1])
	}
	// Each unit's pattern, split at '/' as go test splits -bench, matches
	// each of its cases level by level (with the "Benchmark" prefix) and no
	// case of another unit.
	matches := func(pattern, name string) bool {
		pl, nl := strings.Split(pattern, "/"), strings.Split("Benchmark"+name, "/")
		if len(pl) > len(nl) {
			return false
		}
		for i, p := range pl {
			if !regexp.MustCompile(p).MatchString(nl[i]) {
				return false
			}
		}
		return true
	}
	for i, u := range all {
		for j, v := range all {
			for _, c := range v.Cases {
				if got, want := matches(u.Pattern, c), i == j || u.Pattern == v.Pattern; got != want {
					t.Errorf("unit %d %q matches %q: %v, want %v", i, u.Pattern, c, got, want)
				}
			}
		}
	}
	sub := Units(regexp.MustCompile("eps=0.1/tau=1e-4/.*phase=cold|TablesRoute/f=1e7"))
	var got []string
	for _, u := range sub {
		got = append(got, u.Cases...)
	}
	want := []string{calibrationCase,
		zipfCase("0.1", "1e-4", "discrete", "cold"), zipfCase("0.1", "1e-4", "max_separation", "cold"),
		"TablesRoute/f=1e7/eps=0.5/delta=1e-6/tau=1e-5/method=discrete", "TablesRoute/f=1e7/eps=0.5/delta=1e-6/tau=1e-5/method=max_separation",
		calibrationCase}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("filtered cases\n%q\nwant\n%q", got, want)
	}
	if !strings.HasSuffix(sub[1].Pattern, "/^(phase=cold)$") {
		t.Errorf("filtered Zipf pattern %q runs more than the cold phase", sub[1].Pattern)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := Write(&b, "3db805d", Rows(mustParse(t, cannedBase), mustParse(t, cannedThis))); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| case | 3db805d | this tree | ratio (this/3db805d) | target | verdict |",
		"| cold release, eps 0.1, tau 1e-4, max_separation | 2000 ms | 1050 ms (900-1200, 2 runs) | 0.53 | <= 1 s (moonshot 0.2 s) | met |",
		"| cold release, eps 0.1, tau 1e-5, max_separation | 100 ms [422] | 400 ms | - | <= 0.5 s | met |",
		"| machine calibration (BenchmarkMachineCalibration) | 1.200 us | 1.300 us (1.250-1.350, 2 runs) | 1.08 |  |  |",
		"was 1.300 us, so they are judged x1.11 (1 s -> 1106 ms).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n| "); lines != len(Rows(mustParse(t, cannedBase), mustParse(t, cannedThis))) {
		t.Errorf("%d table lines after the heading:\n%s", lines, out)
	}
}

// TestMedian: the middle value, the mean of the middle two for an even
// count, 0 for none, whatever the order given, and the input left unsorted.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := append([]float64(nil), c.in...)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median reordered its input: %v, was %v", in, c.in)
			}
		}
	}
}
