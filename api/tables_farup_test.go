package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pwsd/pwsd/internal/store"
)

// TestFrequencyTableFarUp: one row of the frequencies table at 10^7 and
// 10^9 (eps 0.5, ppswor tau 1e-5), both methods, is a 200 under the default
// limits (it was a 422 "asks for about 1.63e+07 window cells"): the MLE
// contributions are there, each biased-down contribution is null, and the
// answer says so in biased_down_omitted and a note naming the limit. Below
// (10^5) the biased-down contributions are served and nothing is said.
func TestFrequencyTableFarUp(t *testing.T) {
	t.Parallel()
	ts := newServer(t, store.NewMemory())
	for _, m := range []string{"discrete", "max_separation"} {
		for _, f := range []int64{100_000, 10_000_000, 1_000_000_000} {
			r := ts.get(t, fmt.Sprintf("/v1/tables/frequencies?epsilon=0.5&delta=1e-6&scheme=ppswor&threshold=1e-5&method=%s&frequency=%d", m, f))
			var v struct {
				Rows []struct {
					Frequency int64 `json:"frequency"`
					Outcomes  []struct {
						Probability float64  `json:"probability"`
						MLE         float64  `json:"mle_contribution"`
						BiasedDown  *float64 `json:"biased_down_contribution"`
					} `json:"outcomes"`
				} `json:"rows"`
				Omitted bool   `json:"biased_down_omitted"`
				Note    string `json:"note"`
			}
			r.json(t, &v)
			if r.status != 200 || len(v.Rows) != 1 || v.Rows[0].Frequency != f || len(v.Rows[0].Outcomes) == 0 {
				t.Fatalf("%s, %d: %d %.400s", m, f, r.status, r.body)
			}
			far := f > 100_000
			if v.Omitted != far || strings.Contains(v.Note, "PWSD_MAX_TABLE_WORK") != far {
				t.Fatalf("%s, %d: biased_down_omitted %v, note %q", m, f, v.Omitted, v.Note)
			}
			for _, o := range v.Rows[0].Outcomes {
				if !(o.MLE > 0) || !(o.Probability > 0) || (o.BiasedDown == nil) != far {
					t.Fatalf("%s, %d: outcome %+v", m, f, o)
				}
			}
			if far && !strings.Contains(string(r.body), `"biased_down_contribution":null`) {
				t.Fatalf("%s, %d: the omitted contributions are not null: %.300s", m, f, r.body)
			}
		}
	}
}
