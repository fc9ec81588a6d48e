package tablecache

import (
	"context"
	"fmt"
	"sync"
)

// flight is the cache's one record of the work under way, by key: a
// computation run by do (a table, a run of chunks), or a chunk another
// caller has announced it is building (hold). A caller that needs a key in
// flight waits for it instead of computing it again.
//
// A computation runs under context.WithoutCancel of the first caller's
// context (values kept, cancellation not), so a caller that goes away never
// fails the others; it is cancelled only when every caller waiting for it
// has gone, so abandoned work stops too. A later caller then starts afresh.
type flight struct {
	mu    sync.Mutex
	calls map[string]*call
}

// call is one entry of flight: done is closed when it ends. A held key
// (hold) has no result and no waiters of its own.
type call struct {
	done    chan struct{}
	val     any
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do returns fn's result for key, computed once for all concurrent callers,
// or ctx's error as soon as ctx is done. key must not be one that hold
// registers.
func (g *flight) do(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*call{}
	}
	c, ok := g.calls[key]
	if !ok {
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call{done: make(chan struct{}), cancel: cancel}
		g.calls[key] = c
		go func() {
			defer cancel()
			v, err := callSafely(cctx, fn)
			g.mu.Lock()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
			c.val, c.err = v, err
			g.mu.Unlock()
			close(c.done)
		}()
	}
	c.waiters++
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancel()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
		}
		g.mu.Unlock()
		return nil, ctx.Err()
	}
}

// hold records keys (those not in flight already) as being built by the
// caller and returns the function that marks them done: until then pending
// returns a channel for each of them.
func (g *flight) hold(keys []string) (done func()) {
	c := &call{done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.calls == nil {
		g.calls = map[string]*call{}
	}
	var mine []string
	for _, k := range keys {
		if _, ok := g.calls[k]; !ok {
			g.calls[k] = c
			mine = append(mine, k)
		}
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, k := range mine {
			if g.calls[k] == c {
				delete(g.calls, k)
			}
		}
		close(c.done)
	}
}

// pending returns a channel closed when key's work ends, or nil when none
// is under way.
func (g *flight) pending(key string) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.calls[key]; ok {
		return c.done
	}
	return nil
}

// callSafely runs fn, turning a panic into an error (fn runs on its own
// goroutine, where a panic would end the process).
func callSafely(ctx context.Context, fn func(context.Context) (any, error)) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tablecache: table computation panicked: %v", p)
		}
	}()
	return fn(ctx)
}
