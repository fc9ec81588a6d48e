package panprivate

import (
	"fmt"
	"math"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// heavyHittersSpec registers the heavy hitters: the fraction of users
// appearing at least k times.
func heavyHittersSpec() kindSpec {
	return kindSpec{
		kind: KindHeavyHitters, code: 2,
		algorithms: []Algorithm{AlgorithmDwork, AlgorithmOptBern}, defaultAlgorithm: AlgorithmDwork,
		maxEpsilon: 0.5, bitLaw: true,
		params: []Param{
			{Name: "k", Required: true, Doc: "the heavy-hitter threshold: the estimate is the fraction of users appearing at least k times; 1 <= k <= max_occurrences"},
			maxOccurrencesParam(),
			{Name: "rho", Doc: fmt.Sprintf("closeness: the answer is accurate for a (1+rho)-close stream; 0 < rho <= 1 (default %g)", defaultRho)},
		},
		check: func(c *Config) error {
			if err := c.validateOccurrences(); err != nil {
				return err
			}
			if c.K < 1 || c.K > c.MaxOccurrences {
				return checks.Errorf("k", "must be between 1 and max_occurrences")
			}
			if c.Rho == 0 {
				c.Rho = defaultRho
			}
			if !(c.Rho > 0) || c.Rho > 1 {
				return checks.Errorf("rho", "must be greater than 0 and at most 1")
			}
			return nil
		},
		checkState: func(c Config, maxCells int) error {
			th, _ := hhLayout(c)
			if th == nil {
				return checks.Errorf("rho", "gives more than %d cropped-mean tables for max_occurrences", maxHHTables)
			}
			if c.SampleSize*len(th) > maxCells {
				return checks.Errorf("sample_size", "times the number of cropped-mean tables must be at most %d", maxCells)
			}
			return nil
		},
		build:   func(b *base) (Estimator, error) { return newHeavyHitters(b), nil },
		decode:  func(b *base, r *binenc.Reader) (Estimator, error) { return decodeHeavyHitters(b, r) },
		example: Config{Estimator: KindHeavyHitters, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 100, K: 4, MaxOccurrences: 16},
	}
}

// maxHHTables bounds the number of cropped-mean tables of heavy_hitters.
const maxHHTables = 64

// hhLayout returns the cropped-mean thresholds of heavy_hitters in units of
// 1/resolution: T_i = round((1+rho)^i * resolution) for i = 0..l, where l is
// the smallest index with (1+rho)^l >= N (1+rho), so that every randomized
// multiplicity n r_x <= N (1+rho) lies below the last threshold. The
// resolution is the multiplicity precision N/alpha of Fig. 3 (capped at
// 2^20). It returns nil if the thresholds are not strictly increasing or too
// many.
func hhLayout(c Config) (thresholds []uint64, resolution uint64) {
	res := math.Ceil(float64(c.MaxOccurrences) / c.alpha())
	resolution = uint64(min(res, 1<<20))
	top := float64(c.MaxOccurrences) * (1 + c.Rho)
	for i := 0; i < maxHHTables; i++ {
		t := math.Pow(1+c.Rho, float64(i))
		T := uint64(math.Round(t * float64(resolution)))
		if i > 0 && T <= thresholds[i-1] {
			return nil, resolution
		}
		thresholds = append(thresholds, T)
		if t >= top*(1-1e-12) {
			return thresholds, resolution
		}
	}
	return nil, resolution
}

// heavyHitters is the k-heavy-hitter estimator of Dwork et al., Fig. 3.
// Every user x of the sample M gets a random multiplicity r_x in
// {1, 1 + 1/R, ..., 1 + rho} (R the resolution N/alpha) and counts as r_x
// appearances in l+1 cropped-mean tables with thresholds t_i = (1+rho)^i
// (counters in units of 1/R, so the real multiplicities are exact). The
// table i estimates e_i, the mean of min(n_x r_x, t_i); the recursion of
// Fig. 3 turns them into v_i, the fraction of users with n_x r_x in
// (t_i, t_{i+1}], and the release is sum_{i >= j} v_i + Lap(1/(eps m)) with
// j = ceil(log_{1+rho} k): the fraction of users with n_x r_x > t_j >= k.
// (Fig. 3's step 4 prints v_j alone, the fraction in one interval; the
// fraction of heavy hitters is the sum over the intervals above t_j.)
//
// Each table's bits are eps-DP, so the state is (l+1) eps-DP (Theorem 4.1:
// eps (1 + log N / rho)). Deletions are not supported. Announced intrusions
// are handled as for croppedMean, table by table.
type heavyHitters struct {
	*base
	thresholds []uint64 // T_i in units of 1/resolution
	resolution uint64
	mult       []uint32 // r_x = 1 + mult[x]/resolution
	// counters[x*L+i] in [0, T_i) and bit x*L+i belong to user x and table
	// i (user-major, so an event touches one or two cache lines).
	counters []uint64
	bits     bitset
}

func newHeavyHitters(b *base) *heavyHitters {
	h := &heavyHitters{base: b}
	h.thresholds, h.resolution = hhLayout(b.cfg)
	m := b.cfg.SampleSize
	maxMult := h.maxMult()
	h.mult = make([]uint32, m)
	for x := range h.mult {
		h.mult[x] = uint32(b.rng.Uint64N(maxMult + 1))
	}
	L := len(h.thresholds)
	h.counters = make([]uint64, m*L)
	h.bits = newBitset(uint64(m * L))
	for x := 0; x < m; x++ {
		for i, T := range h.thresholds {
			h.counters[x*L+i] = b.rng.Uint64N(T)
			h.bits.set(uint64(x*L+i), b.law.draw(b.rng, false))
		}
	}
	return h
}

// maxMult returns floor(rho R), the largest multiplicity offset.
func (h *heavyHitters) maxMult() uint64 {
	return uint64(math.Floor(h.cfg.Rho * float64(h.resolution)))
}

func (h *heavyHitters) Privacy() Privacy {
	return h.privacy(float64(len(h.thresholds))*h.cfg.Epsilon, h.releaseCost())
}

func (h *heavyHitters) Apply(events []Event) error {
	ids, err := h.resolve(events, false)
	if err != nil {
		return err
	}
	m, L := uint64(h.cfg.SampleSize), uint64(len(h.thresholds))
	for _, u := range ids {
		x := h.perm.forward(u)
		if x >= m {
			continue
		}
		inc := h.resolution + uint64(h.mult[x])
		cs := h.counters[x*L : (x+1)*L]
		for i, T := range h.thresholds {
			c := cs[i] + inc
			if c >= T {
				c %= T
				h.bits.set(x*L+uint64(i), h.law.draw(h.rng, true))
			}
			cs[i] = c
		}
	}
	return nil
}

// croppedMeans returns the noiseless estimates e_i and the thresholds t_i.
func (h *heavyHitters) croppedMeans() (e, t []float64) {
	m, L := h.cfg.SampleSize, len(h.thresholds)
	ones := make([]int, L)
	for x := 0; x < m; x++ {
		for i := range ones {
			if h.bits.get(uint64(x*L + i)) {
				ones[i]++
			}
		}
	}
	e = make([]float64, L)
	t = make([]float64, L)
	for i, T := range h.thresholds {
		t[i] = float64(T) / float64(h.resolution)
		e[i] = t[i] * h.law.debias(float64(ones[i])/float64(m))
	}
	return e, t
}

// hhIntervals runs step 3 of Fig. 3: from the t_i-cropped means e_i
// (i = 0..l) it returns v_i, the estimated fraction of users with
// multiplicity in (t_i, t_{i+1}], with v_l = 0 (t_{l+1} = t_l).
func hhIntervals(e, t []float64) []float64 {
	l := len(e) - 1
	v := make([]float64, l+1)
	for i := l - 1; i >= 0; i-- {
		d := t[i+1] - t[i]
		eGE := e[i+1] - e[i] // (a) beyond t_i, of the t_i-heavy hitters, in e_{i+1}
		var eGT float64      // (c) beyond t_i, of the t_{i+1}-heavy hitters, in e_{i+1}
		if i+1 < l {
			d1 := t[i+2] - t[i+1]
			u := (e[i+2] - e[i+1]) - v[i+1]*d1/2 // (b) beyond t_{i+1}, of the t_{i+2}-heavy hitters
			eGT = v[i+1]*d + d/d1*u
		}
		v[i] = (eGE - eGT) / (d / 2) // (d), (e)
	}
	return v
}

// hhStart returns j = ceil(log_{1+rho} k): the first threshold >= k.
func (h *heavyHitters) hhStart(t []float64) int {
	for j, tj := range t {
		if tj >= float64(h.cfg.K)*(1-1e-12) {
			return j
		}
	}
	return len(t) - 1
}

func (h *heavyHitters) estimate() float64 {
	e, t := h.croppedMeans()
	v := hhIntervals(e, t)
	var s float64
	for i := h.hhStart(t); i < len(v); i++ {
		s += v[i]
	}
	return s
}

// coefficients returns the thresholds t_i and the coefficients c_i of the
// estimate sum_i c_i e_i in the cropped means (hhIntervals is linear for
// fixed thresholds).
func (h *heavyHitters) coefficients() (c, t []float64) {
	L := len(h.thresholds)
	t = make([]float64, L)
	for i, T := range h.thresholds {
		t[i] = float64(T) / float64(h.resolution)
	}
	start := h.hhStart(t)
	c = make([]float64, L)
	for i := range t {
		unit := make([]float64, L)
		unit[i] = 1
		v := hhIntervals(unit, t)
		for j := start; j < len(v); j++ {
			c[i] += v[j]
		}
	}
	return c, t
}

// releaseCost is the exact epsilon of one release. The estimate is linear in
// the cropped means, sum_i c_i e_i, and e_i = t_i debias(ones_i/m): one
// user's entries (one bit per table) move it by at most
// sum_i |c_i| t_i / (m gap). Against noise of scale 1/(eps m) that costs
// eps sum_i |c_i| t_i / gap.
func (h *heavyHitters) releaseCost() float64 {
	c, t := h.coefficients()
	var sens float64
	for i := range t {
		sens += math.Abs(c[i]) * t[i]
	}
	return h.cfg.Epsilon * sens / h.law.gap()
}

// errorModel bounds the variance of the noiseless estimate sum_i c_i e_i
// (docs/errorbars-streams.md, §heavy hitters). Given the sample and the
// multiplicities, the tables' bits are independent (each table's counters
// start independently), each with variance p(1-p) <= 1/4: the bits add at
// most sum_i c_i^2 t_i^2 / (4 m gap^2). The estimate's conditional mean is
// the sample mean of h(y_x) = sum_i c_i min(y_x, t_i), y_x = n_x r_x, whose
// variance over the sample and multiplicities is at most range(h)^2/(4m)
// (Popoviciu). The sum is a bound: the bits' variances are not known
// without the state.
func (h *heavyHitters) errorModel() errorModel {
	c, t := h.coefficients()
	m, gap := float64(h.cfg.SampleSize), h.law.gap()
	var bits float64
	for i := range t {
		bits += c[i] * c[i] * t[i] * t[i]
	}
	bits /= 4 * m * gap * gap
	hy := func(y float64) float64 {
		var s float64
		for i := range t {
			s += c[i] * min(y, t[i])
		}
		return s
	}
	lo, hi := hy(0), hy(0)
	for _, y := range t {
		lo, hi = min(lo, hy(y)), max(hi, hy(y))
	}
	v := bits + (hi-lo)*(hi-lo)/(4*m)
	return errorModel{lo: 0, hi: 1, bound: true, variance: func(float64) float64 { return v }}
}

func (h *heavyHitters) Release(noise dprand.Laplacer) (Release, error) {
	return h.noisyRelease(noise, h.estimate, 1/(h.cfg.Epsilon*float64(h.cfg.SampleSize)), h.releaseCost(), h.errorModel())
}

func (h *heavyHitters) state() State {
	s := h.stateHeader()
	s.Users = h.sampleUsers()
	m := uint64(h.cfg.SampleSize)
	s.Multiplicities = make([]float64, m)
	for x, j := range h.mult {
		s.Multiplicities[x] = 1 + float64(j)/float64(h.resolution)
	}
	for i, T := range h.thresholds {
		counters, bits := h.table(i)
		s.Tables = append(s.Tables, TableState{
			T:          float64(T) / float64(h.resolution),
			Resolution: h.resolution,
			Counters:   counters,
			Bits:       bits.string(m),
		})
	}
	return s
}

// table returns the counters and bits of table i in user order.
func (h *heavyHitters) table(i int) ([]uint64, bitset) {
	m, L := h.cfg.SampleSize, len(h.thresholds)
	counters, bits := make([]uint64, m), newBitset(uint64(m))
	for x := 0; x < m; x++ {
		counters[x] = h.counters[x*L+i]
		bits.set(uint64(x), h.bits.get(uint64(x*L+i)))
	}
	return counters, bits
}

func (h *heavyHitters) Intrude() State {
	s := h.state()
	L := len(h.thresholds)
	for x := 0; x < h.cfg.SampleSize; x++ {
		for i, T := range h.thresholds {
			k := x*L + i
			h.counters[k] = h.rng.Uint64N(T)
			h.bits.set(uint64(k), h.law.rerandomize(h.rng, h.bits.get(uint64(k))))
		}
	}
	h.law = h.law.shifted()
	h.stats.Intrusions++
	return s
}

func (h *heavyHitters) MarshalBinary() ([]byte, error) {
	w := h.encodeBase()
	m := uint64(h.cfg.SampleSize)
	mult := make([]uint64, m)
	for x, j := range h.mult {
		mult[x] = uint64(j)
	}
	w.Packed(mult, binenc.WidthFor(h.maxMult()+1))
	for i, T := range h.thresholds {
		counters, bits := h.table(i)
		w.Packed(counters, binenc.WidthFor(T))
		w.Bits(bits, m)
	}
	return w.Bytes(), nil
}

func decodeHeavyHitters(b *base, r *binenc.Reader) (*heavyHitters, error) {
	h := &heavyHitters{base: b}
	h.thresholds, h.resolution = hhLayout(b.cfg)
	m := uint64(b.cfg.SampleSize)
	mult := r.Packed(m, binenc.WidthFor(h.maxMult()+1), h.maxMult()+1)
	h.mult = make([]uint32, m)
	for x, j := range mult {
		h.mult[x] = uint32(j)
	}
	L := uint64(len(h.thresholds))
	h.counters = make([]uint64, m*L)
	h.bits = newBitset(m * L)
	for i, T := range h.thresholds {
		counters, bits := r.Packed(m, binenc.WidthFor(T), T), bitset(r.Bits(m))
		if r.Err() != nil {
			return nil, fmt.Errorf("heavy hitter tables: %w", r.Err())
		}
		for x := uint64(0); x < m; x++ {
			h.counters[x*L+uint64(i)] = counters[x]
			h.bits.set(x*L+uint64(i), bits.get(x))
		}
	}
	return h, nil
}
