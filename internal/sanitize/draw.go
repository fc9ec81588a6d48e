package sanitize

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// Outcome is the sanitized report for one sampled key.
type Outcome struct {
	// Reported is false when the key is dropped (then Value and Piece are
	// zero).
	Reported bool
	// Value is the released sanitized value: for MethodDiscrete the token j
	// (the piece's Hi), for MethodMaxSeparation a uniform draw inside the
	// piece (Lo, Hi]. It is ordinal: never show it as a frequency.
	Value float64
	// Piece is the chosen output token (Lo, Hi] with its probability P
	// under the key's row (end to end, including the client's sampling).
	Piece Piece
}

// sampler is a row prepared for drawing: break points and cumulative masses.
type sampler struct {
	i   int64
	pi  float64
	x   []float64
	m   []float64
	cum []float64
}

// newSampler returns the sampler of row r over copies of its break points
// and masses (a cursor's row buffers are reused as it steps), held with the
// cumulative masses in one allocation: a release after a restart builds a
// sampler for each of thousands of frequencies (docs/performance.md,
// "Restart draws (issue 37, sixth round)").
func newSampler(r *rowState) *sampler {
	nx, n := len(r.x), len(r.m)
	buf := make([]float64, nx+2*n)
	x, m := buf[:nx:nx], buf[nx:nx+n:nx+n]
	copy(x, r.x)
	copy(m, r.m)
	return samplerOf(r.i, r.pi, x, m, buf[nx+n:])
}

// samplerOf returns the sampler of row i with reporting probability pi,
// break points x and masses m, which it keeps, and the cumulative masses
// written into cum (of len(m) at least). The cumulative masses are the
// compensated prefix sums rounded to float64, as samplerOfPlain's: the sum
// is held in registers (a ddSum's add in a loop keeps it in memory), and
// fl(s + c) is what ddSum.dd().float() returns, since twoSum's hi is
// already fl(s + c) and adding its error term back rounds to hi again
// (TestSamplerOfMatchesPlain).
func samplerOf(i int64, pi float64, x, m, cum []float64) *sampler {
	if referenceOnly {
		return samplerOfPlain(i, pi, x, m)
	}
	cum = cum[:len(m)]
	var s, c float64
	for k, v := range m {
		var e float64
		s, e = twoSum(s, v)
		c += e
		cum[k] = s + c
	}
	return &sampler{i: i, pi: pi, x: x, m: m, cum: cum}
}

// samplerOfPlain is samplerOf's plain reference: a ddSum, each prefix
// rounded by dd().float().
func samplerOfPlain(i int64, pi float64, x, m []float64) *sampler {
	s := &sampler{i: i, pi: pi, x: x, m: m, cum: make([]float64, len(m))}
	var acc ddSum
	for k, v := range m {
		acc.add(v)
		s.cum[k] = acc.dd().float()
	}
	return s
}

// draw applies the sampler, shifted up by d, to one sampled key whose
// sampling probability was q.
func (s *sampler) draw(q float64, d int64, discrete bool, rng *rand.Rand) Outcome {
	// Report with probability pi_i / q_i (pi_i <= q_i).
	if s.pi < q && rng.Float64()*q >= s.pi {
		return Outcome{}
	}
	return s.pick(d, discrete, rng)
}

// pick draws the piece of a reported key: piece k with probability
// P_k / pi_i, shifted up by d, and its value.
func (s *sampler) pick(d int64, discrete bool, rng *rand.Rand) Outcome {
	n := len(s.cum)
	if n == 0 || s.cum[n-1] <= 0 {
		return Outcome{}
	}
	// Piece k with probability P_k / pi_i: the first cumulative mass
	// strictly above v.
	v := rng.Float64() * s.cum[n-1]
	k, hi := 0, n
	for k < hi {
		if mid := int(uint(k+hi) >> 1); s.cum[mid] <= v {
			k = mid + 1
		} else {
			hi = mid
		}
	}
	if k == n {
		k = n - 1
	}
	fd := float64(d)
	pc := Piece{Lo: s.x[k] + fd, Hi: s.x[k+1] + fd, P: s.m[k]}
	out := Outcome{Reported: true, Value: pc.Hi, Piece: pc}
	if !discrete {
		out.Value = uniformIn(pc.Lo, pc.Hi, rng)
	}
	return out
}

// uniformIn returns a uniform draw in (lo, hi].
func uniformIn(lo, hi float64, rng *rand.Rand) float64 {
	for n := 0; n < 16; n++ {
		v := hi - rng.Float64()*(hi-lo)
		if v > lo && v <= hi {
			return v
		}
	}
	return hi
}

// defaultCachePieces bounds the pieces held by a Table's sampler cache
// (about 24 bytes each).
const defaultCachePieces = 1 << 21

// samplerCache is a bounded map of samplers; when full, arbitrary entries
// are evicted (Go map order is random).
type samplerCache struct {
	mu        sync.Mutex
	m         map[int64]*sampler
	pieces    int
	maxPieces int
}

func (c *samplerCache) init(maxPieces int) {
	c.m = make(map[int64]*sampler)
	c.maxPieces = maxPieces
}

func (c *samplerCache) get(i int64) *sampler {
	c.mu.Lock()
	s := c.m[i]
	c.mu.Unlock()
	return s
}

// room returns how many pieces speculative entries may still take: they
// fill at most half of the cache, so that the rows draws ask for are not
// evicted by rows walked past.
func (c *samplerCache) room() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxPieces/2 - c.pieces
}

func (c *samplerCache) put(s *sampler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[s.i]; ok {
		return
	}
	for c.pieces+len(s.m) > c.maxPieces && len(c.m) > 0 {
		for k, v := range c.m {
			c.pieces -= len(v.m)
			delete(c.m, k)
			break
		}
	}
	c.m[s.i] = s
	c.pieces += len(s.m)
}

// samplerFor returns the sampler of frequency i and the shift to apply,
// cached (rowWalker.sampler with a walker of its own that keeps the rows
// near it).
func (t *Table) samplerFor(i int64) (*sampler, int64, error) {
	w := rowWalker{t: t, keepNear: true}
	s, d, err := w.sampler(i, true)
	if err != nil {
		return nil, 0, fmt.Errorf("sanitize: draw: %w", err)
	}
	return s, d, nil
}

// Draw sanitizes one sampled key of frequency freq: it reports the key with
// probability pi_i/q_i (the client already sampled it with probability
// q_i), and then picks a piece with probability P/pi_i; Value is the
// piece's Hi (the token j) for MethodDiscrete and a uniform draw inside
// (Lo, Hi] for MethodMaxSeparation. All randomness comes from rng. Rows are
// cached, so repeated draws cost O(log L) each. Draw is safe for concurrent
// use (rng is not: give each goroutine its own).
func (t *Table) Draw(freq int64, rng *rand.Rand) (Outcome, error) {
	if err := checkFreq(freq); err != nil {
		return Outcome{}, fmt.Errorf("sanitize: draw: %w", err)
	}
	s, d, err := t.samplerFor(freq)
	if err != nil {
		return Outcome{}, err
	}
	return s.draw(t.s.Q(freq), d, t.m == MethodDiscrete, rng), nil
}

// DrawAll sanitizes a batch of sampled keys: out[k] is the outcome for a key
// of frequency freqs[k]. It appends to out[:0] and returns it. It computes
// each needed row once, streaming the rows in ascending order (O(L) per row
// between needed frequencies that are close, from the cheapest start
// across wide gaps) and draws every key of one frequency from that row, so
// its cost is O(n log n + (rows computed) L) whatever the cache holds. The
// draws consume rng in ascending order of frequency (ties in input order),
// so the outcomes are the same as independent Draw calls in that order.
func (t *Table) DrawAll(freqs []int64, rng *rand.Rand, out []Outcome) ([]Outcome, error) {
	if referenceOnly {
		return t.drawAllRef(freqs, rng, out)
	}
	for _, f := range freqs {
		if err := checkFreq(f); err != nil {
			return out[:0], fmt.Errorf("sanitize: draw all: %w", err)
		}
	}
	out = slices.Grow(out[:0], len(freqs))[:len(freqs)]
	// Sort (frequency, index) packed in one word: frequency <= 2^33 takes
	// the high 33 bits, the index the low 31.
	if len(freqs) >= 1<<31 {
		return out[:0], fmt.Errorf("sanitize: draw all: more than 2^31 keys")
	}
	keys := make([]uint64, len(freqs))
	for k, f := range freqs {
		keys[k] = uint64(f)<<31 | uint64(k)
	}
	slices.Sort(keys)
	order := make([]int32, len(freqs))
	for k, key := range keys {
		order[k] = int32(key & (1<<31 - 1))
	}
	discrete := t.m == MethodDiscrete
	w := rowWalker{t: t}
	for k := 0; k < len(order); {
		f := freqs[order[k]]
		end := k
		for end < len(order) && freqs[order[end]] == f {
			end++
		}
		s, d, err := w.sampler(f, false)
		if err != nil {
			return out[:0], fmt.Errorf("sanitize: draw all: %w", err)
		}
		q := t.s.Q(f)
		for ; k < end; k++ {
			out[order[k]] = s.draw(q, d, discrete, rng)
		}
	}
	return out, nil
}

// drawAllRef is DrawAll's plain reference: Draw for each key, in ascending
// order of frequency (ties in input order), consuming rng as DrawAll does.
func (t *Table) drawAllRef(freqs []int64, rng *rand.Rand, out []Outcome) ([]Outcome, error) {
	for _, f := range freqs {
		if err := checkFreq(f); err != nil {
			return out[:0], fmt.Errorf("sanitize: draw all: %w", err)
		}
	}
	out = slices.Grow(out[:0], len(freqs))[:len(freqs)]
	order := make([]int, len(freqs))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(freqs[a], freqs[b]) })
	for _, k := range order {
		o, err := t.Draw(freqs[k], rng)
		if err != nil {
			return out[:0], fmt.Errorf("sanitize: draw all: %w", err)
		}
		out[k] = o
	}
	return out, nil
}

// rowWalker finds the samplers of ascending frequencies along one cursor,
// stepped on while no start is cheaper (rowChain.startFor). The samplers
// of the stationary cycle's rows are always cached.
type rowWalker struct {
	t  *Table
	cu *cursor
	// spare is a cursor the walker has done with, whose row buffers the
	// next start takes (startFor), or nil.
	spare *cursor
	// keepNear: a walk that starts from a row of the table near the
	// frequency (within two checkpoint spacings) caches the rows on its way
	// while the cache has room for them: draws for nearby frequencies
	// (Zipf-like data hits most of them) are then hits.
	keepNear bool
}

// retire makes the walker's cursor its spare: the next frequency starts
// afresh.
func (w *rowWalker) retire() {
	if w.cu != nil {
		w.spare, w.cu = w.cu, nil
	}
}

// sampler returns the sampler of frequency f (at or above the frequencies
// asked before) and the shift to apply; keep puts the sampler of f into
// the Table's cache.
func (w *rowWalker) sampler(f int64, keep bool) (*sampler, int64, error) {
	t := w.t
	if st := t.stationary(); st != nil && f >= st.from() {
		r, d := st.at(f)
		if s := t.cache.get(r.i); s != nil {
			return s, d, nil
		}
		s := newSampler(r)
		t.cache.put(s)
		return s, d, nil
	}
	if s := t.cache.get(f); s != nil {
		return s, 0, nil
	}
	if s := t.anchoredSampler(f); s != nil {
		return s, 0, nil
	}
	cu := t.startFor(f, w.cu, w.spare)
	if cu != w.cu && w.cu == nil {
		w.spare = nil // its buffers are cu's now
	}
	w.cu = cu
	from, keepAll := f, false
	if w.keepNear && cu.usable() && f-cu.cur.i <= 2*t.currentSpacing() {
		// Rows on the way are kept only while the cache has room for them
		// (samplerCache.room): wider rows (small epsilon) would evict each
		// other, and the rows draws asked for, and every later draw would
		// walk again.
		from = min(cu.cur.i+1, f)
		keepAll = int64(len(cu.cur.m)+1)*(f-cu.cur.i) <= int64(t.cache.room())
	}
	var s *sampler
	shifted := false
	if err := t.walk(context.Background(), cu, from, f, func(r *rowState, d int64) bool {
		switch {
		case d != 0:
			shifted = true // the walk met the stationary cycle, which covers f
			return false
		case r.i == f:
			s = newSampler(r)
		case keepAll && t.cache.get(r.i) == nil:
			t.cache.put(newSampler(r))
		}
		return true
	}); err != nil {
		return nil, 0, err
	}
	if shifted {
		return w.sampler(f, keep)
	}
	if keep {
		t.cache.put(s)
		if c := t.cache.get(f); c != nil {
			return c, 0, nil
		}
	}
	return s, 0, nil
}

// denseDraws is the number of small frequencies a Drawer indexes directly
// (the rest go through the stationary cycle or a map).
const denseDraws = 1 << 12

// Drawer draws outcomes of one Table from one generator, for one goroutine
// (a request). It prepares each frequency once: the row's sampler (shared
// through the Table's cache), its shift, and the reporting decision as an
// integer threshold on one random word. A repeated frequency then costs an
// index (or map) lookup and one random word when the key is dropped, which
// is most of them; the rows past the stationary point are indexed by their
// place in the cycle. Outcomes, and the words taken from rng, are bit for bit
// those of Table.Draw called with the same generator in the same order.
type Drawer struct {
	t        *Table
	rng      *rand.Rand
	discrete bool
	dense    []drawRow         // by frequency, below denseDraws
	sparse   map[int64]drawRow // the larger frequencies seen so far
	// Once the table's rows are stationary: frequencies from cycFrom on
	// (stationary, and q_i constant) are drawn from cycle[(i - stFrom) mod
	// len(cycle)] shifted up to i, with no map lookup.
	cycle           []drawRow
	stFrom, cycFrom int64
}

// drawRow is a frequency prepared for drawing.
type drawRow struct {
	s     *sampler
	d     int64  // shift of the sampler's pieces
	keep  uint64 // with coin: reported iff the low 53 bits of a word are < keep
	coin  bool   // pi_i < q_i: a random word decides the report
	ready bool
}

// NewDrawer returns a Drawer of t drawing from rng (not safe for concurrent
// use: give each goroutine its own generator and Drawer).
func (t *Table) NewDrawer(rng *rand.Rand) *Drawer {
	return &Drawer{t: t, rng: rng, discrete: t.m == MethodDiscrete}
}

// Draw sanitizes one sampled key of frequency freq exactly as Table.Draw
// does: reported with probability pi_i/q_i, then piece k with probability
// P_k/pi_i.
func (dr *Drawer) Draw(freq int64) (Outcome, error) {
	if referenceOnly {
		return dr.t.Draw(freq, dr.rng)
	}
	var r drawRow
	if freq >= 1 && freq < denseDraws && dr.dense != nil {
		r = dr.dense[freq]
	} else if freq >= denseDraws {
		if dr.cycle == nil {
			dr.loadCycle()
		}
		if dr.cycle != nil && freq >= dr.cycFrom && freq <= MaxFrequency {
			k := (freq - dr.stFrom) % int64(len(dr.cycle))
			if r = dr.cycle[k]; !r.ready {
				var err error
				if r, err = dr.prepare(freq); err != nil {
					return Outcome{}, err
				}
				dr.cycle[k] = r
			}
			r.d = freq - r.s.i
		} else {
			r = dr.sparse[freq]
		}
	}
	if !r.ready {
		var err error
		if r, err = dr.prepare(freq); err != nil {
			return Outcome{}, err
		}
		dr.remember(freq, r)
	}
	if r.coin && dr.rng.Uint64()&(1<<53-1) >= r.keep {
		return Outcome{}, nil
	}
	return r.s.pick(r.d, dr.discrete, dr.rng), nil
}

// loadCycle sets up the stationary cycle once the table knows it.
func (dr *Drawer) loadCycle() {
	st := dr.t.stationary()
	if st == nil {
		return
	}
	dr.stFrom = st.from()
	dr.cycFrom = max(dr.stFrom, dr.t.qConst)
	dr.cycle = make([]drawRow, len(st.rows))
}

// prepare computes the drawRow of frequency freq.
func (dr *Drawer) prepare(freq int64) (drawRow, error) {
	if err := checkFreq(freq); err != nil {
		return drawRow{}, fmt.Errorf("sanitize: draw: %w", err)
	}
	s, d, err := dr.t.samplerFor(freq)
	if err != nil {
		return drawRow{}, err
	}
	return dr.rowOf(freq, s, d), nil
}

// rowOf returns the drawRow of frequency freq from its sampler s, shifted
// by d.
func (dr *Drawer) rowOf(freq int64, s *sampler, d int64) drawRow {
	r := drawRow{s: s, d: d, ready: true}
	if q := dr.t.s.Q(freq); s.pi < q {
		r.coin, r.keep = true, keepThreshold(s.pi, q)
	}
	return r
}

// remember keeps the drawRow of a frequency outside the stationary cycle.
func (dr *Drawer) remember(freq int64, r drawRow) {
	if freq < denseDraws {
		if dr.dense == nil {
			dr.dense = make([]drawRow, denseDraws)
		}
		dr.dense[freq] = r
	} else {
		if dr.sparse == nil {
			dr.sparse = make(map[int64]drawRow)
		}
		dr.sparse[freq] = r
	}
}

// keepThreshold returns the K for which Table.Draw's test "report unless
// rng.Float64()*q >= pi" is "report iff u < K", u the low 53 bits of the
// word Float64 consumes (Float64 returns u/2^53). For 0 <= pi < q, u/2^53
// is exact and rounding is monotone, so fl(fl(u/2^53) q) is non-decreasing
// in u and {u : fl(u/2^53 q) < pi} is the prefix [0, K); at u = 2^53 the
// product is q > pi, so K <= 2^53. The integer test thus takes exactly the
// same decisions from the same words as the float64 one.
func keepThreshold(pi, q float64) uint64 {
	lo, hi := uint64(0), uint64(1)<<53 // invariant: the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if float64(mid)/(1<<53)*q >= pi {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Prepare computes, on up to workers goroutines, the rows of the distinct
// frequencies in freqs that the Drawer has not prepared yet, so that the
// Draw calls that follow find them ready. Frequencies close together are
// prepared in ascending order along one walk on one goroutine, which steps
// each row between them once (Draw alone walks from the cheapest start for
// each frequency whose row is not cached); distant ones, each a restart of its
// own, spread over the goroutines.
// Preparing takes no randomness, so the outcomes of the Draw calls, and the
// words they take from the generator, are those without Prepare. A
// frequency that is invalid or whose row fails (a JunctionError) is left to
// Draw, which returns the error in its place.
func (dr *Drawer) Prepare(freqs []int64, workers int) {
	p := dr.preparation(freqs)
	p.compute(workers)
	p.commit()
}

// StartPrepare is Prepare running beside the caller: it returns at once,
// and the rows are computed on up to workers goroutines of their own while
// the caller goes on drawing (a release draws one batch of keys while the
// next batch's rows are computed). The Drawer takes the rows when the
// caller calls Wait; until then Draw computes what it needs itself, as
// without Prepare, so the outcomes are the same either way. The
// Preparation must be waited for before the Drawer is dropped.
func (dr *Drawer) StartPrepare(freqs []int64, workers int) *Preparation {
	p := dr.preparation(freqs)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.compute(workers)
	}()
	return p
}

// Preparation is a Prepare under way (Drawer.StartPrepare).
type Preparation struct {
	dr       *Drawer
	clusters [][]int64
	results  [][]drawRow
	done     chan struct{} // closed when compute returns (StartPrepare)
}

// Wait waits for the rows and gives them to the Drawer. It is called on
// the Drawer's goroutine; a second call does nothing.
func (p *Preparation) Wait() {
	if p.done != nil {
		<-p.done
	}
	p.commit()
}

// preparation returns the Preparation of the distinct frequencies in
// freqs that the Drawer has not prepared yet, cut into clusters (on the
// Drawer's goroutine: it reads what the Drawer holds).
func (dr *Drawer) preparation(freqs []int64) *Preparation {
	p := &Preparation{dr: dr}
	if referenceOnly {
		return p // Draw computes each row when it needs it
	}
	var todo []int64
	for _, f := range freqs {
		if checkFreq(f) != nil || dr.prepared(f) {
			continue
		}
		todo = append(todo, f)
	}
	slices.Sort(todo)
	todo = slices.Compact(todo)
	p.clusters = dr.t.clusters(todo)
	p.results = make([][]drawRow, len(p.clusters))
	return p
}

// compute computes the clusters' rows on up to workers goroutines (the
// caller is one of them); it touches only the Table, which is safe for
// concurrent use, and p.results.
func (p *Preparation) compute(workers int) {
	t, clusters := p.dr.t, p.clusters
	// Each cluster starts afresh (w.cu nil), in the row buffers of the
	// cursor the one before it on the same goroutine ended with.
	run := func(w *rowWalker, c int) {
		rows := make([]drawRow, len(clusters[c]))
		w.retire()
		for k, f := range clusters[c] {
			s, d, err := w.sampler(f, true)
			if err != nil {
				w.retire() // the next frequency starts afresh (Draw reports this one's error)
				continue
			}
			rows[k] = p.dr.rowOf(f, s, d)
		}
		p.results[c] = rows
	}
	if workers < 2 || len(clusters) < 2 {
		w := rowWalker{t: t}
		for c := range clusters {
			run(&w, c)
		}
		return
	}
	// The workers take the clusters in order by an atomic counter (a
	// channel's hand-off, a wake-up per cluster, cost more than most
	// clusters when the rows are near kept or anchored ones); the caller
	// is one of them.
	var next atomic.Int64
	work := func() {
		w := rowWalker{t: t}
		for c := next.Add(1) - 1; c < int64(len(clusters)); c = next.Add(1) - 1 {
			run(&w, int(c))
		}
	}
	var wg sync.WaitGroup
	for range min(workers, len(clusters)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// commit gives the computed rows to the Drawer, once.
func (p *Preparation) commit() {
	for c, rows := range p.results {
		for k, r := range rows {
			if r.ready && !p.dr.prepared(p.clusters[c][k]) {
				p.dr.remember(p.clusters[c][k], r)
			}
		}
	}
	p.results = nil
}

// clusters cuts todo (distinct frequencies, ascending) into the runs that
// Prepare walks one each: runs of frequencies less than a restart apart,
// cut where a start of the next frequency (a kept row, rowChain.startCost)
// computes no more rows than walking on from the one before. The clusters
// then step the rows one walk would, on several goroutines. Below the
// first junction the rows are the chain from row 0, which no fresh start
// reaches: there only a kept row cuts, or a gap of more than 2^16
// (minRestartFrom), as in a table without restarts. (Cut at gaps of a
// block, a cold table's clusters there each started from the checkpoint
// that another goroutine's walk of the same chain had just recorded, and
// walked that chain again beside it: 90,000 rows for the 65,000 below 2^16
// in the eps 0.1 Zipf release at tau 1e-5, docs/performance.md.)
func (t *Table) clusters(todo []int64) [][]int64 {
	gap := func(f int64) int64 {
		if t.plan.enabled() && f >= t.plan.from {
			return t.plan.block
		}
		return minRestartFrom
	}
	var clusters [][]int64
	for k := 0; k < len(todo); {
		end := k + 1
		for end < len(todo) && todo[end]-todo[end-1] <= gap(todo[end]) && t.startCost(todo[end]) > todo[end]-todo[end-1] {
			end++
		}
		clusters = append(clusters, todo[k:end])
		k = end
	}
	return clusters
}

// prepared reports whether Draw finds frequency f ready without computing
// its row.
func (dr *Drawer) prepared(f int64) bool {
	if f < denseDraws {
		return dr.dense != nil && dr.dense[f].ready
	}
	if dr.cycle != nil && f >= dr.cycFrom {
		return true // the stationary cycle: cheap
	}
	return dr.sparse[f].ready
}
