// Package benchcmp is issue 34's benchmark comparison: which benchmarks to
// run (the Zipf matrix, the tables-route cases, the machine calibration),
// the targets for them, and the table that puts two runs of them
// side by side (a named revision and this tree), with the ratio and a
// verdict per target. scripts/bench_compare.sh runs the benchmarks,
// alternating the two checkouts, and cmd/benchcmp prints the table.
//
// The package reads `go test -bench` output and knows nothing about HTTP or
// the maths; api's benchmarks import TablesRouteCases so that the cases
// measured and the cases judged are one list.
package benchcmp

import (
	"fmt"
	"regexp"
	"strings"
)

// TablesRouteCase is one GET /v1/tables/frequencies request of issue 34.
type TablesRouteCase struct {
	// Name is the sub-benchmark's name under BenchmarkTablesRoute.
	Name string
	// Query is the request's query string, as a client writes it.
	Query string
}

// TablesRouteCases are issue 34's tables-route requests: the row at
// frequency 10^6 with q_i < 1 on every row below it (eps 0.2, delta 1e-7,
// ppswor tau 2e-5; issue 12's case), and one row far up, at 10^7 and 10^9
// (eps 0.5, delta 1e-6, ppswor tau 1e-5), each with both methods.
func TablesRouteCases() []TablesRouteCase {
	var cs []TablesRouteCase
	for _, m := range methods {
		cs = append(cs, TablesRouteCase{
			Name:  "f=1e6/eps=0.2/delta=1e-7/tau=2e-5/method=" + m,
			Query: "epsilon=0.2&delta=0.0000001&scheme=ppswor&threshold=0.00002&method=" + m + "&frequency=1000000",
		})
	}
	for _, f := range []struct{ name, value string }{{"1e7", "10000000"}, {"1e9", "1000000000"}} {
		for _, m := range methods {
			cs = append(cs, TablesRouteCase{
				Name:  "f=" + f.name + "/eps=0.5/delta=1e-6/tau=1e-5/method=" + m,
				Query: "epsilon=0.5&delta=0.000001&scheme=ppswor&threshold=0.00001&method=" + m + "&frequency=" + f.value,
			})
		}
	}
	return cs
}

// The Zipf matrix of api's BenchmarkZipfWorkload (issue 22), in its order.
var (
	zipfEps    = []string{"1", "0.5", "0.1"}
	zipfTaus   = []string{"1e-4", "1e-5", "1e-6"}
	methods    = []string{"discrete", "max_separation"}
	zipfPhases = []string{"cold", "warm", "estimate"}
)

// Case names, as `go test -bench` prints them without "Benchmark" and the
// GOMAXPROCS suffix.
const (
	calibrationCase = "MachineCalibration"
	zipfPrefix      = "ZipfWorkload/"
	tablesPrefix    = "TablesRoute/"
	matrixCase      = "ZipfMatrix"
)

// zipfCase is the name of one sub-benchmark of BenchmarkZipfWorkload.
func zipfCase(eps, tau, method, phase string) string {
	return fmt.Sprintf("%seps=%s/tau=%s/method=%s/phase=%s", zipfPrefix, eps, tau, method, phase)
}

// Unit is one launch of a package's test binary: the benchmarks it runs,
// in one process.
type Unit struct {
	// Pkg is the package's directory, relative to the module root.
	Pkg string
	// Benchtime is the -test.benchtime to run it with.
	Benchtime string
	// Pattern is the -test.bench regexp, anchored at every level.
	Pattern string
	// Cases are the benchmark names it reports.
	Cases []string
}

// Units are the launches of one round of the comparison, in order: the
// machine calibration first and last (always, whatever the filter: the
// targets are stated against it), then per Zipf case (eps, tau, method)
// its phases in one process, each tables-route case, and the one-server
// matrix. filter (nil: all) selects cases by their names, e.g.
// "ZipfWorkload/eps=0.1/tau=1e-4/" or "TablesRoute/f=1e[79]"; a unit runs
// the cases of it that match.
func Units(filter *regexp.Regexp) []Unit {
	match := func(name string) bool { return filter == nil || filter.MatchString(name) }
	calibration := Unit{Pkg: "internal/sanitize", Benchtime: "1s", Pattern: "^BenchmarkMachineCalibration$", Cases: []string{calibrationCase}}
	us := []Unit{calibration}
	for _, eps := range zipfEps {
		for _, tau := range zipfTaus {
			for _, m := range methods {
				var phases, cases []string
				for _, p := range zipfPhases {
					if c := zipfCase(eps, tau, m, p); match(c) {
						phases = append(phases, regexp.QuoteMeta("phase="+p))
						cases = append(cases, c)
					}
				}
				if len(cases) == 0 {
					continue
				}
				us = append(us, Unit{Pkg: "api", Benchtime: "1x", Cases: cases,
					Pattern: anchored("BenchmarkZipfWorkload", "eps="+eps, "tau="+tau, "method="+m) + "/^(" + strings.Join(phases, "|") + ")$"})
			}
		}
	}
	for _, c := range TablesRouteCases() {
		if name := tablesPrefix + c.Name; match(name) {
			us = append(us, Unit{Pkg: "api", Benchtime: "1x", Cases: []string{name},
				Pattern: anchored(append([]string{"BenchmarkTablesRoute"}, strings.Split(c.Name, "/")...)...)})
		}
	}
	if match(matrixCase) {
		us = append(us, Unit{Pkg: "api", Benchtime: "1x", Pattern: anchored("BenchmarkZipfMatrix"), Cases: []string{matrixCase}})
	}
	return append(us, calibration)
}

// anchored is a -test.bench pattern matching exactly the levels given.
func anchored(levels ...string) string {
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}
