package api_test

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestCSVFormulaNeutralised: keys beginning with each character a
// spreadsheet reads as a formula (= + - @ tab CR) are answered quoted with
// a single quote in front, OWASP's neutralisation, and uploading the CSV
// answer again gives the same keys (issue 25, defect 6: they were written
// as they are). Keys that already begin with quotes stay distinct, other
// keys are unchanged, and numeric cells (negative values included) are
// numbers, never prefixed.
func TestCSVFormulaNeutralised(t *testing.T) {
	t.Parallel()
	ts := newServer(t, nil)
	keys := []string{"=HYPERLINK(\"http://x\")", "+1+2", "-3.2", "@SUM(A1)", "\tcmd", "\rcr", "'=quoted", "''+two", "'plain", "plain", "a=b", "with \"quotes\", comma"}
	const q = "?epsilon=0.25&delta=1&scheme=none&method=discrete"
	// upload posts keyCells as a CSV upload asking a CSV answer; it returns
	// the answer's key cells and the stored keys (from the JSON view).
	upload := func(keyCells []string) (cells, stored []string) {
		t.Helper()
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write([]string{"key", "frequency"})
		for _, k := range keyCells {
			_ = w.Write([]string{k, "1"}) // frequency 1: some values are negative tokens
		}
		w.Flush()
		r := ts.do(t, http.MethodPost, "/v1/samples"+q, "text/csv", b.String(), "Accept", "text/csv")
		if r.status != http.StatusCreated {
			t.Fatalf("CSV upload: %d %s", r.status, r.body)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")[1:] {
			if !strings.HasPrefix(line, `"`) {
				t.Fatalf("key cell not quoted: %q", line)
			}
		}
		recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs[1:] {
			for _, num := range rec[1:] {
				if strings.HasPrefix(num, "'") || strings.HasPrefix(num, `"`) {
					t.Fatalf("numeric cell %q neutralised", num)
				}
			}
			cells = append(cells, rec[0])
		}
		var smp sampleResp
		ts.get(t, r.header.Get("Location")).json(t, &smp)
		for _, e := range smp.Elements {
			stored = append(stored, e.Key)
		}
		if len(cells) != len(keyCells) || len(stored) != len(keyCells) {
			t.Fatalf("%d cells, %d stored keys, of %d", len(cells), len(stored), len(keyCells))
		}
		return cells, stored
	}
	cells, stored := upload(keys)
	for i, c := range cells {
		k := stored[i]
		if lead := strings.TrimLeft(k, "'"); strings.IndexByte("=+-@\t\r", lead[0]) >= 0 {
			if c != "'"+k {
				t.Errorf("formula-leading key %q answered as %q", k, c)
			}
		} else if c != k {
			t.Errorf("key %q answered as %q", k, c)
		}
	}
	for _, k := range []string{"=HYPERLINK(\"http://x\")", "+1+2", "-3.2", "@SUM(A1)", "\tcmd", "\rcr", "plain", "'plain"} {
		if !slices.Contains(stored, k) {
			t.Errorf("key %q was not stored as uploaded: %q", k, stored)
		}
	}
	// The answer read back as an upload holds the same keys.
	cells2, stored2 := upload(cells)
	for _, l := range [][]string{cells, stored, cells2, stored2} {
		slices.Sort(l) // elements come in the sample's order, not the upload's
	}
	if !slices.Equal(cells2, cells) || !slices.Equal(stored2, stored) {
		t.Fatalf("round trip: cells %q stored %q, want %q and %q", cells2, stored2, cells, stored)
	}
	// A byte order mark is stripped from the first header cell only.
	for _, tc := range []struct {
		body   string
		status int
	}{{"\uFEFFkey,frequency\na,1\n", 201}, {"key,\uFEFFfrequency\na,1\n", 400}, {"frequency,\uFEFFkey\n1,a\n", 400}} {
		if r := ts.do(t, http.MethodPost, "/v1/samples"+q, "text/csv", tc.body); r.status != tc.status {
			t.Errorf("%q: %d, want %d: %s", tc.body, r.status, tc.status, r.body)
		}
	}
}
