package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pwsd/pwsd/api"
	"github.com/pwsd/pwsd/internal/service"
	"github.com/pwsd/pwsd/internal/store"
)

// TestTableRequestPastTimeoutAnswers503: a frequencies request whose work
// (small epsilon: L about 14,000, rows to 10^5) far exceeds the request
// timeout answers 503 once the timeout passes, instead of computing on (the
// computation itself stops too: see the service's
// TestAbandonedComputationStops). Nothing here reads the clock: without the
// timeout the request would compute for minutes and answer 200.
func TestTableRequestPastTimeoutAnswers503(t *testing.T) {
	t.Parallel()
	// The up-front work bound (PWSD_MAX_TABLE_WORK) would refuse this request
	// at once; it is switched off here to test the timeout behind it.
	svc, err := service.New(service.Config{Store: store.NewMemory(), MaxTableWork: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, nil, withLimits(func(l *api.Limits) { l.RequestTimeout = 200 * time.Millisecond }),
		func(d *api.Deps) { d.Service = svc })
	for _, m := range []string{"discrete", "max_separation"} {
		t.Run(m, func(t *testing.T) {
			res := ts.do(t, http.MethodGet, "/v1/tables/frequencies?epsilon=0.001&delta=0.000001&scheme=none&method="+m+"&frequency=100000", "", "")
			if res.status != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503: %s", res.status, res.body)
			}
		})
	}
}
