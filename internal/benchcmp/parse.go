package benchcmp

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Results are the benchmark lines of one checkout's runs: per case name,
// one set of metrics (unit -> value, "ns/op" included) per line.
type Results struct {
	// Runs holds each case's lines in the order read.
	Runs map[string][]map[string]float64
	// Failures are the "--- FAIL" lines, as read.
	Failures []string
}

// procsSuffix is the GOMAXPROCS suffix `go test` appends to a name.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// Parse reads `go test -bench` output (any number of runs, other lines
// ignored). A benchmark line is its name, the iteration count, then
// value-unit pairs; the name loses its "Benchmark" prefix and GOMAXPROCS
// suffix. A line that starts like a benchmark line but does not parse is an
// error naming its line number.
func Parse(r io.Reader) (*Results, error) {
	res := &Results{Runs: map[string][]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "--- FAIL") {
			res.Failures = append(res.Failures, strings.TrimSpace(line))
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: %d fields after the name and count, want value-unit pairs", n, len(f)-2)
		}
		m := map[string]float64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q of %q: %w", n, f[i], f[i+1], err)
			}
			m[f[i+1]] = v
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		res.Runs[name] = append(res.Runs[name], m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading benchmark output: %w", err)
	}
	return res, nil
}

// Stat is one metric of one case over its runs.
type Stat struct {
	// N is the number of runs that reported the metric; 0 is "n/a".
	N int
	// Median, Min and Max are over those runs.
	Median, Min, Max float64
	// Status is the case's HTTP status (its "status" metric, the last run's)
	// where it is not a success, else 0.
	Status float64
}

// stat is the metric unit of case name, scaled by scale (e.g. 1e-6 for
// ns/op in ms).
func (r *Results) stat(name, unit string, scale float64) Stat {
	if r == nil {
		return Stat{}
	}
	var vs []float64
	var status float64
	for _, m := range r.Runs[name] {
		if v, ok := m[unit]; ok {
			vs = append(vs, v*scale)
		}
		if s, ok := m["status"]; ok {
			status = s
		}
	}
	if len(vs) == 0 {
		return Stat{}
	}
	sort.Float64s(vs)
	if status >= 200 && status < 300 {
		status = 0
	}
	return Stat{N: len(vs), Median: Median(vs), Min: vs[0], Max: vs[len(vs)-1], Status: status}
}

// Median returns the median of vs (the mean of the middle two when len(vs)
// is even), 0 for none; vs is left as it is. The comparison table's medians
// and the benchmarks that report a median of their own rounds use it.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// worst is the largest median of stats that have one, carrying a failed
// status of any of them; n counts them.
func worst(stats []Stat) (w Stat, n int) {
	for _, s := range stats {
		if s.N == 0 {
			continue
		}
		n++
		st := w.Status
		if s.Status != 0 {
			st = s.Status
		}
		if w.N == 0 || s.Median > w.Median {
			w = s
		}
		w.Status = st
	}
	return w, n
}
