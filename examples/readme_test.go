// Package examples holds the README's worked example (sample.json, built by
// gen, and run.sh) and the test that runs every example of the README, so
// that the README cannot go stale.
package examples

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/testserver"
)

// server starts pwsd's real router over the in-memory store on a loopback
// port, as `make run` would.
func server(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's examples need %s: %v", tool, err)
		}
	}
	return strings.TrimPrefix(testserver.New(t).URL, "http://")
}

// block is one fenced code block of a Markdown file.
type block struct {
	lang, text string
	line       int
}

var fence = regexp.MustCompile("(?m)^```([a-z]*)[^\n]*\n((?s:.*?))^```[ \t]*$")

func blocks(md string) []block {
	var out []block
	for _, m := range fence.FindAllStringSubmatchIndex(md, -1) {
		out = append(out, block{lang: md[m[2]:m[3]], text: md[m[4]:m[5]], line: 1 + strings.Count(md[:m[0]], "\n")})
	}
	return out
}

// TestReadmeExamples runs every ```sh block of README.md, in order, in one
// bash session from the repository root against a fresh pwsd (localhost:8080
// replaced by its address). Each block must succeed, and the answer it ends
// with must match the ```json block that follows it, if any: every member
// the README shows is in the answer with the same value, except those that
// are noisy or random (volatile: only their JSON type must match). Blocks of
// other languages (```console) are not run.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	addr := server(t)
	bs := blocks(string(md))
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	var runs []int
	for i, b := range bs {
		if b.lang != "sh" {
			continue
		}
		runs = append(runs, i)
		script.WriteString(strings.ReplaceAll(b.text, "localhost:8080", addr))
		fmt.Fprintf(&script, "\nprintf '\\n@@block %d@@\\n'\n", i)
	}
	if len(runs) < 5 {
		t.Fatalf("found %d sh blocks in README.md; the fences must be ```sh", len(runs))
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the README's sh blocks failed: %v\n%s\noutput so far:\n%s", err, stderr.Bytes(), out)
	}
	rest := string(out)
	for _, i := range runs {
		marker := fmt.Sprintf("\n@@block %d@@\n", i)
		got, after, ok := strings.Cut(rest, marker)
		if !ok {
			t.Fatalf("README.md line %d: the block did not finish", bs[i].line)
		}
		rest = after
		if i+1 >= len(bs) || bs[i+1].lang != "json" {
			continue
		}
		lines := strings.Split(strings.TrimSpace(got), "\n")
		last := lines[len(lines)-1]
		var want, have any
		if err := json.Unmarshal([]byte(bs[i+1].text), &want); err != nil {
			t.Fatalf("README.md line %d: the json block is not JSON: %v", bs[i+1].line, err)
		}
		if err := json.Unmarshal([]byte(last), &have); err != nil {
			t.Fatalf("README.md line %d: the block's answer is not JSON: %v\n%s", bs[i].line, err, last)
		}
		if err := match("", want, have); err != nil {
			t.Errorf("README.md line %d: the answer no longer matches the README: %v\nanswer: %s", bs[i+1].line, err, last)
		}
	}
}

// volatile members differ from run to run: ids, times, and what the noise
// decides.
var volatile = map[string]bool{
	"id": true, "sample": true, "ref": true, "request_id": true, "created_at": true, "note": true,
	"estimate": true, "standard_error": true, "lower": true, "upper": true, "near_or_below_share": true,
	"selected": true, "reliable": true, "outputs": true, "monotone": true, "effective_keys": true,
	"unseen_weight": true, // the example's is deterministic (2 g(i)(1-q_i)/q_i at supported_from), shown rounded
}

// match reports the first difference between the answer the README shows
// (want) and the one pwsd gave (have): a member either lacks, a member
// whose value differs (volatile ones only by type), or an array of another
// length. The README shows answers in full.
func match(path string, want, have any) error {
	name := path[strings.LastIndexByte(path, '.')+1:]
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i] // an item of a volatile array is volatile
	}
	if reflect.TypeOf(want) != reflect.TypeOf(have) {
		return fmt.Errorf("%s: README shows %T, the answer has %T", path, want, have)
	}
	if _, array := want.([]any); volatile[name] && !array {
		return nil // a volatile array still has its length checked
	}
	switch w := want.(type) {
	case map[string]any:
		h := have.(map[string]any)
		for k, v := range w {
			hv, ok := h[k]
			if !ok {
				return fmt.Errorf("%s.%s: in the README, not in the answer", path, k)
			}
			if err := match(path+"."+k, v, hv); err != nil {
				return err
			}
		}
		for k := range h {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("%s.%s: in the answer, not in the README", path, k)
			}
		}
	case []any:
		h := have.([]any)
		if len(w) != len(h) {
			return fmt.Errorf("%s: README shows %d items, the answer has %d", path, len(w), len(h))
		}
		for k := range w {
			if err := match(fmt.Sprintf("%s[%d]", path, k), w[k], h[k]); err != nil {
				return err
			}
		}
	default:
		if want != have {
			return fmt.Errorf("%s: README shows %v, the answer has %v", path, want, have)
		}
	}
	return nil
}

// TestMatchCatchesDifferences: the README check can fail.
func TestMatchCatchesDifferences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		want, have string
		ok         bool
	}{
		{`{"status":409,"id":"a"}`, `{"status":409,"id":"b"}`, true},
		{`{"status":409,"id":"a"}`, `{"status":409,"id":"b","x":1}`, false},
		{`{"outputs":[1,2]}`, `{"outputs":[1,2,3]}`, false},
		{`{"status":409}`, `{"status":422}`, false},
		{`{"detail":"must be at most 1"}`, `{"detail":"must be greater than 0 and at most 1"}`, false},
		{`{"estimate":1.5}`, `{"estimate":2.5}`, true},
		{`{"estimate":1.5}`, `{"estimate":"2.5"}`, false},
		{`{"errors":[{"field":"a"}]}`, `{"errors":[]}`, false},
		{`{"gone":1}`, `{}`, false},
	} {
		var w, h any
		if json.Unmarshal([]byte(tc.want), &w) != nil || json.Unmarshal([]byte(tc.have), &h) != nil {
			t.Fatal("bad case")
		}
		if err := match("", w, h); (err == nil) != tc.ok {
			t.Errorf("match(%s, %s) = %v, want ok %v", tc.want, tc.have, err, tc.ok)
		}
	}
}

// TestWorkedExample: sample.json is what gen writes (the README's
// description of it holds), and run.sh reproduces the worked example: the
// release reports most of the 561 sampled keys, and the MLE estimate of the
// a/ prefix sum lies where the README says (below the truth 89219, which the
// missing low-frequency keys bias it from), inside its own interval.
func TestWorkedExample(t *testing.T) {
	t.Parallel()
	gen := exec.Command("go", "run", "./gen")
	var stderr bytes.Buffer
	gen.Stderr = &stderr
	fresh, err := gen.Output()
	if err != nil {
		t.Fatalf("go run ./gen: %v\n%s", err, stderr.Bytes())
	}
	committed, err := os.ReadFile("sample.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("examples/sample.json is stale: run `go run ./examples/gen > examples/sample.json`")
	}
	if !strings.Contains(stderr.String(), "561 of 2000 keys sampled; truth of the a/ prefix sum: 89219") {
		t.Fatalf("the README's numbers changed: %s", stderr.Bytes())
	}

	cmd := exec.Command("sh", "run.sh")
	cmd.Env = append(os.Environ(), "PWSD_URL=http://"+server(t))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var id string
	var reported int
	if _, err := fmt.Sscanf(lines[0], "sample %s %d of 561 sampled keys reported", &id, &reported); err != nil || reported < 300 || reported > 561 {
		t.Fatalf("run.sh: %q (%v), want most of the 561 keys reported", lines[0], err)
	}
	var est struct {
		Estimator     string  `json:"estimator"`
		Estimate      float64 `json:"estimate"`
		StandardError float64 `json:"standard_error"`
		Interval      struct {
			Level, Lower, Upper float64
		} `json:"interval"`
	}
	if len(lines) < 3 || json.Unmarshal([]byte(lines[2]), &est) != nil {
		t.Fatalf("run.sh: no MLE estimate in %q", out)
	}
	// The MLE's SE is about 1300 and the missing keys bias it by about -8000.
	if est.Estimator != "mle" || est.Estimate < 75000 || est.Estimate > 89219+5*est.StandardError ||
		!(est.Interval.Lower <= est.Estimate && est.Estimate <= est.Interval.Upper) || est.Interval.Level != 0.95 {
		t.Fatalf("run.sh: estimate %+v, want about 81000 inside its 95%% interval", est)
	}
	t.Logf("worked example: %d keys reported, estimate %.0f ± %.0f (truth 89219)", reported, est.Estimate, est.StandardError)
}
