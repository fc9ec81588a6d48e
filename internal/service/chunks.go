package service

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// chunkKey is the cache key of chunk k of (g, MLE) over t, with its
// statistics.
func (s *Service) chunkKey(t *sanitize.Table, g estimate.G, size, k int64) string {
	return s.tableKey("chunk", t.Privacy(), t.Sampling(), t.Method(), intPart("format", estimate.ChunkFormat),
		strPart("g", g.String()), intPart("size", size), intPart("k", k))
}

// chunkKeyOf is chunkKey, or with estimatesOnly the key of the chunk's
// tokens and estimates alone (estimate.BuildChunkEstimates).
func (s *Service) chunkKeyOf(t *sanitize.Table, g estimate.G, size, k int64, estimatesOnly bool) string {
	if estimatesOnly {
		return s.chunkKey(t, g, size, k) + "|estimates-only"
	}
	return s.chunkKey(t, g, size, k)
}

// chunkSets is chunkSetsOf for chunks with their statistics.
func (s *Service) chunkSets(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64) ([]*estimate.ChunkSet, error) {
	return s.chunkSetsOf(ctx, t, gs, ks, false)
}

// chunkSetsOf returns, for each g, the MLE chunk set over t holding the
// chunks ks (in any order, repeats allowed): each chunk from memory, else
// from the store, else built. With estimatesOnly the chunks may hold their
// tokens and estimates only (for answers that read no statistics: a
// value's a_j, a key's MLE frequency), which for Algorithm 5 costs markedly
// less (estimate.BuildChunkEstimates). Chunks another call is building are
// waited for. Missing chunks with consecutive indices are built in one pass
// over their rows (every g at once), two runs at a time, and written to the
// store in the background (the store is a cache: a failed write costs a
// rebuild later, never an answer).
func (s *Service) chunkSetsOf(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64, estimatesOnly bool) ([]*estimate.ChunkSet, error) {
	size := estimate.ChunkSize(t.Privacy())
	from, err := s.supportedFrom(ctx, t)
	if err != nil {
		return nil, err
	}
	sets := make([]*estimate.ChunkSet, len(gs))
	for n, g := range gs {
		sets[n] = &estimate.ChunkSet{G: g, Size: size, Chunks: make(map[int64]*estimate.Chunk), Supported: from}
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	collect := func(ks []int64) (missing []int64, err error) {
		for _, k := range ks {
			have := true
			for n, g := range gs {
				c, err := s.storedChunk(ctx, t, g, size, k, estimatesOnly)
				if err != nil {
					return nil, err
				}
				if c == nil {
					have = false
					break
				}
				sets[n].Chunks[k] = c
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
		for _, g := range gs {
			if ch := s.building.pending(s.chunkKeyOf(t, g, size, k, estimatesOnly)); ch != nil {
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
	if err := s.checkChunkWork(ctx, t, gs, size, runs, missing); err != nil {
		return nil, err
	}
	// Every chunk this call builds is marked as under construction until
	// the call ends, so that a request arriving meanwhile waits for them
	// rather than building them too.
	var building []string
	for _, run := range runs {
		for k := run[0]; k < run[0]+run[1]; k++ {
			for _, g := range gs {
				building = append(building, s.chunkKeyOf(t, g, size, k, estimatesOnly))
			}
		}
	}
	defer s.building.start(building)()
	built := make([][][]*estimate.Chunk, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(rowWorkers, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				built[r], errs[r] = s.buildRun(ctx, t, gs, size, runs[r][0], runs[r][1], estimatesOnly)
			}
		}()
	}
	for r := range runs {
		if ctx.Err() != nil {
			break
		}
		next <- r
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for r, run := range built {
		if errs[r] != nil {
			return nil, errs[r]
		}
		for k, cs := range run {
			for n, c := range cs {
				sets[n].Chunks[runs[r][0]+int64(k)] = c
			}
		}
	}
	return sets, nil
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
// statistics is taken when there is one in the same place).
func (s *Service) storedChunk(ctx context.Context, t *sanitize.Table, g estimate.G, size, k int64, estimatesOnly bool) (*estimate.Chunk, error) {
	keys := []string{s.chunkKey(t, g, size, k)}
	if estimatesOnly {
		keys = append(keys, s.chunkKeyOf(t, g, size, k, true))
	}
	// Memory first for every form, then the store.
	for _, key := range keys {
		if c, ok := s.chunkCache.Get(key); ok {
			return c, nil
		}
	}
	for n, key := range keys {
		data, ok, err := s.store.GetTable(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("reading table cache: %w", err)
		}
		if !ok {
			continue
		}
		c := &estimate.Chunk{}
		if err := c.UnmarshalBinary(data); err != nil || c.Index != k || c.Size != size || c.G != g || (n == 0 && !c.HasStats()) {
			s.log.Warn("ignoring undecodable cached chunk", "key", key)
			continue
		}
		return s.chunkCache.Add(key, c), nil
	}
	return nil, nil
}

// buildRun builds chunks k0 .. k0+n-1 of every g (once under concurrency;
// with estimatesOnly, estimate.ChunkAsk.EstimatesOnly), keeps them in memory
// and writes them to the store in the background.
func (s *Service) buildRun(ctx context.Context, t *sanitize.Table, gs []estimate.G, size, k0, n int64, estimatesOnly bool) ([][]*estimate.Chunk, error) {
	key := s.chunkKeyOf(t, gs[0], size, k0, estimatesOnly) + "|run=" + strconv.FormatInt(n, 10)
	for _, g := range gs[1:] {
		key += "+" + g.String()
	}
	v, err := s.flight.do(ctx, key, func(ctx context.Context) (any, error) {
		s.computed.Add(1)
		built, err := estimate.Open(ctx, t, estimate.Ask{Chunks: &estimate.ChunkAsk{Gs: gs, Size: size, First: k0, Count: n, EstimatesOnly: estimatesOnly}})
		if err != nil {
			return nil, estimateErr(err)
		}
		run := built.Chunks
		var writes []tableEntry
		for _, cs := range run {
			for m, c := range cs {
				key := s.chunkKeyOf(t, c.G, size, c.Index, !c.HasStats())
				cs[m] = s.chunkCache.Add(key, c)
				data, err := c.MarshalBinary()
				if err != nil {
					return nil, fmt.Errorf("encoding chunk: %w", err)
				}
				writes = append(writes, tableEntry{key: key, data: data})
			}
		}
		s.writeBehind(ctx, writes)
		return run, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([][]*estimate.Chunk), nil
}

// checkChunkWork bounds the chunks a request of its own work bound (a
// reader's, WithWorkLimit) may build: the estimate, top, rank and quantile
// GETs of a stored sample build the chunks of its keys that no cache holds
// (after a restart, all of them), as much work as the release itself. Above
// the request's bound the chunks are built in the background instead
// (prefetchChunks) and the request is told to come back (*WarmingError,
// 503 with Retry-After): a reader never starts more work than its bound,
// and the sample stays answerable. Requests without a bound of their own
// (writers) build what they need, as the release they made was admitted.
// The work is counted as releaseCost counts it; public parameters only.
func (s *Service) checkChunkWork(ctx context.Context, t *sanitize.Table, gs []estimate.G, size int64, runs [][2]int64, missing []int64) error {
	own, ok := ctx.Value(workBoundKey{}).(workBound)
	if !ok || len(runs) == 0 {
		return nil
	}
	start, chunk := runWork(t.Privacy(), size)
	work := 0.0
	for _, run := range runs {
		work += start + chunk*float64(run[1])
	}
	if work <= float64(own.cells) {
		return nil
	}
	s.prefetchChunks(t, gs, missing)
	return &WarmingError{Msg: fmt.Sprintf("the estimator chunks this answer reads are not cached, and computing them (about %.3g window cells) is more than a request of this token may start (%s = %d); they are being computed now: retry in a few seconds, or ask with a writer token", work, own.setting, own.cells)}
}

// WarmingError says a request was not served because what it reads is being
// computed in the background (the API's 503 with Retry-After).
type WarmingError struct{ Msg string }

func (e *WarmingError) Error() string { return e.Msg }

// prefetchChunks builds the chunks ks of gs (chunkSets) on a background
// goroutine, one such build at a time (while one runs, others are dropped:
// the reads build what is missing), within a minute and until StopOptional,
// so that the reads that follow a release find them cached. Public
// parameters and released values only.
func (s *Service) prefetchChunks(t *sanitize.Table, gs []estimate.G, ks []int64) {
	select {
	case s.prefetchers <- struct{}{}:
	default:
		return
	}
	s.background.Add(1)
	go func() {
		defer func() { <-s.prefetchers; s.background.Done() }()
		pctx, cancel := context.WithTimeout(s.optional, time.Minute)
		defer cancel()
		if _, err := s.chunkSets(pctx, t, gs, ks); err != nil {
			s.log.Warn("building chunks ahead of estimates", "err", err)
		}
	}()
}

// chunkBuilds tracks the chunks being built, so that a request needing one
// waits for it instead of building it again.
type chunkBuilds struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// start registers keys as being built (those not already registered) and
// returns the function that marks them done.
func (b *chunkBuilds) start(keys []string) (done func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]chan struct{})
	}
	var mine []string
	for _, k := range keys {
		if _, ok := b.m[k]; !ok {
			b.m[k] = ch
			mine = append(mine, k)
		}
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, k := range mine {
			delete(b.m, k)
		}
		close(ch)
	}
}

// pending returns a channel closed when key's build ends, or nil when no
// build of key is under way.
func (b *chunkBuilds) pending(key string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[key]
}

// tableEntry is one table to write to the store's cache.
type tableEntry struct {
	key  string
	data []byte
}

// writeBehind writes cache entries to the store on a background goroutine
// (at most two at once; beyond that the entries are dropped: the store is
// a cache), so that a cold release does not wait for the store.
func (s *Service) writeBehind(ctx context.Context, entries []tableEntry) {
	select {
	case s.writers <- struct{}{}:
	default:
		return
	}
	ctx = context.WithoutCancel(ctx)
	s.background.Add(1)
	go func() {
		defer func() { <-s.writers; s.background.Done() }()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		for _, e := range entries {
			if err := s.store.PutTable(wctx, e.key, e.data); err != nil {
				s.log.Warn("caching chunks", "err", err)
				return
			}
		}
	}()
}

// supportedFrom returns the smallest frequency whose privacy part of
// reporting, pi_i/q_i, reaches 1/2 under t (estimate.Table.SupportedFrom's
// rule), or 0. At most 2L + 1 frequencies have pi_i < q_i (Lemma 4.3), so
// the scan from row 1 stops within a few L rows; it is capped at 2^22 rows
// all the same. Public parameters only.
func (s *Service) supportedFrom(ctx context.Context, t *sanitize.Table) (int64, error) {
	key := s.tableKey("supported", t.Privacy(), t.Sampling(), t.Method())
	if v, ok := s.supported.Get(key); ok {
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
	s.supported.Add(key, found)
	return found, nil
}

// valueChunks returns the chunks holding values vs (sanitized values > 0).
func valueChunks(size int64, vs []float64) []int64 {
	ks := make([]int64, 0, len(vs))
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			ks = append(ks, estimate.ChunkOf(v, size))
		}
	}
	return ks
}

// frequencyChunk returns the chunk holding the statistics of an MLE
// frequency estimate f (rounded and at least 1, as estimate.SumWithError
// reads them).
func frequencyChunk(f float64, size int64) int64 {
	return estimate.ChunkOf(float64(max(int64(math.Round(f)), 1)), size)
}

// frequencyChunkSets returns the identity and count MLE chunk sets holding
// values: a value's MLE frequency is the ratio of the two
// (estimate.MLEFrequency), its contribution the identity one. Their chunks
// may hold estimates only (chunkSetsOf).
func (s *Service) frequencyChunkSets(ctx context.Context, t *sanitize.Table, values []float64) (identity, count *estimate.ChunkSet, err error) {
	sets, err := s.chunkSetsOf(ctx, t, []estimate.G{identityG, countG}, valueChunks(estimate.ChunkSize(t.Privacy()), values), true)
	if err != nil {
		return nil, nil, err
	}
	return sets[0], sets[1], nil
}

// mleKeys returns each value's MLE frequency (estimate.MLEFrequency) and
// MLE contribution under identity, from the chunks.
func (s *Service) mleKeys(ctx context.Context, t *sanitize.Table, values []float64) (freq, contrib []float64, err error) {
	id, ct, err := s.frequencyChunkSets(ctx, t, values)
	if err != nil {
		return nil, nil, err
	}
	freq, contrib = make([]float64, len(values)), make([]float64, len(values))
	for i, v := range values {
		if freq[i], err = estimate.MLEFrequency(id, ct, v); err != nil {
			return nil, nil, estimateErr(err)
		}
		if contrib[i], err = id.Estimate(v); err != nil {
			return nil, nil, estimateErr(err)
		}
	}
	return freq, contrib, nil
}

// elementValues returns the sanitized values of els.
func elementValues(els []store.Element) []float64 {
	values := make([]float64, len(els))
	for i, el := range els {
		values[i] = el.Value
	}
	return values
}

// prebuildBatch is how many chunks PrebuildChunks builds at a time.
const prebuildBatch = 256

// Prebuilt says what PrebuildChunks found and built.
type Prebuilt struct {
	ChunkSize int64 // frequencies per chunk (estimate.ChunkSize)
	Chunks    int64 // chunks covering (0, MaxFrequency]
	Built     int64 // of which built now (the others were cached)
}

// PrebuildChunks builds, ahead of a scheduled release under spec, the MLE
// chunks (identity and count, what every frequencies release reads) that
// cover the frequencies up to maxFrequency, and keeps them in memory and in
// the store: the release then reads them instead of computing them. Chunks
// already cached are not built again. The work is bounded like a table
// request's (checkWorkOf, 422 naming max_frequency).
func (s *Service) PrebuildChunks(ctx context.Context, spec SampleSpec, maxFrequency int64) (Prebuilt, error) {
	if maxFrequency < 1 || maxFrequency > sanitize.MaxFrequency {
		return Prebuilt{}, fieldErr("max_frequency", "must be between 1 and %d", sanitize.MaxFrequency)
	}
	t, err := s.tables.get(spec.Privacy, spec.Sampling, spec.Method)
	if err != nil {
		return Prebuilt{}, err
	}
	size := estimate.ChunkSize(spec.Privacy)
	n := estimate.ChunkOf(float64(maxFrequency), size) + 1
	work := func(_, top int64) (float64, float64) {
		w, window := releaseWork(spec.Privacy, true)
		runs := float64(top)/float64(size)/float64(estimate.MaxChunkRun(spec.Privacy, size)) + 1
		return w*runs + window*float64(top), window
	}
	if err := s.checkWorkOf(ctx, work, n*size, n*size, "privacy.epsilon", "max_frequency"); err != nil {
		return Prebuilt{}, err
	}
	ks := make([]int64, n)
	missing := int64(0)
	for k := range ks {
		ks[k] = int64(k)
		for _, g := range []estimate.G{identityG, countG} {
			c, err := s.storedChunk(ctx, t, g, size, int64(k), false)
			if err != nil {
				return Prebuilt{}, err
			}
			if c == nil {
				missing++
				break
			}
		}
	}
	// Built a batch at a time: each batch's chunks go to the caches (memory
	// and store) and are let go before the next, so a prebuild holds one
	// batch, not every chunk up to max_frequency (issue 31: 8 concurrent
	// prebuilds of 626,483 frequencies peaked at 2.6 GB).
	for lo := 0; lo < len(ks); lo += prebuildBatch {
		if _, err := s.chunkSets(ctx, t, []estimate.G{identityG, countG}, ks[lo:min(lo+prebuildBatch, len(ks))]); err != nil {
			return Prebuilt{}, err
		}
	}
	return Prebuilt{ChunkSize: size, Chunks: n, Built: missing}, nil
}
