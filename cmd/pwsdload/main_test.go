package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/testserver"
)

// TestRunAgainstTheRouter drives the real router (in-memory store) with a
// bounded number of requests: every one is answered, none 5xx, and the
// report counts them all and names each operation it ran.
func TestRunAgainstTheRouter(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	var out bytes.Buffer
	err := run([]string{"-url", srv.URL, "-clients", "2", "-duration", "1h", "-max-requests", "40",
		"-elements", "50", "-events", "50"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`(?m)^requests 40 in .*; 5xx: 0; other non-2xx: map\[\]$`).MatchString(out.String()) {
		t.Fatalf("report does not count 40 requests, all 2xx:\n%s", out.String())
	}
	for _, op := range []string{"sanitize", "estimate", "events"} {
		if !regexp.MustCompile(`(?m)^` + op + ` +\d+ `).MatchString(out.String()) {
			t.Errorf("report has no %s line:\n%s", op, out.String())
		}
	}
}

// TestRunRefusesRemoteTargets: the load generator only ever targets
// loopback, and bad flags are errors, not a run.
func TestRunRefusesRemoteTargets(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-url", "http://example.com:8080"},
		{"-url", "http://10.0.0.1"},
		{"-clients", "many"},
	} {
		var out bytes.Buffer
		if err := run(args, &out); err == nil {
			t.Errorf("%v: ran, want an error", args)
		}
	}
}

// TestReportFailsOn5xx: a run with a 5xx answer fails and says how many.
func TestReportFailsOn5xx(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	rs := []result{{"sanitize", time.Millisecond, 201}, {"estimate", time.Millisecond, 503}, {"events", time.Millisecond, 409}}
	err := report(&out, rs, time.Second, 10, 10)
	if err == nil || !strings.Contains(err.Error(), "1 requests answered 5xx") {
		t.Fatalf("err = %v, want one naming 1 5xx answer", err)
	}
	if !strings.Contains(out.String(), "5xx: 1; other non-2xx: map[409:1]") {
		t.Fatalf("report:\n%s", out.String())
	}
}
