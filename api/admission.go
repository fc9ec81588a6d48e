package api

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// admission bounds the heavy requests in flight, by count and by body
// bytes, so that a burst of large samples or expensive tables is answered
// 503 with Retry-After instead of driving the machine into swap.
type admission struct {
	mu       sync.Mutex
	cond     chan struct{} // closed and replaced whenever a slot frees
	running  int
	bytes    int64
	maxRun   int
	maxBytes int64
	wait     time.Duration
}

func newAdmission(l Limits) *admission {
	return &admission{cond: make(chan struct{}), maxRun: l.MaxHeavyRequests, maxBytes: l.MaxInflightBytes, wait: l.AdmissionWait}
}

// acquire waits up to a.wait for room for a request of n body bytes.
func (a *admission) acquire(ctx context.Context, n int64) bool {
	deadline := time.NewTimer(a.wait)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		if a.running == 0 || (a.running < a.maxRun && a.bytes+n <= a.maxBytes) {
			a.running++
			a.bytes += n
			a.mu.Unlock()
			return true
		}
		c := a.cond
		a.mu.Unlock()
		select {
		case <-c:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (a *admission) release(n int64) {
	a.mu.Lock()
	a.running--
	a.bytes -= n
	close(a.cond)
	a.cond = make(chan struct{})
	a.mu.Unlock()
}

// middleware admits the requests of a heavy route (see cost) within the
// bounds, else answers 503 with Retry-After. routes puts it in front of the
// heavy routes only.
func (a *admission) middleware(next http.Handler) http.Handler {
	if a.maxRun <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.ContentLength
		if n < 0 {
			n = a.maxBytes / int64(a.maxRun)
		}
		if !a.acquire(r.Context(), n) {
			unavailable(w, time.Second, "pwsd is at its limit of concurrent heavy requests (PWSD_MAX_HEAVY_REQUESTS, PWSD_MAX_INFLIGHT_BYTES); retry later")
			return
		}
		defer a.release(n)
		next.ServeHTTP(w, r)
	})
}
