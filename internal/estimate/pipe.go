package estimate

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
)

// The generic pipe: a producer goroutine fills batches that a consumer
// takes in order on the caller's goroutine (runPipe). The row pipes built
// on it are rowpipe.go (rows as pieces, for the general builders) and
// densepipe.go (dense rows, for the dense builders).

// pipeBatchRows is how many rows travel together from the sanitizer
// goroutine to the estimator (pipeRows, denseRows.pipeDense).
const pipeBatchRows = 256

// pipeBatchCells bounds the cells (dense masses or pieces) of one batch, so
// that wide rows (small epsilon) travel in small batches: memory in flight
// and rows computed past the consumer's last are bounded.
const pipeBatchCells = 1 << 16

// pipeBatches is how many batches are in flight (being filled, queued,
// being consumed).
const pipeBatches = 4

// takeOrNew pops the last element of *pool (a free list of recycled
// values), or returns a new T when the pool is empty.
func takeOrNew[T any](pool *[]*T) *T {
	if k := len(*pool); k > 0 {
		v := (*pool)[k-1]
		(*pool)[k-1] = nil
		*pool = (*pool)[:k-1]
		return v
	}
	return new(T)
}

// pipe is the hand-over between runPipe's producer goroutine and its
// consumer: batches of type B circulate from free (empty) to full and back.
type pipe[B any] struct {
	ctx             context.Context
	free, full      chan *B
	stop, cancelled atomic.Bool
}

// next reports whether the producer should compute another row: false once
// the consumer wants no more, or ctx is done (then it records that the rows
// stopped for the context).
func (p *pipe[B]) next() bool {
	if p.stop.Load() {
		return false
	}
	if p.ctx.Err() != nil {
		p.cancelled.Store(true)
		return false
	}
	return true
}

// backlog is how many filled batches wait for the consumer.
func (p *pipe[B]) backlog() int { return len(p.full) }

// take waits for an empty batch (the producer clears it).
func (p *pipe[B]) take() *B { return <-p.free }

// send hands a filled batch to the consumer.
func (p *pipe[B]) send(b *B) { p.full <- b }

// runPipe runs produce on a second goroutine, filling at most pipeBatches
// batches ahead, and calls consume with each batch in order in the
// caller's goroutine. consume gets stopped = true once an earlier call
// returned false (it may still recycle what the batch holds) and returns
// false when it wants no more rows; the producer then stops at its next row.
// A panic in produce becomes runPipe's error; a panic in consume leaves the
// producer to finish and exit on its own. runPipe returns produce's error,
// or ctx's error when the rows stopped for the context before consume
// stopped them.
func runPipe[B any](ctx context.Context, produce func(p *pipe[B]) error, consume func(b *B, stopped bool) bool) error {
	return runPipeDrain(ctx, produce, consume, nil)
}

// runPipeDrain is runPipe that, once the producer has ended and every batch
// is consumed, calls leftover (when not nil) with each batch back in the
// free list that the producer did not take again (what the consumer put in
// them for the producer).
func runPipeDrain[B any](ctx context.Context, produce func(p *pipe[B]) error, consume func(b *B, stopped bool) bool, leftover func(b *B)) error {
	p := &pipe[B]{ctx: ctx, free: make(chan *B, pipeBatches), full: make(chan *B, pipeBatches)}
	for range pipeBatches {
		p.free <- new(B)
	}
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("estimate: computing sanitizer rows: panic: %v", r)
			}
			close(p.full)
			errc <- err
		}()
		err = produce(p)
	}()
	drained := false
	defer func() {
		if !drained { // consume panicked: let the producer finish and exit
			p.stop.Store(true)
			go func() {
				for b := range p.full {
					p.free <- b
				}
				<-errc
			}()
		}
	}()
	stopped := false
	for b := range p.full {
		if !consume(b, stopped) && !stopped {
			stopped = true
			p.stop.Store(true)
		}
		p.free <- b
	}
	drained = true
	err := <-errc
	for leftover != nil {
		select {
		case b := <-p.free:
			leftover(b)
			continue
		default:
		}
		break
	}
	if err != nil {
		return err
	}
	if p.cancelled.Load() && !stopped {
		// The rows stopped for the context, not because the source ended.
		return fmt.Errorf("estimate: %w", ctx.Err())
	}
	return nil
}

// rowsKey is the context key of withInlineRows and withPipelinedRows.
type rowsKey struct{}

// withInlineRows returns ctx under which the builders read their rows on
// their own goroutine, as with one available core (tests compare both
// ways without touching GOMAXPROCS).
func withInlineRows(ctx context.Context) context.Context {
	return context.WithValue(ctx, rowsKey{}, true)
}

// withPipelinedRows returns ctx under which the builders read their rows
// on a second goroutine, whatever the number of cores.
func withPipelinedRows(ctx context.Context) context.Context {
	return context.WithValue(ctx, rowsKey{}, false)
}

// rowsInline reports whether builders under ctx read their rows on their
// own goroutine: always under pwsd_reference (reading in line is the
// pipes' reference), else as ctx says (withInlineRows, withPipelinedRows),
// else when only one core is available.
func rowsInline(ctx context.Context) bool {
	if referenceOnly {
		return true
	}
	if v, ok := ctx.Value(rowsKey{}).(bool); ok {
		return v
	}
	return runtime.GOMAXPROCS(0) < 2
}
