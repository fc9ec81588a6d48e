package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/lru"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// algorithmVersion prefixes every cached table's key: a binary whose maths
// changed (either package's AlgorithmVersion) never serves a table computed
// by an older one, from memory or from the store.
const algorithmVersion = sanitize.AlgorithmVersion + "+" + estimate.AlgorithmVersion

// cacheKeyFormat is the version of the cache keys' layout. Changing the
// layout changes it, so that no key of an older layout is ever read as one
// of the new.
const cacheKeyFormat = "k2"

// keyPart is one parameter of a cached table beyond its sanitizer's.
type keyPart struct{ name, value string }

func intPart(name string, v int64) keyPart { return keyPart{name, strconv.FormatInt(v, 10)} }

func strPart(name, v string) keyPart { return keyPart{name, v} }

// rangePart is the range [from, to] of frequencies a table covers.
func rangePart(from, to int64) keyPart {
	return keyPart{"range", strconv.FormatInt(from, 10) + "-" + strconv.FormatInt(to, 10)}
}

// tableKey is the one builder of the keys of the table cache and the
// estimator cache: the key layout's version, the service's algorithm
// version, the table's kind with its sanitizer's canonical parameters
// (sanitize.Key; m is empty for tables that do not depend on the method),
// then the further parameters in order, each as |name=value.
func (s *Service) tableKey(kind string, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, parts ...keyPart) string {
	var b strings.Builder
	b.WriteString(cacheKeyFormat)
	b.WriteByte('|')
	b.WriteString(s.version)
	b.WriteByte('|')
	b.WriteString(sanitize.Key(kind, p, smp, m))
	for _, part := range parts {
		b.WriteString("|" + part.name + "=" + part.value)
	}
	return b.String()
}

// tableRegistry keeps the most recently used sanitizer tables in memory, so
// that their checkpoints and stationary rows are reused across requests.
// Concurrent first requests for one table build it once.
type tableRegistry struct {
	cache *lru.Cache[string, *sanitize.Table]
}

func newTableRegistry(max int) *tableRegistry {
	return &tableRegistry{cache: lru.New[string, *sanitize.Table](int64(max), nil)}
}

// get returns the table for (p, s, m), building it on first use (cheap:
// rows are computed on demand).
func (r *tableRegistry) get(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) (*sanitize.Table, error) {
	key := sanitize.Key("table", p, s, m)
	if t, ok := r.cache.Get(key); ok {
		return t, nil
	}
	t, err := sanitize.NewTable(p, s, m)
	if err != nil {
		return nil, fmt.Errorf("building sanitizer table: %w", err)
	}
	return r.cache.Add(key, t), nil
}

// flightGroup runs one computation per key at a time and lets every caller
// wait for it on its own context. The computation runs under
// context.WithoutCancel of the first caller's context (values kept,
// cancellation not), so a caller that goes away never fails the others; it
// is cancelled only when every caller waiting for it has gone, so abandoned
// work stops too. A later caller then starts afresh.
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

type flightCall struct {
	done    chan struct{}
	val     any
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do returns fn's result for key, computed once for all concurrent callers,
// or ctx's error as soon as ctx is done.
func (g *flightGroup) do(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*flightCall{}
	}
	c, ok := g.calls[key]
	if !ok {
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &flightCall{done: make(chan struct{}), cancel: cancel}
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

// callSafely runs fn, turning a panic into an error (fn runs on its own
// goroutine, where a panic would end the process).
func callSafely(ctx context.Context, fn func(context.Context) (any, error)) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("service: table computation panicked: %v", p)
		}
	}()
	return fn(ctx)
}

// cached is cachedCtx for a computation that does not take a context.
func cached[T any](ctx context.Context, s *Service, key string, compute func() (T, error)) (T, error) {
	return cachedCtx(ctx, s, key, func(context.Context) (T, error) { return compute() })
}

// cachedCtx returns the table stored under key (built by tableKey) in the store, or computes it,
// stores it and returns it. Tables are pure functions of their canonical key
// (which carries the algorithm version), so identical parameters never
// recompute — across requests, restarts and replicas sharing a database —
// and concurrent first requests compute once. compute receives a context
// that is cancelled only when every request waiting for it has gone.
func cachedCtx[T any](ctx context.Context, s *Service, key string, compute func(context.Context) (T, error)) (T, error) {
	var zero T
	v, err := s.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		if data, ok, err := s.store.GetTable(ctx, key); err != nil {
			return nil, fmt.Errorf("reading table cache: %w", err)
		} else if ok {
			var t T
			if err := decodeStrict(data, &t); err == nil {
				return t, nil
			}
			s.log.Warn("ignoring undecodable cached table", "key", key)
		}
		s.computed.Add(1)
		t, err := compute(ctx)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("encoding table: %w", err)
		}
		if err := s.store.PutTable(ctx, key, data); err != nil {
			return nil, fmt.Errorf("caching table: %w", err)
		}
		return t, nil
	})
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}
