package tablecache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
)

// MLE answers of frequencies releases come from estimate.Chunks: the MLE
// estimator table cut into stretches of ChunkSize frequencies, each built
// from the sanitizer rows near it (rows by restart make those cheap at any
// frequency) and kept in memory and in the store under its canonical
// parameters, so a parameter set released every day never computes a chunk
// twice. A release needs the chunks holding its values and, for error bars,
// those holding its keys' MLE frequencies (about L above the values).

// runWorkers is how many runs of chunks one read builds at once.
const runWorkers = 2

// Read says how ChunkSets may answer.
type Read struct {
	// EstimatesOnly lets the chunks hold their tokens and estimates alone
	// (for answers that read no statistics: a value's a_j, a key's MLE
	// frequency), which for Algorithm 5 costs markedly less
	// (estimate.ChunkAsk.EstimatesOnly).
	EstimatesOnly bool
	// MaxWork, when positive, bounds the chunk work (RunWork's window
	// cells) the read may start; above it the chunks are built in the
	// background (Prefetch) and the read fails with a *WarmingError naming
	// Setting, the configuration that set the bound.
	MaxWork int64
	Setting string
	// StatsAt names sanitized values (a release's) whose MLE frequencies'
	// statistics the chunk runs this read builds collect on the way
	// (estimate.ChunkAsk.StatsAt, with EstimatesOnly), kept in memory for
	// StatsAt: the release's first estimate then reads them instead of
	// building the chunks that hold those frequencies.
	StatsAt []float64
	// background marks Prefetch's reads: they build one run at a time and
	// start none while requests run (Busy), leaving the cores to the
	// requests (the estimate GET that follows a release).
	background bool
}

// WarmingError says a read was not served because what it reads is being
// computed in the background (the API's 503 with Retry-After).
type WarmingError struct{ Msg string }

func (e *WarmingError) Error() string { return e.Msg }

// RunWork is the work model of a run of consecutive chunks of size size, in
// window cells: start for the run (a restart's warm-up and two windows) and
// chunk for each of its chunks, all times the window L + 1. A release's
// admission and Read.MaxWork both count by it.
func RunWork(p sanitize.Privacy, size int64) (start, chunk float64) {
	window := math.Ceil(sanitize.L(p)) + 1
	return window * (float64(sanitize.RestartCost(p)) + 2*window), window * float64(size)
}

// chunkKey is the key of chunk k of (g, MLE) over t, with its statistics,
// or with estimatesOnly the key of its tokens and estimates alone.
func (c *Cache) chunkKey(t *sanitize.Table, g estimate.G, size, k int64, estimatesOnly bool) string {
	return c.chunkKeysOf(t, g, size).at(k, estimatesOnly)
}

// chunkKeys makes the keys of the chunks of one g and size over one table:
// the part they share (Key's parameters, formatted once), then each
// chunk's index. A request reads thousands of chunk keys, and formatting
// every key's parameters anew was a third of an estimate GET's time.
type chunkKeys struct{ prefix string }

// chunkKeysOf returns the chunk keys of g and size over t.
func (c *Cache) chunkKeysOf(t *sanitize.Table, g estimate.G, size int64) chunkKeys {
	return chunkKeys{c.Key("chunk", t.Privacy(), t.Sampling(), t.Method(), Int("format", estimate.ChunkFormat),
		Str("g", g.String()), Int("size", size))}
}

// at is the key of chunk k (chunkKey), Key's last part appended to the
// shared ones (TestChunkKeysAreKeys).
func (ck chunkKeys) at(k int64, estimatesOnly bool) string {
	key := ck.prefix + Int("k", k).suffix()
	if estimatesOnly {
		key += "|estimates-only"
	}
	return key
}

// index returns the index of the chunk whose key is key, and whether the
// key is the estimates-only form, when key is one of ck's (at gives it
// back exactly).
func (ck chunkKeys) index(key string) (k int64, estimatesOnly, ok bool) {
	rest, found := strings.CutPrefix(key, ck.prefix+Part{"k", ""}.suffix())
	if !found {
		return 0, false, false
	}
	rest, estimatesOnly = strings.CutSuffix(rest, "|estimates-only")
	k, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || ck.at(k, estimatesOnly) != key {
		return 0, false, false
	}
	return k, estimatesOnly, true
}

// chunkKeysOfAll returns chunkKeysOf for each of gs.
func (c *Cache) chunkKeysOfAll(t *sanitize.Table, gs []estimate.G, size int64) []chunkKeys {
	out := make([]chunkKeys, len(gs))
	for n, g := range gs {
		out[n] = c.chunkKeysOf(t, g, size)
	}
	return out
}

// ChunkSets returns, for each g, the MLE chunk set over t holding the
// chunks ks (in any order, repeats allowed): each chunk from memory, else
// from the store, else built. Chunks another call is building are waited
// for. Missing chunks with consecutive indices are built in one pass over
// their rows (every g at once), two runs at a time, and written to the
// store in the background (the store is a cache: a failed write costs a
// rebuild later, never an answer). Errors of the builds are estimate's,
// for the caller to map.
func (c *Cache) ChunkSets(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64, r Read) ([]*estimate.ChunkSet, error) {
	if !r.background {
		defer c.Busy()()
	}
	size := estimate.ChunkSize(t.Privacy())
	from, err := c.SupportedFrom(ctx, t)
	if err != nil {
		return nil, err
	}
	sets := make([]*estimate.ChunkSet, len(gs))
	for n, g := range gs {
		sets[n] = &estimate.ChunkSet{G: g, Size: size, Chunks: make(map[int64]*estimate.Chunk), Supported: from}
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	keyers := c.chunkKeysOfAll(t, gs, size)
	collect := func(ks []int64) (missing []int64, err error) {
		batched, err := c.loadStoredChunks(ctx, keyers, gs, size, ks, r.EstimatesOnly)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			have := true
			for n, g := range gs {
				ch, err := c.storedChunk(ctx, keyers[n], g, size, k, r.EstimatesOnly, batched)
				if err != nil {
					return nil, err
				}
				if ch == nil {
					have = false
					break
				}
				sets[n].Chunks[k] = ch
			}
			if !have {
				missing = append(missing, k)
			}
		}
		return missing, nil
	}
	missing, err := collect(ks)
	if err != nil {
		return nil, err
	}
	// Chunks another request is building in the same form (a concurrent
	// release, a GET waiting for a release's background build) are waited
	// for, not built twice. A request for estimates only does not wait for
	// a build with statistics: building its own costs less than waiting.
	waited := false
	for _, k := range missing {
		for n := range gs {
			if ch := c.flight.pending(keyers[n].at(k, r.EstimatesOnly)); ch != nil {
				select {
				case <-ch:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				waited = true
			}
		}
	}
	if waited {
		if missing, err = collect(missing); err != nil {
			return nil, err
		}
	}
	runs := chunkRuns(missing, estimate.MaxChunkRun(t.Privacy(), size))
	if err := c.checkWork(t, gs, size, runs, missing, r); err != nil {
		return nil, err
	}
	// Each run is marked as under construction while a worker builds it,
	// so that a request arriving meanwhile waits for that run rather than
	// building it too; a run still queued is not, and is skipped when
	// another request built it meanwhile (a GET needs the one run its
	// keys lie in, not the whole prefetch queued ahead of it).
	runKeys := func(run [2]int64) []string {
		var keys []string
		for k := run[0]; k < run[0]+run[1]; k++ {
			for n := range gs {
				keys = append(keys, keyers[n].at(k, r.EstimatesOnly))
			}
		}
		return keys
	}
	var statsAt []float64
	if r.EstimatesOnly && len(r.StatsAt) > 0 {
		statsAt = slices.Sorted(slices.Values(r.StatsAt))
	}
	built := make([][][]*estimate.Chunk, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	workers := runWorkers
	if r.background {
		workers = 1
	}
	for range min(workers, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				if r.background {
					if errs[n] = c.yield(ctx); errs[n] != nil {
						continue
					}
				}
				if built[n] = c.memoryRun(ctx, t, gs, size, runs[n], r.EstimatesOnly); built[n] != nil {
					continue
				}
				done := c.flight.hold(runKeys(runs[n]))
				built[n], errs[n] = c.buildRun(ctx, t, gs, size, runs[n][0], runs[n][1], r.EstimatesOnly, valuesIn(statsAt, runs[n], size))
				done()
			}
		}()
	}
	for n := range runs {
		if ctx.Err() != nil {
			break
		}
		next <- n
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for n, run := range built {
		if errs[n] != nil {
			return nil, errs[n]
		}
		for k, cs := range run {
			for m, ch := range cs {
				sets[m].Chunks[runs[n][0]+int64(k)] = ch
			}
		}
	}
	return sets, nil
}

// memoryRun returns the chunks of run {first, count} of every g when memory
// holds all of them (another request built them), else nil.
func (c *Cache) memoryRun(ctx context.Context, t *sanitize.Table, gs []estimate.G, size int64, run [2]int64, estimatesOnly bool) [][]*estimate.Chunk {
	out := make([][]*estimate.Chunk, run[1])
	keyers := c.chunkKeysOfAll(t, gs, size)
	for k := range out {
		out[k] = make([]*estimate.Chunk, len(gs))
		for m, g := range gs {
			ch, _ := c.storedChunk(ctx, keyers[m], g, size, run[0]+int64(k), estimatesOnly, true)
			if ch == nil {
				return nil
			}
			out[k][m] = ch
		}
	}
	return out
}

// chunkRuns groups sorted distinct chunk indices into runs {first, count}
// of consecutive indices, at most max long.
func chunkRuns(ks []int64, max int64) [][2]int64 {
	var runs [][2]int64
	for _, k := range ks {
		if n := len(runs); n > 0 && runs[n-1][0]+runs[n-1][1] == k && runs[n-1][1] < max {
			runs[n-1][1]++
			continue
		}
		runs = append(runs, [2]int64{k, 1})
	}
	return runs
}

// storedChunk returns chunk k of g from memory or the store, or nil: with
// its statistics, or with estimatesOnly possibly without them (a chunk with
// statistics is taken when there is one in the same place). With
// memoryOnly it does not read the store (loadStoredChunks has).
func (c *Cache) storedChunk(ctx context.Context, ck chunkKeys, g estimate.G, size, k int64, estimatesOnly, memoryOnly bool) (*estimate.Chunk, error) {
	keys := storedChunkKeys(ck, k, estimatesOnly)
	// Memory first for every form, then the store.
	for _, key := range keys {
		if ch, ok := c.chunks.Get(key); ok {
			return ch, nil
		}
	}
	if memoryOnly {
		return nil, nil
	}
	for n, key := range keys {
		data, ok, err := c.store.GetTable(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("reading table cache: %w", err)
		}
		if !ok {
			continue
		}
		if ch := c.decodeChunk(key, data, g, size, k, n == 0); ch != nil {
			return ch, nil
		}
	}
	return nil, nil
}

// storedChunkKeys are the keys under which chunk k of g may be stored: with
// its statistics, and with estimatesOnly also without them.
func storedChunkKeys(ck chunkKeys, k int64, estimatesOnly bool) []string {
	keys := []string{ck.at(k, false)}
	if estimatesOnly {
		keys = append(keys, ck.at(k, true))
	}
	return keys
}

// decodeChunk decodes the stored chunk k of g under key into the memory
// cache and returns it, or nil (logged) when it does not decode, is another
// chunk, or lacks the statistics its key promises (withStats).
func (c *Cache) decodeChunk(key string, data []byte, g estimate.G, size, k int64, withStats bool) *estimate.Chunk {
	if ch := c.parseChunk(key, data, g, size, k, withStats); ch != nil {
		return c.chunks.Add(key, ch)
	}
	return nil
}

// parseChunk is decodeChunk without keeping the chunk in memory.
func (c *Cache) parseChunk(key string, data []byte, g estimate.G, size, k int64, withStats bool) *estimate.Chunk {
	ch := &estimate.Chunk{}
	if err := ch.UnmarshalBinary(data); err != nil || ch.Index != k || ch.Size != size || ch.G != g || (withStats && !ch.HasStats()) {
		c.log.Warn("ignoring undecodable cached chunk", "key", key)
		return nil
	}
	return ch
}

// storedChunkBatch is the most chunk keys read from the store at once.
const storedChunkBatch = 512

// loadStoredChunks reads from the store, in batches (store.TableBatcher:
// one round trip per batch where GetTable takes one per key; a release after
// a restart read 1,100 chunk keys one at a time), every form of the chunks
// ks of gs that memory lacks, into memory. It reports whether it did (the
// store reads batches): the caller's storedChunk then needs memory only.
func (c *Cache) loadStoredChunks(ctx context.Context, keyers []chunkKeys, gs []estimate.G, size int64, ks []int64, estimatesOnly bool) (bool, error) {
	b, ok := c.store.(store.TableBatcher)
	if !ok {
		return false, nil
	}
	var wants []chunkWant
	for _, k := range ks {
		for n, g := range gs {
			keys := storedChunkKeys(keyers[n], k, estimatesOnly)
			inMemory := false
			for _, key := range keys {
				if _, ok := c.chunks.Get(key); ok {
					inMemory = true
				}
			}
			if inMemory {
				continue
			}
			for n, key := range keys {
				wants = append(wants, chunkWant{key, g, k, n == 0})
			}
		}
	}
	// The batches go out storedChunkReaders at a time: a release after a
	// restart reads about 1,100 keys, and one statement after the other
	// waited for each round trip in turn.
	var wg sync.WaitGroup
	errs := make([]error, (len(wants)+c.chunkBatch-1)/c.chunkBatch)
	slots := make(chan struct{}, storedChunkReaders)
	for lo := 0; lo < len(wants); lo += c.chunkBatch {
		slots <- struct{}{}
		wg.Add(1)
		go func(n int, part []chunkWant) {
			defer func() { <-slots; wg.Done() }()
			_, _, _, errs[n] = c.readChunks(ctx, b, size, part, math.MaxInt64)
		}(lo/c.chunkBatch, wants[lo:min(lo+c.chunkBatch, len(wants))])
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return true, nil
}

// chunkWant is one stored form of a chunk to read: its key, its g and
// index, and whether the key promises its statistics.
type chunkWant struct {
	key       string
	g         estimate.G
	k         int64
	withStats bool
}

// readChunks reads the chunks part (of size size) from the store in one
// batch into memory, those found sound (decodeChunk) in order until their
// memory cost would pass limit, and returns how many it
// kept, their cost, and whether it stopped at the limit.
func (c *Cache) readChunks(ctx context.Context, b store.TableBatcher, size int64, part []chunkWant, limit int64) (n int, cost int64, full bool, err error) {
	keys := make([]string, len(part))
	for i, w := range part {
		keys[i] = w.key
	}
	got, err := b.GetTables(ctx, keys)
	if err != nil {
		return 0, 0, false, fmt.Errorf("reading table cache: %w", err)
	}
	for i, w := range part {
		if got[i] == nil {
			continue
		}
		ch := c.parseChunk(w.key, got[i], w.g, size, w.k, w.withStats)
		if ch == nil {
			continue
		}
		if cost+ch.SizeBytes() > limit {
			return n, cost, true, nil
		}
		c.chunks.Add(w.key, ch)
		n, cost = n+1, cost+ch.SizeBytes()
	}
	return n, cost, false, nil
}

// storedChunkReaders is how many batches of chunk keys loadStoredChunks
// reads from the store at once.
const storedChunkReaders = 3

// buildRun builds chunks k0 .. k0+n-1 of every g (once under concurrency;
// with estimatesOnly, estimate.ChunkAsk.EstimatesOnly), keeps them in memory
// and writes them to the store in the background.
//
// With statsAt (values inside the run), the statistics the build collects
// at their MLE frequencies are kept in memory (StatsAt). A run another
// call is building is waited for, without them.
func (c *Cache) buildRun(ctx context.Context, t *sanitize.Table, gs []estimate.G, size, k0, n int64, estimatesOnly bool, statsAt []float64) ([][]*estimate.Chunk, error) {
	key := c.chunkKey(t, gs[0], size, k0, estimatesOnly) + "|run=" + strconv.FormatInt(n, 10)
	for _, g := range gs[1:] {
		key += "+" + g.String()
	}
	v, err := c.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		c.computed.Add(1)
		built, err := estimate.Open(ctx, t, estimate.Ask{Chunks: &estimate.ChunkAsk{Gs: gs, Size: size, First: k0, Count: n, EstimatesOnly: estimatesOnly, StatsAt: statsAt}})
		if err != nil {
			return nil, err
		}
		prefixes := make([]string, len(gs))
		for m, g := range gs {
			prefixes[m] = c.statsKeyPrefix(t, g)
		}
		for i, st := range built.StatsAt {
			for m := range gs {
				c.stats.Add(statsKeyAt(prefixes[m], i), st[m])
			}
		}
		run := built.Chunks
		var writes []store.TableEntry
		for _, cs := range run {
			for m, ch := range cs {
				key := c.chunkKey(t, ch.G, size, ch.Index, !ch.HasStats())
				cs[m] = c.chunks.Add(key, ch)
				data, err := ch.MarshalBinary()
				if err != nil {
					return nil, fmt.Errorf("encoding chunk: %w", err)
				}
				writes = append(writes, store.TableEntry{Key: key, Data: data})
			}
		}
		c.writeBehind(writes)
		return run, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([][]*estimate.Chunk), nil
}

// checkWork applies r.MaxWork: the estimate, top, rank and quantile GETs of
// a stored sample build the chunks of its keys that no cache holds (after a
// restart, all of them), as much work as the release itself. Above the
// bound the chunks are built in the background instead (Prefetch) and the
// read is told to come back (*WarmingError): a reader never starts more
// work than its bound, and the sample stays answerable. The work is
// counted by RunWork; public parameters only.
func (c *Cache) checkWork(t *sanitize.Table, gs []estimate.G, size int64, runs [][2]int64, missing []int64, r Read) error {
	if r.MaxWork <= 0 || len(runs) == 0 {
		return nil
	}
	start, chunk := RunWork(t.Privacy(), size)
	work := 0.0
	for _, run := range runs {
		work += start + chunk*float64(run[1])
	}
	if work <= float64(r.MaxWork) {
		return nil
	}
	c.Prefetch(t, gs, missing)
	return &WarmingError{Msg: fmt.Sprintf("the estimator chunks this answer reads are not cached, and computing them (about %.3g window cells) is more than a request of this token may start (%s = %d); they are being computed now: retry in a few seconds, or ask with a writer token", work, r.Setting, r.MaxWork)}
}

// Prefetch builds the chunks ks of gs, with their statistics, on a
// background goroutine: one run at a time, and none while a request is
// under way or within the quiet period after one (Busy: the requests come
// first); one such build at a time (while one runs, others are dropped:
// the reads build what is missing); within a minute and until
// StopOptional. The reads that follow a release then find them cached.
// Public parameters and released values only.
func (c *Cache) Prefetch(t *sanitize.Table, gs []estimate.G, ks []int64) {
	select {
	case c.prefetchers <- struct{}{}:
	default:
		return
	}
	c.background.Add(1)
	go func() {
		defer func() { <-c.prefetchers; c.background.Done() }()
		pctx, cancel := context.WithTimeout(labelWork(c.optional, WorkPrefetch), time.Minute)
		defer cancel()
		if _, err := c.ChunkSets(pctx, t, gs, ks, Read{background: true}); err != nil {
			c.log.Warn("building chunks ahead of estimates", "err", err)
		}
	}()
}

// writeBehind queues entries for the store, written on one background
// goroutine in batches (store.TableBatcher: one transaction each, where
// PutTable takes one per entry), so that a cold release does not wait for
// the store. An entry is dropped only when the queue already holds
// maxWriteBehindBytes (the store is a cache: a dropped entry costs a
// rebuild later). Before issue 37 every run beyond the two being written
// was dropped: on PostgreSQL nine chunks in ten of a release never reached
// the store, and a restart rebuilt them.
func (c *Cache) writeBehind(entries []store.TableEntry) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	for _, e := range entries {
		n := int64(len(e.Key) + len(e.Data))
		if c.writeBytes+n > maxWriteBehindBytes {
			continue
		}
		c.writeQueue = append(c.writeQueue, e)
		c.writeBytes += n
	}
	if c.writing || len(c.writeQueue) == 0 {
		return
	}
	c.writing = true
	c.background.Add(1)
	go c.drainWrites()
}

// maxWriteBehindBytes bounds the entries waiting for the store.
const maxWriteBehindBytes = 64 << 20

// writeBatch is the most entries written in one transaction.
const writeBatch = 256

// drainWrites writes the queued entries until the queue is empty, or
// until StopOptional: a shutdown then waits for the batch being written
// and drops the rest.
func (c *Cache) drainWrites() {
	defer c.background.Done()
	labelled := labelWork(context.Background(), WorkWriteBehind)
	for {
		c.writeMu.Lock()
		batch := c.writeQueue[:min(len(c.writeQueue), writeBatch)]
		if len(batch) == 0 || c.optional.Err() != nil {
			c.writeQueue, c.writeBytes, c.writing = nil, 0, false
			c.writeMu.Unlock()
			return
		}
		c.writeQueue = c.writeQueue[len(batch):]
		for _, e := range batch {
			c.writeBytes -= int64(len(e.Key) + len(e.Data))
		}
		c.writeMu.Unlock()
		ctx, cancel := context.WithTimeout(labelled, time.Minute)
		if err := c.putTables(ctx, batch); err != nil {
			c.log.Warn("caching chunks", "err", err)
		}
		cancel()
	}
}

// putTables stores entries, in one batch when the store can.
func (c *Cache) putTables(ctx context.Context, entries []store.TableEntry) error {
	if b, ok := c.store.(store.TableBatcher); ok {
		return b.PutTables(ctx, entries)
	}
	for _, e := range entries {
		if err := c.store.PutTable(ctx, e.Key, e.Data); err != nil {
			return err
		}
	}
	return nil
}

// SupportedFrom returns the smallest frequency whose privacy part of
// reporting, pi_i/q_i, reaches 1/2 under t (estimate.Table.SupportedFrom's
// rule), or 0. At most 2L + 1 frequencies have pi_i < q_i (Lemma 4.3), so
// the scan from row 1 stops within a few L rows; it is capped at 2^22 rows
// all the same. Public parameters only.
func (c *Cache) SupportedFrom(ctx context.Context, t *sanitize.Table) (int64, error) {
	key := c.Key("supported", t.Privacy(), t.Sampling(), t.Method())
	if v, ok := c.supported.Get(key); ok {
		return v, nil
	}
	smp := t.Sampling()
	var found int64
	err := t.Rows(1, 1<<22, func(r sanitize.Row) bool {
		if r.Frequency%4096 == 0 && ctx.Err() != nil {
			return false
		}
		if q := smp.Q(r.Frequency); q > 0 && r.Pi >= 0.5*q {
			found = r.Frequency
			return false
		}
		return true
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("reporting probabilities: %w", err)
	}
	c.supported.Add(key, found)
	return found, nil
}

// prebuildBatch is how many chunks Prebuild builds at a time.
const prebuildBatch = 256

// Prebuilt says what Prebuild found and built.
type Prebuilt struct {
	ChunkSize int64 // frequencies per chunk (estimate.ChunkSize)
	Chunks    int64 // chunks covering (0, maxFrequency]
	Built     int64 // of which built now (the others were cached)
}

// Prebuild builds the MLE chunks of every g in gs over t, with their
// statistics, that cover the frequencies up to maxFrequency, and keeps
// them in memory and in the store, and stores t's parameters' kept
// sanitizer rows (kept.go) before it answers, so that the first release
// after it, on any instance or after a restart, neither builds the chunks
// nor computes its rows from row 0. The kept rows come first: when t did
// not start from them, a Table restored from them takes t's place in the
// cache (restoredSanitizer), builds the chunks and serves the next release
// of this process. Chunks already cached are not built again. Admission
// (what a prebuild may cost) is the caller's.
func (c *Cache) Prebuild(ctx context.Context, t *sanitize.Table, gs []estimate.G, maxFrequency int64) (Prebuilt, error) {
	if err := c.keepRows(ctx, t.Privacy(), t.Sampling(), t.Method()); err != nil {
		return Prebuilt{}, err
	}
	t = c.restoredSanitizer(t)
	size := estimate.ChunkSize(t.Privacy())
	keyers := c.chunkKeysOfAll(t, gs, size)
	n := estimate.ChunkOf(float64(maxFrequency), size) + 1
	ks := make([]int64, n)
	missing := int64(0)
	for k := range ks {
		ks[k] = int64(k)
		for m, g := range gs {
			ch, err := c.storedChunk(ctx, keyers[m], g, size, int64(k), false, false)
			if err != nil {
				return Prebuilt{}, err
			}
			if ch == nil {
				missing++
				break
			}
		}
	}
	// Built a batch at a time: each batch's chunks go to the caches (memory
	// and store) and are let go before the next, so a prebuild holds one
	// batch, not every chunk up to maxFrequency (issue 31: 8 concurrent
	// prebuilds of 626,483 frequencies peaked at 2.6 GB).
	for lo := 0; lo < len(ks); lo += prebuildBatch {
		if _, err := c.ChunkSets(ctx, t, gs, ks[lo:min(lo+prebuildBatch, len(ks))], Read{}); err != nil {
			return Prebuilt{}, err
		}
	}
	// The chunks a release reads beyond maxFrequency (its values', and
	// those the last release built for the next one): the set's most
	// recently used stored chunks, read into memory as the warm start reads
	// them, at most half the chunk cache, so that the release after a
	// scheduled prebuild reads nothing from the store.
	if lister, batcher, ok := c.chunkLister(); ok {
		if _, err := c.warmChunks(ctx, lister, batcher, t, gs, c.chunkBytes/2, false); err != nil {
			return Prebuilt{}, err
		}
	}
	// The rows the release's draws start from, below the last release's
	// published estimates (anchors.go), as the warm start computes them.
	if _, err := c.anchorTable(ctx, t, false); err != nil {
		return Prebuilt{}, err
	}
	return Prebuilt{ChunkSize: size, Chunks: n, Built: missing}, nil
}

// valuesIn returns the values of sorted vs inside the chunks of run
// {first, count} of size size.
func valuesIn(vs []float64, run [2]int64, size int64) []float64 {
	lo, hi := float64(run[0]*size), float64((run[0]+run[1])*size)
	from, _ := slices.BinarySearch(vs, math.Nextafter(lo, math.Inf(1)))
	to, _ := slices.BinarySearch(vs, math.Nextafter(hi, math.Inf(1)))
	return vs[from:to]
}

// statsKeyPrefix is what the keys of the statistics of g over t's
// parameters share, in the memory of collected statistics (Read.StatsAt):
// the key (Key) without its last part, the frequency, built once per read
// (statsKeyAt appends the part as Key would: TestStatsKeyIsAKey).
func (c *Cache) statsKeyPrefix(t *sanitize.Table, g estimate.G) string {
	return c.Key("stats", t.Privacy(), t.Sampling(), t.Method(), Int("format", estimate.ChunkFormat), Str("g", g.String()))
}

// statsKeyAt is the key of the statistics at frequency i under its
// prefix (statsKeyPrefix).
func statsKeyAt(prefix string, i int64) string { return prefix + Int("i", i).suffix() }

// StatsAt returns the statistics of g at those of the frequencies is that
// a release's chunk runs collected (Read.StatsAt) and memory still holds.
// They equal the statistics of the chunks holding them, bit for bit
// (estimate.ChunkSet.Sparse). Memory only: they are a few per released key,
// and after a restart the chunks serve.
func (c *Cache) StatsAt(t *sanitize.Table, g estimate.G, is []int64) map[int64]estimate.FrequencyStats {
	out := map[int64]estimate.FrequencyStats{}
	prefix := c.statsKeyPrefix(t, g)
	for _, i := range is {
		if _, done := out[i]; done {
			continue
		}
		if st, ok := c.stats.Get(statsKeyAt(prefix, i)); ok {
			out[i] = st
		}
	}
	return out
}
