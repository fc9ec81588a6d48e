package tablecache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// The warm start (issue 37; docs/store.md, "The warm start").
//
// A new process (a restart, a deploy, a second instance) finds in the store
// the kept sanitizer rows and the MLE chunks of the parameter sets released
// before, but holds none of them in memory: its first release of each reads
// them on its own path (the kept rows when its Table is made, the chunks
// when its values are estimated). WarmStart reads them ahead, in the
// background, for the parameter sets used last: those whose stored kept
// rows (key kind "kept") the store's table cache read or stored last
// (store.TableLister; table_cache's last_used in PostgreSQL). For each, most
// recent first, it
//
//   - restores a Table of the parameters from the stored kept rows (the
//     checks of restoreKept: an encoding that fails is deleted, as on a
//     request's path) and caches it as Sanitizer would;
//   - finds the Table's SupportedFrom (rows 1 to a few L);
//   - reads the set's most recently used stored chunks of the given gs into
//     the memory cache, 512 keys a statement, within its share of half the
//     chunk cache's bound (Config.Bytes/2, counted in stored bytes and in
//     the decoded chunks' memory cost): the sets found share it, each an
//     equal part of what the sets before it left (warmShare), so that one
//     set found takes all of it and N sets at most Config.Bytes/(2 N) each
//     when each fills its part;
//   - computes the Table's anchored rows at the places the set's last
//     release stored (anchors.go), in memory.
//
// It reads only what the store holds (public parameters, tables built from
// them, chunks at sanitized values' places, places below published
// estimates) and writes nothing. It runs on one goroutine, and yields to
// the requests (yield) before every unit of its work: a listing, one
// restore, one SupportedFrom, one batch of chunks, one Anchor. A request
// never waits for it: it reads what the warm start has not yet read
// itself, as it would without it, and the Tables and chunks it finds are
// those it would have read (their rows and values are the same bit for
// bit). StopOptional cancels it; Wait waits for it.

// warmListFactor is how many stored kept-rows entries the warm start lists
// per parameter set it warms: entries of other settings of the kept rows
// (Config.KeptRowsSteps, KeptRowsBytes) share the listing's prefix.
const warmListFactor = 4

// maxWarmChunks bounds the chunk keys the warm start lists per parameter
// set (a Zipf release reads about 1,100).
const maxWarmChunks = 1 << 14

// warmStart counts the warm start's work.
type warmStart struct {
	sets, chunks, chunkBytes, anchored atomic.Int64
}

// WarmStartStats counts what the warm start did.
type WarmStartStats struct {
	Sets       int64 // parameter sets whose Table it restored (or found made)
	Chunks     int64 // chunks it read from the store into memory
	ChunkBytes int64 // their memory cost (estimate.Chunk.SizeBytes)
	Anchored   int64 // rows it anchored at stored places (anchors.go)
}

// WarmStartStats returns what the warm start did; tests read it.
func (c *Cache) WarmStartStats() WarmStartStats {
	return WarmStartStats{Sets: c.warm.sets.Load(), Chunks: c.warm.chunks.Load(), ChunkBytes: c.warm.chunkBytes.Load(), Anchored: c.warm.anchored.Load()}
}

// WarmStart starts, in the background, the warm start of the sets
// parameter sets used last, reading their chunks of gs (see above). It
// does nothing when sets is 0, when kept rows are off (Config.KeptRowsSteps
// 0: there is nothing to restore) or when the store cannot list its
// tables. Call it once, when the process starts.
func (c *Cache) WarmStart(sets int, gs []estimate.G) {
	lister, batcher, ok := c.chunkLister()
	if sets <= 0 || c.kept.steps <= 0 || !ok {
		return
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		if err := c.warmStart(labelWork(c.optional, WorkWarmStart), lister, batcher, sets, gs); err != nil && !errors.Is(err, context.Canceled) {
			c.log.Warn("warm start", "err", err)
		}
		w := c.WarmStartStats()
		c.log.Info("warm start done", "sets", w.Sets, "chunks", w.Chunks, "chunk_bytes", w.ChunkBytes)
	}()
}

// warmStart runs the warm start (WarmStart) until done or ctx ends.
func (c *Cache) warmStart(ctx context.Context, lister store.TableLister, batcher store.TableBatcher, sets int, gs []estimate.G) error {
	if err := c.yield(ctx); err != nil {
		return err
	}
	uses, err := lister.RecentTables(ctx, c.keyHead()+"kept|", warmListFactor*sets)
	if err != nil {
		return fmt.Errorf("listing kept sanitizer rows: %w", err)
	}
	type set struct {
		p sanitize.Privacy
		s sanitize.Sampling
		m sanitize.Method
	}
	var found []set
	for _, u := range uses {
		if len(found) == sets {
			break
		}
		if p, s, m, ok := c.keptParams(u.Key); ok {
			found = append(found, set{p, s, m})
		}
	}
	left := c.chunkBytes / 2
	for n, f := range found {
		p, s, m := f.p, f.s, f.m
		if err := c.yield(ctx); err != nil {
			return err
		}
		t := c.warmTable(p, s, m)
		if t == nil {
			continue
		}
		c.warm.sets.Add(1)
		if err := c.yield(ctx); err != nil {
			return err
		}
		if _, err := c.SupportedFrom(ctx, t); err != nil {
			return err
		}
		read, err := c.warmChunks(ctx, lister, batcher, t, gs, warmShare(left, len(found)-n), true)
		if err != nil {
			return err
		}
		left -= read
		if _, err := c.anchorTable(ctx, t, true); err != nil {
			return err
		}
	}
	return nil
}

// warmShare returns the chunk bytes the warm start reads for the next of
// sets parameter sets still to warm when left bytes of its half of the
// chunk cache are left: an equal part, so that what one set does not use
// goes to those after it.
func warmShare(left int64, sets int) int64 {
	return left / int64(max(sets, 1))
}

// keptParams returns the parameters of key, the key of stored kept rows,
// when it is one of this Cache's (KeptRowsKey of them, with its settings).
func (c *Cache) keptParams(key string) (sanitize.Privacy, sanitize.Sampling, sanitize.Method, bool) {
	rest, ok := strings.CutPrefix(key, c.keyHead())
	cut := strings.LastIndex(rest, "|format=")
	if !ok || cut < 0 {
		return sanitize.Privacy{}, sanitize.Sampling{}, "", false
	}
	p, s, m, err := sanitize.ParseKey("kept", rest[:cut])
	if err != nil || c.KeptRowsKey(p, s, m) != key {
		return sanitize.Privacy{}, sanitize.Sampling{}, "", false
	}
	return p, s, m, true
}

// warmTable returns the cached Table of (p, s, m): the one a request made
// meanwhile, or a new one restored from the stored kept rows, cached as
// Sanitizer caches it; nil when none restores.
func (c *Cache) warmTable(p sanitize.Privacy, s sanitize.Sampling, m sanitize.Method) *sanitize.Table {
	key := sanitize.Key("table", p, s, m)
	if t, ok := c.sanitizers.Get(key); ok {
		return t
	}
	t, err := sanitize.NewTable(p, s, m)
	if err != nil || !c.restoreKept(t) {
		return nil
	}
	return c.sanitizers.Add(key, t)
}

// warmChunks reads into memory the most recently used stored chunks of gs
// over t's parameters that memory lacks, a batch at a time, at most budget
// bytes of them (stored, and decoded), and returns the memory cost of those
// it read. In the background (the warm start) it yields to the requests
// before each batch; a prebuild reads them in its own request.
func (c *Cache) warmChunks(ctx context.Context, lister store.TableLister, batcher store.TableBatcher, t *sanitize.Table, gs []estimate.G, budget int64, background bool) (int64, error) {
	if err := c.yieldIf(ctx, background); err != nil {
		return 0, err
	}
	p, s, m := t.Privacy(), t.Sampling(), t.Method()
	uses, err := lister.RecentTables(ctx, c.Key("chunk", p, s, m, Int("format", estimate.ChunkFormat))+"|", maxWarmChunks)
	if err != nil {
		return 0, fmt.Errorf("listing chunks: %w", err)
	}
	size := estimate.ChunkSize(p)
	keyers := c.chunkKeysOfAll(t, gs, size)
	var wants []chunkWant
	listed := int64(0)
	for _, u := range uses {
		w, ok := chunkWantOf(keyers, gs, u.Key)
		if !ok {
			continue
		}
		if _, ok := c.chunks.Get(w.key); ok {
			continue
		}
		if listed+u.Size > budget {
			break
		}
		listed += u.Size
		wants = append(wants, w)
	}
	loaded := int64(0)
	for lo := 0; lo < len(wants); lo += c.chunkBatch {
		if err := c.yieldIf(ctx, background); err != nil {
			return loaded, err
		}
		part := wants[lo:min(lo+c.chunkBatch, len(wants))]
		n, cost, full, err := c.readChunks(ctx, batcher, size, part, budget-loaded)
		if err != nil {
			return loaded, err
		}
		loaded += cost
		c.warm.chunks.Add(int64(n))
		c.warm.chunkBytes.Add(cost)
		if full {
			break
		}
	}
	return loaded, nil
}

// chunkWantOf returns the chunk whose key is key (chunkKeys.at of one of
// keyers, whose g is gs' at the same place), or false.
func chunkWantOf(keyers []chunkKeys, gs []estimate.G, key string) (chunkWant, bool) {
	for n, ck := range keyers {
		if k, estimatesOnly, ok := ck.index(key); ok {
			return chunkWant{key, gs[n], k, !estimatesOnly}, true
		}
	}
	return chunkWant{}, false
}

// yieldIf is yield for background work, and nothing for work a request
// does itself.
func (c *Cache) yieldIf(ctx context.Context, background bool) error {
	if !background {
		return nil
	}
	return c.yield(ctx)
}

// chunkLister returns the store as a lister of its cached tables and a
// batch reader, which the warm start and a prebuild read the most recently
// used chunks through (warmChunks), or false when it is not both.
func (c *Cache) chunkLister() (store.TableLister, store.TableBatcher, bool) {
	lister, canList := c.store.(store.TableLister)
	batcher, canBatch := c.store.(store.TableBatcher)
	return lister, batcher, canList && canBatch
}
