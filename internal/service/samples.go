package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"runtime/debug"
	"sync"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// Release says what a sample release publishes.
type Release string

// The two kinds of sample release.
const (
	ReleaseKeys        Release = "keys"        // reported keys only (Algorithm 3)
	ReleaseFrequencies Release = "frequencies" // keys with sanitized values (Algorithm 4 or 5)

	// DefaultRelease is the release of a description that names none.
	DefaultRelease = ReleaseFrequencies
)

// SampleSpec is a validated description of one sample release.
type SampleSpec struct {
	Dataset  string // charge the release to this dataset's budget; empty: none
	Privacy  sanitize.Privacy
	Sampling sanitize.Sampling
	Release  Release
	Method   sanitize.Method
	// Estimator chooses the per-key contribution shown with the release
	// (mle, the default when empty, or biased_down). It is a view, not part
	// of the stored release.
	Estimator estimate.Estimator
}

// NewSampleSpec validates a release description. Empty release and method
// take their defaults (frequencies, max_separation). p and s are valid by
// construction (sanitize.NewPrivacy, sanitize.NewSampling): they are not
// checked again.
func NewSampleSpec(dataset string, p sanitize.Privacy, s sanitize.Sampling, release Release, method sanitize.Method) (SampleSpec, error) {
	if release == "" {
		release = DefaultRelease
	}
	if method == "" {
		method = sanitize.DefaultMethod
	}
	var es checks.Errors
	if release != ReleaseKeys && release != ReleaseFrequencies {
		es.Add("release", "must be keys or frequencies")
	}
	es.AddErr("method", method.Validate())
	if err := es.Err(); err != nil {
		return SampleSpec{}, err
	}
	return SampleSpec{Dataset: dataset, Privacy: p, Sampling: s, Release: release, Method: method}, nil
}

// Element is one reported key of a sanitized sample: its sanitized value and
// MLE frequency estimate (NaN in a keys-only release). It is the stored
// element itself (an alias, so that samples of millions of elements reach
// the API without a copy); callers above the service name it
// service.Element and never import the store.
type Element = store.Element

// Sample is a stored sanitized sample.
type Sample struct {
	ID        string
	CreatedAt time.Time
	// ExpiresAt is when the sample is deleted (PWSD_SAMPLE_TTL); zero: never.
	ExpiresAt time.Time
	Spec      SampleSpec
	Elements  []Element // nil in listings
	Reported  int       // number of elements
	// Keys holds, for a frequencies release read through Samples.Create or
	// GetSampleView, each element's MLE frequency and contribution under
	// Spec.Estimator (same order as Elements); nil otherwise.
	Keys []KeyEstimate
}

// ElementSource yields the raw elements of a sample one at a time; it returns
// io.EOF after the last. The key it returns need only stay valid until its
// next call (it may alias the source's line buffer): Samples.Create copies
// the keys it keeps (reported ones only). Errors it returns (e.g. a *checks.FieldError for a malformed
// element) abort the release. Raw elements never leave the service's memory.
type ElementSource func() (key string, frequency int64, err error)

// Create sanitizes the elements src yields and stores only the
// sanitized output. Each key is reported with probability pi_i/q_i (the client
// already sampled it with q_i), then (frequencies release) gets a sanitized
// value and its MLE frequency estimate. A repeated key or invalid element
// aborts the release; a release that would overspend its dataset's budget is
// refused (ErrBudget). Either way nothing is stored.
//
// The result holds reported keys only, in random order: it reveals neither how
// many elements came in nor which were dropped.
func (s *Samples) Create(ctx context.Context, spec SampleSpec, maxElements int, src ElementSource) (*Sample, error) {
	if err := inScope(ctx, "dataset", spec.Dataset); err != nil {
		return nil, err
	}
	if err := s.checkSampleWork(ctx, spec); err != nil {
		return nil, err
	}
	// The background builds of earlier releases wait while this one runs.
	defer s.cache.Busy()()
	// Refuse an unknown dataset or an overspend before reading the upload;
	// the store charges atomically below, so a concurrent release that
	// spends the rest meanwhile is still refused there.
	if spec.Dataset != "" {
		if err := s.datasets.checkBudget(ctx, spec.Dataset, spec.Privacy.Epsilon, spec.Privacy.Delta); err != nil {
			return nil, err
		}
	}
	table, err := s.sanitizer(spec)
	if err != nil {
		return nil, err
	}
	limit := s.sampleFrequencyLimit(ctx, spec, table)
	rng := s.newRand()
	draw := table.NewDrawer(rng)
	seen := s.newKeySet(maxElements)
	defer s.releaseKeySet(seen)
	// Reported keys are copied into one buffer (keys) and become strings
	// once, after the loop: the source's keys alias its line buffer, and a
	// string per key would be one allocation per reported element. The
	// elements are built once their number is known.
	var keys []byte
	var keyEnds []int
	var values []float64
	// The source (reading and parsing the body) runs one batch ahead on
	// its own goroutine; elements are taken in input order, so every
	// error is the one a sequential loop would meet first.
	ra := startReadAhead(src)
	defer ra.stop()
	stretches := newReleaseStretches(spec.Privacy)
	n := 0
	// Each batch's rows are computed ahead of its draws, two goroutines at
	// a time (the draws then take the randomness in input order): while a
	// batch is drawn, on the core the draws leave idle, when the next batch
	// is read by then (sanitize.Drawer.StartPrepare), and otherwise before
	// that batch's draws.
	b := ra.next()
	draw.Prepare(b.aheadOf(limit), rowWorkers)
	var next *sanitize.Preparation
	defer func() {
		if next != nil {
			next.Wait() // an early return: the rows under way touch the Drawer
		}
	}()
	for done := false; !done; {
		if next != nil {
			next.Wait()
			next = nil
		}
		var nb *elementBatch
		if b.err == nil { // more elements follow
			if nb = ra.ready(); nb != nil {
				next = draw.StartPrepare(nb.aheadOf(limit), rowWorkers)
			}
		}
		for e := range b.freqs {
			if n >= maxElements {
				return nil, &LimitError{Msg: fmt.Sprintf("a sample may hold at most %d elements (PWSD_MAX_ELEMENTS)", maxElements)}
			}
			if n%4096 == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			key, freq := b.key(e), b.freqs[e]
			seen.add(key)
			if freq > limit {
				return nil, fieldErr(fmt.Sprintf("elements[%d].frequency", n), "exceeds %d, the largest frequency a release at this epsilon and delta can sanitize and estimate (2^33 less a margin of a few windows L + 1; docs/api.md)", limit)
			}
			stretches.add(n, float64(freq))
			n++
			o, err := draw.Draw(freq)
			if err != nil {
				return nil, fmt.Errorf("sanitizing element: %w", err)
			}
			if !o.Reported {
				continue
			}
			keys = append(keys, key...)
			keyEnds = append(keyEnds, len(keys))
			v := math.NaN()
			if spec.Release == ReleaseFrequencies {
				v = o.Value
			}
			values = append(values, v)
		}
		switch {
		case errors.Is(b.err, io.EOF):
			done = true
		case b.err != nil:
			return nil, b.err
		}
		ra.recycle(b)
		if !done && nb == nil { // the next batch was not read when b's draws began
			nb = ra.next()
			draw.Prepare(nb.aheadOf(limit), rowWorkers)
		}
		b = nb
	}
	ra.stop()
	if i, dup := seen.firstRepeat(); dup {
		return nil, fieldErr(fmt.Sprintf("elements[%d].key", i), "repeats the key of an earlier element; keys must be unique")
	}
	if err := s.releaseCost(spec, stretches); err != nil {
		return nil, err
	}
	out := make([]store.Element, len(values))
	all, start := string(keys), 0
	for i, end := range keyEnds {
		out[i] = store.Element{Key: all[start:end], Value: values[i], Estimate: math.NaN()}
		start = end
	}
	if err := s.estimateElements(ctx, spec, table, out); err != nil {
		return nil, err
	}
	// Input order could correlate with the data: publish in random order.
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	// Per-key frequencies and contributions, before anything is stored: a
	// failure here must leave no release behind.
	view := &Sample{Spec: spec, Elements: out}
	if err := s.attachKeys(ctx, view); err != nil {
		return nil, err
	}

	smp, err := s.newStoredSample(spec, out)
	if err != nil {
		return nil, err
	}
	var charge *store.Charge
	if spec.Dataset != "" {
		// A PWS release is (epsilon, delta)-DP: composed by the generic pair,
		// which dominates every such mechanism (docs/accounting.md).
		charge = &store.Charge{Dataset: spec.Dataset, Kind: "sample", Ref: smp.ID, Epsilon: spec.Privacy.Epsilon, Delta: spec.Privacy.Delta, Mechanism: accounting.MechanismGeneric}
	}
	if err := s.store.CreateSample(ctx, smp, charge); err != nil {
		return nil, notFoundAs(s.datasets.budgetError(ctx, err, "storing sample", spec.Dataset, spec.Privacy.Epsilon, spec.Privacy.Delta), "dataset", spec.Dataset)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, ExpiresAt: smp.ExpiresAt, Spec: view.Spec, Elements: out, Reported: len(out), Keys: view.Keys}, nil
}

// estimateElements sets each element's MLE contribution (g = identity) in a
// frequencies release, from the chunks near the values (chunks.go).
func (s *Samples) estimateElements(ctx context.Context, spec SampleSpec, table *sanitize.Table, out []store.Element) error {
	if spec.Release != ReleaseFrequencies || len(out) == 0 {
		return nil
	}
	freq, contrib, err := s.mleKeys(ctx, table, elementValues(out), true)
	if err != nil {
		return err
	}
	// The estimate GETs read identity's statistics at the keys' MLE
	// frequencies. The release's chunk runs collected them on the way
	// (tablecache.Read.StatsAt) for the keys whose value chunks it built.
	// The next release under these parameters (a team's nightly one) draws
	// new values for much the same keys: anywhere in the support of a
	// key's row, about 2L below its frequency. So the chunks over that
	// support and the MLE frequency, with their statistics, are built in
	// the background once the release is answered, for identity and count
	// (what a release reads): the next release then finds its value chunks
	// cached and its first estimate its statistics.
	s.cache.Prefetch(table, []estimate.G{identityG, countG}, nextReleaseChunks(table.Privacy(), freq))
	// A new process (a restart, a second instance) anchors its restored
	// Table's rows just below these MLE frequencies (published with the
	// release) in its warm start, so that the next release's draws start
	// near their keys' rows (tablecache, anchors.go).
	s.cache.StoreAnchors(table, tablecache.AnchorPlaces(table.Privacy(), freq))
	for i := range out {
		out[i].Estimate = contrib[i]
	}
	return nil
}

// newStoredSample is a new stored sample of spec holding out.
func (s *Samples) newStoredSample(spec SampleSpec, out []store.Element) (*store.Sample, error) {
	header, err := encodeSampleHeader(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding sample header: %w", err)
	}
	smp := &store.Sample{ID: newID(), CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Dataset: spec.Dataset, Header: header, Elements: out}
	if s.sampleTTL > 0 {
		smp.ExpiresAt = smp.CreatedAt.Add(s.sampleTTL)
	}
	return smp, nil
}

// attachKeys fills smp.Keys for a frequencies release under
// smp.Spec.Estimator (empty: mle).
func (s *Samples) attachKeys(ctx context.Context, smp *Sample) error {
	if smp.Spec.Estimator == "" {
		smp.Spec.Estimator = estimate.DefaultEstimator
	}
	if smp.Spec.Release != ReleaseFrequencies {
		smp.Spec.Estimator = ""
		return nil
	}
	keys, err := s.keyEstimates(ctx, smp, smp.Spec.Estimator)
	if err != nil {
		return err
	}
	smp.Keys = keys
	return nil
}

// Get returns a stored sample with each reported key's MLE
// frequency and its contribution under estimator e (mle or biased_down).
func (s *Samples) Get(ctx context.Context, id string, e estimate.Estimator) (*Sample, error) {
	if e != "" && e != estimate.MLE && e != estimate.BiasedDown {
		return nil, fieldErr("estimator", "must be mle or biased_down")
	}
	smp, err := s.getSample(ctx, id)
	if err != nil {
		return nil, err
	}
	smp.Spec.Estimator = e
	if err := s.attachKeys(ctx, smp); err != nil {
		return nil, err
	}
	return smp, nil
}

// getSample returns a stored sample.
func (s *deps) getSample(ctx context.Context, id string) (*Sample, error) {
	smp, err := s.store.GetSample(ctx, id)
	if err != nil {
		return nil, storeErr(err, "reading sample")
	}
	return sampleOf(smp)
}

// newID returns a random 128-bit identifier in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keySet detects repeated keys without retaining them. Per element it keeps
// two independent 64-bit hashes of the key bytes, as a pair of plain
// uint64s: the first with its low idxBits bits replaced by the element's
// index, and the second. Pairs go to one of keyBuckets buckets by the top
// bits of the first hash, in input order. At the end each bucket, small
// enough for the cache, goes through an open-addressing table in input
// order, and only entries whose first hashes agree (on their 64 - idxBits
// high bits) have their second hashes compared. Keys are equal, up to a
// false positive of probability about n^2 / 2^(129 - idxBits) (never in
// practice), exactly when both agree. The buffers are reused across
// requests (Service.keySets), so a warm request allocates nothing here.
type keySet struct {
	s1, s2  maphash.Seed
	idxBits uint
	buckets [keyBuckets][]uint64 // pairs (first hash with index, second hash)
	table   []uint32             // one bucket's hash table (firstRepeat)
	n       int
}

const (
	keyBucketBits = 8
	keyBuckets    = 1 << keyBucketBits
)

// keySetPool keeps a few key sets' buffers between requests. Unlike a
// sync.Pool it is not emptied by garbage collections, and a set released on
// one P is found by a request on another, so a warm request allocates no
// hash buffers. It keeps at most keySetPoolSize sets, each of at most
// keySetRetainWords words; larger ones are left to the collector.
type keySetPool struct {
	mu   sync.Mutex
	free []*keySet
}

const (
	keySetPoolSize    = 2
	keySetRetainWords = 3 << 20 // 24 MB: the buffers of about 1.4 * 10^6 keys
)

func (p *keySetPool) get() *keySet {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		k := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return k
	}
	return &keySet{}
}

func (p *keySetPool) put(k *keySet) {
	words := cap(k.table) / 2
	for _, b := range k.buckets {
		words += cap(b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if words <= keySetRetainWords && len(p.free) < keySetPoolSize {
		p.free = append(p.free, k)
	}
}

// newKeySet returns an empty key set for at most maxElements keys, with
// fresh hash seeds, reusing a pooled one's buffers when there is one.
func (s *Samples) newKeySet(maxElements int) *keySet {
	k := s.keySets.get()
	k.s1, k.s2 = maphash.MakeSeed(), maphash.MakeSeed()
	k.idxBits = uint(min(max(bits.Len(uint(maxElements)), 1), 40))
	// A bucket gets n/keyBuckets pairs, give or take a few times their
	// square root: room for the previous request's n plus 1/16 means a
	// request of the same size appends without growing.
	want := 2 * (k.n/keyBuckets + k.n/keyBuckets/16 + 32)
	for b := range k.buckets {
		if cap(k.buckets[b]) < want && k.n > 0 {
			k.buckets[b] = make([]uint64, 0, want)
		}
		k.buckets[b] = k.buckets[b][:0]
	}
	k.n = 0
	return k
}

// release returns k's buffers to the pool.
func (s *Samples) releaseKeySet(k *keySet) { s.keySets.put(k) }

// add records the key of the next element (index k.n). The key is hashed,
// not kept: it may alias a buffer the caller reuses.
func (k *keySet) add(key []byte) {
	idx := uint64(k.n)
	k.n++
	h1 := maphash.Bytes(k.s1, key)
	b := &k.buckets[h1>>(64-keyBucketBits)]
	*b = append(*b, h1&^(1<<k.idxBits-1)|idx, maphash.Bytes(k.s2, key))
}

// firstRepeat returns the smallest index of an element whose key repeats an
// earlier element's key.
func (k *keySet) firstRepeat() (int, bool) {
	mask := uint64(1)<<k.idxBits - 1
	best, found := 0, false
	for _, hs := range k.buckets {
		// All earlier entries of the bucket whose first hash has the same
		// high part as entry p lie between its home slot (a multiplicative
		// hash of that part) and the next empty slot; the table is at most
		// half full.
		pairs := len(hs) / 2
		size := max(16, 1<<bits.Len(uint(2*pairs)))
		if cap(k.table) < size {
			k.table = make([]uint32, size)
		}
		table := k.table[:size]
		clear(table)
		shift := 64 - uint(bits.Len(uint(size-1)))
	bucket:
		for p := 0; p < pairs; p++ {
			h := hs[2*p]
			hi := h &^ mask
			slot := (hi * 0x9E3779B97F4A7C15) >> shift
			for {
				at := table[slot]
				if at == 0 {
					table[slot] = uint32(p + 1)
					break
				}
				if e := 2 * int(at-1); hs[e]&^mask == hi && hs[e+1] == hs[2*p+1] {
					// The bucket's first repeat: later ones have larger indexes.
					if j := int(h & mask); !found || j < best {
						best, found = j, true
					}
					break bucket
				}
				slot = (slot + 1) & uint64(size-1)
			}
		}
	}
	return best, found
}

// readAheadBatch is the number of elements a readAhead batch holds.
const readAheadBatch = 4096

// elementBatch is up to readAheadBatch elements of a source, in order.
type elementBatch struct {
	keys  []byte  // the keys' bytes, back to back
	ends  []int   // key e is keys[ends[e-1]:ends[e]]
	freqs []int64 // frequencies
	ahead []int64 // the frequencies whose rows are computed ahead (a buffer of the release loop)
	err   error   // the source's error after these elements (io.EOF: the end); nil: more follow
}

// rowWorkers is how many goroutines one request computes sanitizer rows
// on: a batch's rows ahead of its draws (sanitize.Drawer.Prepare) and the
// runs of chunks it builds (chunkSetsOf).
const rowWorkers = 2

// aheadOf returns the batch's frequencies whose rows are computed ahead
// of its draws: those at most limit (in b.ahead, a buffer of the batch).
func (b *elementBatch) aheadOf(limit int64) []int64 {
	b.ahead = b.ahead[:0]
	for _, f := range b.freqs {
		if f <= limit {
			b.ahead = append(b.ahead, f)
		}
	}
	return b.ahead
}

// key returns element e's key, aliasing the batch (valid until it is
// recycled).
func (b *elementBatch) key(e int) []byte {
	start := 0
	if e > 0 {
		start = b.ends[e-1]
	}
	return b.keys[start:b.ends[e]]
}

// readAhead runs an ElementSource on its own goroutine and hands its
// elements over in batches (copying the keys, which the source may
// overwrite on its next call), so reading and parsing the body overlap
// with the sanitizing. Three batches circulate, so a few thousand elements
// at most are read beyond one that stops the release. stop must be called;
// it returns once the goroutine, the source's only caller, has finished,
// so the source (the request body) is never read after the caller returns.
type readAhead struct {
	full, free chan *elementBatch
	done       chan struct{} // closed by stop
	exited     chan struct{} // closed when the goroutine returns
	stopped    bool
	panicked   any // a panic of the source, raised again by next
}

func startReadAhead(src ElementSource) *readAhead {
	const batches = 3
	ra := &readAhead{
		full:   make(chan *elementBatch, batches),
		free:   make(chan *elementBatch, batches),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for range batches {
		ra.free <- &elementBatch{}
	}
	go ra.run(src)
	return ra
}

func (ra *readAhead) run(src ElementSource) {
	defer close(ra.exited)
	defer func() {
		if p := recover(); p != nil {
			ra.panicked = fmt.Sprintf("element source: %v\n%s", p, debug.Stack())
		}
	}()
	for {
		var b *elementBatch
		select {
		case b = <-ra.free:
		case <-ra.done:
			return
		}
		b.keys, b.ends, b.freqs, b.err = b.keys[:0], b.ends[:0], b.freqs[:0], nil
		for len(b.freqs) < readAheadBatch && b.err == nil {
			key, freq, err := src()
			if err != nil {
				b.err = err
				break
			}
			b.keys = append(b.keys, key...)
			b.ends = append(b.ends, len(b.keys))
			b.freqs = append(b.freqs, freq)
		}
		select {
		case ra.full <- b:
		case <-ra.done:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// next returns the next batch; after one with a non-nil err there is none.
// A panic of the source is raised again here, on the caller's goroutine.
func (ra *readAhead) next() *elementBatch {
	select {
	case b := <-ra.full:
		return b
	case <-ra.exited:
		select {
		case b := <-ra.full: // sent just before the goroutine returned
			return b
		default:
		}
		panic(ra.panicked)
	}
}

// ready returns the next batch if the source has read it, or nil (then
// next waits for it).
func (ra *readAhead) ready() *elementBatch {
	select {
	case b := <-ra.full:
		return b
	default:
		return nil
	}
}

// recycle returns a batch whose elements have been used.
func (ra *readAhead) recycle(b *elementBatch) { ra.free <- b }

// stop ends the goroutine and waits for it; it may be called again.
func (ra *readAhead) stop() {
	if !ra.stopped {
		ra.stopped = true
		close(ra.done)
	}
	<-ra.exited
}

// PageElements returns one page of smp's elements in their stored order and
// the cursor of the next page ("" on the last). Cursors of one sample do
// not work on another.
func PageElements(smp *Sample, p Page) (*Sample, string, error) {
	limit, err := p.limit()
	if err != nil {
		return nil, "", err
	}
	start := 0
	if p.Cursor != "" {
		c, err := decodeCursor(cursorElements, p.Cursor)
		if err != nil || c.ID != smp.ID || c.CreatedAt.UnixNano() < 0 || c.CreatedAt.UnixNano() > int64(len(smp.Elements)) {
			return nil, "", errCursor()
		}
		start = int(c.CreatedAt.UnixNano())
	}
	end := min(start+limit, len(smp.Elements))
	next := ""
	if end < len(smp.Elements) {
		next = encodeCursor(cursorElements, time.Unix(0, int64(end)), smp.ID)
	}
	pg := *smp
	pg.Elements = smp.Elements[start:end]
	if len(smp.Keys) == len(smp.Elements) {
		pg.Keys = smp.Keys[start:end]
	}
	return &pg, next, nil
}

// sampleOf decodes a stored sample (with or without elements).
func sampleOf(smp *store.Sample) (*Sample, error) {
	spec, err := decodeSampleHeader(smp.Header)
	if err != nil {
		return nil, err
	}
	n := smp.Reported
	if smp.Elements != nil {
		n = len(smp.Elements)
	}
	return &Sample{ID: smp.ID, CreatedAt: smp.CreatedAt, ExpiresAt: smp.ExpiresAt, Spec: spec, Elements: smp.Elements, Reported: n}, nil
}

// List lists stored samples without their elements (Elements nil,
// Reported set), oldest first.
func (s *Samples) List(ctx context.Context, p Page) ([]*Sample, string, error) {
	rows, next, err := pageOf(p, cursorSamples, func(c store.Cursor, n int) ([]*store.Sample, error) { return s.store.ListSamples(ctx, c, n) },
		func(x *store.Sample) (time.Time, string) { return x.CreatedAt, x.ID })
	if err != nil {
		return nil, "", storeErr(err, "listing samples")
	}
	out := make([]*Sample, len(rows))
	for i, r := range rows {
		if out[i], err = sampleOf(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// Delete deletes a sample; its dataset's ledger keeps the charge.
func (s *Samples) Delete(ctx context.Context, id string) error {
	if scoped(ctx) {
		smp, err := s.store.GetSample(ctx, id)
		if err != nil {
			return storeErr(err, "deleting sample")
		}
		if err := inScope(ctx, "id", smp.Dataset); err != nil {
			return err
		}
	}
	return storeErr(s.store.DeleteSample(ctx, id), "deleting sample")
}
