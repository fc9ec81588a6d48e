package tablecache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pwsd/pwsd/internal/lru"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// Kept sanitizer rows in the store (issue 37; docs/store.md, "Kept
// sanitizer rows").
//
// A release's draws read sanitizer rows; a sanitize.Table keeps a few of
// them (checkpoints, verified junction rows, rows inside blocks, the
// stationary cycle) from which the others are cheap to reach. Those are
// stored like the estimator chunks, so that a new process (a restart, a
// second instance) starts a parameter set's Table from them rather than
// from row 0:
//
//   - what is stored is the kept rows of a separate Table that walked a
//     public range only (sanitize.Table.WarmUp, up to Config.KeptRowsSteps
//     rows), never the Table the requests read: which rows that one keeps
//     depends on the frequencies asked for, and raw frequencies never reach
//     the store. It is at most Config.KeptRowsBytes long.
//   - it is written behind the first use of a parameter set in a process
//     whose store holds no sound encoding (one warm-up at a time on one
//     goroutine, once the requests' Table of those parameters is quiet:
//     waitQuiet; cancelled by StopOptional, waited for by Wait), and by
//     Prebuild before it answers;
//   - it is read when Sanitizer makes a parameter set's Table, and restored
//     only when sanitize.Table.RestoreKeptRows accepts all of it
//     (checksum, format, algorithm version, parameters, every row's
//     invariants and place, the stationary cycle's steps); a stored
//     encoding that fails is deleted (store.TableDeleter) and written anew
//     by the warm-up, never used.

// Defaults of Config.KeptRowsBytes, and of the service's KeptRowsSteps.
const (
	// DefaultKeptRowsSteps bounds the rows a warm-up computes for the kept
	// rows of one parameter set, in the background (the Zipf workload's
	// eps 0.1, ppswor tau 1e-4 parameters need 711,000 to reach their
	// stationary rows: 0.5 s of a quiet core discrete, 1.9 s
	// max_separation; most parameter sets get there far sooner).
	DefaultKeptRowsSteps = 1 << 20
	// DefaultKeptRowsBytes bounds the stored kept rows of one parameter
	// set.
	DefaultKeptRowsBytes = 12 << 20
)

// keptRowsTimeout bounds one read of stored kept rows when a Table is made
// (on the path of the request that needs the Table: a store that does not
// answer by then leaves the Table to compute its rows).
const keptRowsTimeout = 10 * time.Second

// keptDoneKeys bounds the keys a Cache remembers as stored.
const keptDoneKeys = 4096

// maxKeptPending bounds the parameter sets waiting for their warm-up; more
// are left to a later use.
const maxKeptPending = 64

// keptRows is the Cache's state for kept sanitizer rows: the warm-up's and
// the encoding's bounds (steps 0: off), the parameter sets waiting for the
// background warm-up (running while running), under the Cache's keptMu,
// the keys this process stored or found (bounded, least recently used
// dropped), when it last marked each used (touchKept; bounded alike), and
// the counters of KeptRowsStats.
type keptRows struct {
	steps   int64
	bytes   int
	pending []keptParams
	running bool
	done    *lru.Cache[string, bool]
	touched *lru.Cache[string, int64] // Table key -> when touchKept last marked its kept rows used (UnixNano)

	restored, refused, stepped atomic.Int64
}

// keptParams are the parameters of one warm-up, and the Table of those
// parameters that the requests use (watched for quiet: waitQuiet).
type keptParams struct {
	p     sanitize.Privacy
	s     sanitize.Sampling
	m     sanitize.Method
	watch *sanitize.Table
}

// KeptRowsStats counts the Cache's work on kept sanitizer rows.
type KeptRowsStats struct {
	Restored int64 // Tables that started from stored rows
	Refused  int64 // stored encodings that failed their checks (deleted)
	Stepped  int64 // rows the warm-ups computed
}

// KeptRowsStats returns what the Cache did with kept sanitizer rows; tests
// read it to prove stored rows were read, not recomputed.
func (c *Cache) KeptRowsStats() KeptRowsStats {
	return KeptRowsStats{Restored: c.kept.restored.Load(), Refused: c.kept.refused.Load(), Stepped: c.kept.stepped.Load()}
}

// KeptRowsKey is the key of the stored kept rows of (p, s, m): the
// encoding's format, and the warm-up's bounds that fix its content.
func (c *Cache) KeptRowsKey(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) string {
	return c.Key("kept", p, s, m, Int("format", sanitize.KeptRowsFormat),
		Int("steps", c.kept.steps), Int("bytes", int64(c.kept.bytes)))
}

// restoreKept gives t, a Table Sanitizer has just made, the stored kept
// rows of its parameters when there are some that pass every check, and
// reports whether it did. A stored encoding that fails is deleted; a store
// that cannot be read leaves t as it is. t then computes its rows from
// row 0, as it would without a store.
func (c *Cache) restoreKept(t *sanitize.Table) bool {
	ctx, cancel := context.WithTimeout(context.Background(), keptRowsTimeout)
	defer cancel()
	key := c.KeptRowsKey(t.Privacy(), t.Sampling(), t.Method())
	data, ok, err := c.store.GetTable(ctx, key)
	if err != nil {
		c.log.Warn("reading kept sanitizer rows", "err", err)
		return false
	}
	if !ok {
		return false
	}
	if err := t.RestoreKeptRows(data); err != nil {
		c.kept.refused.Add(1)
		c.log.Warn("stored kept sanitizer rows fail their checks: deleted, to be computed again", "key", key, "err", err)
		if d, ok := c.store.(store.TableDeleter); ok {
			if err := d.DeleteTable(ctx, key); err != nil {
				c.log.Warn("deleting kept sanitizer rows", "key", key, "err", err)
			}
		}
		return false
	}
	c.kept.restored.Add(1)
	c.kept.done.Add(key, true)
	return true
}

// restoredSanitizer returns the Table the cache holds for t's parameters
// once it starts from the stored kept rows: t itself when it did (or kept
// rows are off, or none restore), else a new Table restored from them,
// which replaces t in the cache when t is what the cache holds (requests
// that hold t go on with it). A Table that did not start from the kept rows
// keeps only what its own walks kept (a checkpoint every 256 rows or more,
// no middle rows): the draws of a release would step several times the
// rows they step from the kept ones. Its cached samplers are let go; a
// prebuild comes ahead of a release over other data.
func (c *Cache) restoredSanitizer(t *sanitize.Table) *sanitize.Table {
	if c.kept.steps <= 0 || t.Restored() {
		return t
	}
	fresh, err := sanitize.NewTable(t.Privacy(), t.Sampling(), t.Method())
	if err != nil || !c.restoreKept(fresh) {
		return t
	}
	key := sanitize.Key("table", t.Privacy(), t.Sampling(), t.Method())
	if !c.sanitizers.Replace(key, t, fresh, func(a, b *sanitize.Table) bool { return a == b }) {
		if cur, ok := c.sanitizers.Get(key); ok {
			return cur
		}
		return c.sanitizers.Add(key, fresh)
	}
	return fresh
}

// keepRowsBehind stores, in the background, the kept rows of t's
// parameters unless this process has stored or found them already. The
// warm-ups run one at a time, in the order asked, on one goroutine, until
// StopOptional; each waits until t is quiet (waitQuiet), so that it does not
// slow the request that made t.
func (c *Cache) keepRowsBehind(t *sanitize.Table) {
	p, s, m := t.Privacy(), t.Sampling(), t.Method()
	key := c.KeptRowsKey(p, s, m)
	c.keptMu.Lock()
	defer c.keptMu.Unlock()
	if _, done := c.kept.done.Get(key); done || len(c.kept.pending) >= maxKeptPending {
		return
	}
	for _, w := range c.kept.pending {
		if c.KeptRowsKey(w.p, w.s, w.m) == key {
			return
		}
	}
	c.kept.pending = append(c.kept.pending, keptParams{p, s, m, t})
	if c.kept.running {
		return
	}
	c.kept.running = true
	c.background.Add(1)
	go c.drainWarmUps()
}

// drainWarmUps runs the queued warm-ups until none is left or
// StopOptional.
func (c *Cache) drainWarmUps() {
	defer c.background.Done()
	ctx := labelWork(c.optional, WorkKeptRows)
	for {
		c.keptMu.Lock()
		if len(c.kept.pending) == 0 || c.optional.Err() != nil {
			c.kept.pending, c.kept.running = nil, false
			c.keptMu.Unlock()
			return
		}
		w := c.kept.pending[0]
		c.kept.pending = c.kept.pending[1:]
		c.keptMu.Unlock()
		c.waitQuiet(w.watch)
		if err := c.keepRows(ctx, w.p, w.s, w.m); err != nil && !errors.Is(err, context.Canceled) {
			c.log.Warn("storing kept sanitizer rows", "err", err)
		}
	}
}

// Before a warm-up written behind starts, the Table whose first use queued
// it must have stepped no row for quietFor (checked at most quietChecks
// times, then the warm-up runs anyway). A release steps that Table's rows
// from its first draw to its last chunk; a warm-up beside it, on a second
// goroutine, took 7.4 s of a cold release that took 3.0 s alone (eps 0.1
// max_separation, BenchmarkReleaseAfterRestart). This decides when the
// warm-up runs, never what it computes.
const (
	quietFor    = 250 * time.Millisecond
	quietChecks = 240
)

// waitQuiet waits until t has stepped no row for quietFor, at most
// quietChecks periods, or until StopOptional.
func (c *Cache) waitQuiet(t *sanitize.Table) {
	tick := time.NewTicker(quietFor)
	defer tick.Stop()
	last := t.RowsStepped()
	for range quietChecks {
		select {
		case <-c.optional.Done():
			return
		case <-tick.C:
		}
		n := t.RowsStepped()
		if n == last {
			return
		}
		last = n
	}
}

// keptTouchEvery is how often, at most, touchKept marks one parameter set's
// stored kept rows used.
const keptTouchEvery = time.Minute

// touchKept marks the stored kept rows of (p, s, m) used, in the
// background, at most once every keptTouchEvery, when this process stored
// or read them (kept.done) and the store can mark a table used without
// reading it (store.TableToucher). Sanitizer calls it when it serves the
// set's Table from memory: a process reads the stored rows once, when it
// makes the Table, yet uses them with every release, and the table cache
// evicts the least recently used entries while the warm start reads the
// most recently used (docs/store.md, "The warm start").
func (c *Cache) touchKept(tableKey string, p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) {
	tc, ok := c.store.(store.TableToucher)
	if !ok || c.kept.steps <= 0 {
		return
	}
	// Sanitizer calls this on every request: the time check comes first,
	// under the Table's key it has already made, and the kept rows' key is
	// made only once a minute.
	now := time.Now().UnixNano()
	c.keptMu.Lock()
	defer c.keptMu.Unlock()
	last, seen := c.kept.touched.Get(tableKey)
	if seen && now-last < int64(keptTouchEvery) {
		return
	}
	key := c.KeptRowsKey(p, s, m)
	if _, stored := c.kept.done.Get(key); !stored {
		return
	}
	if seen {
		c.kept.touched.Replace(tableKey, last, now, func(a, b int64) bool { return a == b })
	} else {
		c.kept.touched.Add(tableKey, now)
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		if err := tc.TouchTables(labelWork(c.optional, WorkTouch), []string{key}); err != nil && c.optional.Err() == nil {
			c.log.Warn("marking kept sanitizer rows used", "err", err)
		}
	}()
}

// keepRows stores the kept rows of (p, s, m) unless they are stored: a
// fresh Table's rows after WarmUp (public parameters only), at most
// KeptRowsBytes. Concurrent calls for one parameter set warm up once. With
// kept rows off it does nothing.
func (c *Cache) keepRows(ctx context.Context, p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) error {
	if c.kept.steps <= 0 {
		return nil
	}
	key := c.KeptRowsKey(p, s, m)
	if _, done := c.kept.done.Get(key); done {
		return nil
	}
	_, err := c.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		if _, ok, err := c.store.GetTable(ctx, key); err != nil {
			return nil, fmt.Errorf("reading kept sanitizer rows: %w", err)
		} else if ok {
			return nil, nil // checked when a Table is made (restoreKept)
		}
		t, err := sanitize.NewTable(p, s, m)
		if err != nil {
			return nil, fmt.Errorf("building sanitizer table: %w", err)
		}
		_, err = t.WarmUp(ctx, c.kept.steps)
		c.kept.stepped.Add(t.RowsStepped())
		if err != nil {
			return nil, err
		}
		data := t.KeptRows(c.kept.bytes)
		if data == nil {
			return nil, nil // not even the header fits the bound
		}
		if err := c.store.PutTable(ctx, key, data); err != nil {
			return nil, fmt.Errorf("storing kept sanitizer rows: %w", err)
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	c.kept.done.Add(key, true)
	return nil
}
