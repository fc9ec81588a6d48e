package tablecache

import (
	"context"
	"runtime/pprof"
)

// WorkLabel is the pprof label key the cache sets on the goroutines of its
// background work, with one of the Work* values below. Goroutines those
// goroutines start inherit it (the chunk builders' workers, the sanitizer's
// draw goroutines, the in-flight group's computations they start), and
// goroutines a request starts do not carry it, so a CPU profile of the
// process (a benchmark's -cpuprofile, scripts/profile_cold.sh) splits into
// the requests' own work and the background's:
//
//	go tool pprof -tagignore 'pwsd.work=.' cpu.prof   # the requests
//	go tool pprof -tagfocus 'pwsd.work=prefetch' cpu.prof
//
// docs/performance.md, "The profiles behind it", shows how the issue 34
// profiles use it.
const WorkLabel = "pwsd.work"

// The values of WorkLabel, one per kind of background work.
const (
	// WorkPrefetch is Prefetch: chunks built ahead of the estimates that
	// follow a release.
	WorkPrefetch = "prefetch"
	// WorkWriteBehind is the store writes queued by writeBehind.
	WorkWriteBehind = "write-behind"
	// WorkKeptRows is the kept rows' warm-ups and their store writes.
	WorkKeptRows = "kept-rows"
	// WorkWarmStart is WarmStart: kept rows and chunks read back after a
	// restart.
	WorkWarmStart = "warm-start"
	// WorkTouch is the store's last-use marks on kept rows.
	WorkTouch = "touch"
)

// labelWork labels the calling goroutine (and the goroutines it starts
// from now on) with WorkLabel=work, and returns ctx carrying the label,
// for the store calls of that work. Call it first thing in a background
// goroutine.
func labelWork(ctx context.Context, work string) context.Context {
	ctx = pprof.WithLabels(ctx, pprof.Labels(WorkLabel, work))
	pprof.SetGoroutineLabels(ctx)
	return ctx
}
