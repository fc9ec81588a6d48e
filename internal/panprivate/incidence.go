package panprivate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
)

// incidenceSpec registers the t-incidence: the fraction of users appearing
// exactly t times.
func incidenceSpec() kindSpec {
	return kindSpec{
		kind: KindIncidence, code: 3,
		algorithms: []Algorithm{AlgorithmDwork}, defaultAlgorithm: AlgorithmDwork,
		maxEpsilon: 1, // Theorem 5.1
		params: []Param{
			{Name: "t", Required: true, Doc: "the target incidence: the estimate is the fraction of users appearing exactly t times; 1 <= t <= max_occurrences"},
			{Name: "k", Doc: fmt.Sprintf("the largest modulus: the moduli are drawn from the primes up to k; 2 <= k <= %d (default: a range from accuracy.alpha, primes up to %d)", maxModulus, defaultMaxModulus)},
			maxOccurrencesParam(),
			{Name: "moduli", Doc: fmt.Sprintf("the number of random primes (hash functions); 1 <= moduli <= %d (default %d)", maxModuli, defaultModuli)},
		},
		check: checkIncidence,
		checkState: func(c Config, maxCells int) error {
			if c.SampleSize*c.Moduli > maxCells {
				return checks.Errorf("sample_size", "times moduli must be at most %d", maxCells)
			}
			return nil
		},
		build:   func(b *base) (Estimator, error) { return newIncidence(b) },
		decode:  func(b *base, r *binenc.Reader) (Estimator, error) { return decodeIncidence(b, r) },
		example: Config{Estimator: KindIncidence, Epsilon: 1, UniverseSize: 1000, SampleSize: 100, T: 2, MaxOccurrences: 8},
	}
}

// checkIncidence checks t, max_occurrences, moduli and k, and fills in the
// default number of moduli.
func checkIncidence(c *Config) error {
	if err := c.validateOccurrences(); err != nil {
		return err
	}
	if c.T < 1 || c.T > c.MaxOccurrences {
		return checks.Errorf("t", "must be between 1 and max_occurrences")
	}
	if c.Moduli == 0 {
		c.Moduli = defaultModuli
	}
	if c.Moduli < 1 || c.Moduli > maxModuli {
		return checks.Errorf("moduli", "must be between 1 and %d", maxModuli)
	}
	if n := len(primesUpTo(defaultMaxModulus)); c.K == 0 && c.Moduli > n {
		return checks.Errorf("moduli", "must be at most %d, the primes up to %d, unless k widens the range", n, defaultMaxModulus)
	}
	if c.K != 0 && (c.K < 2 || c.K > maxModulus) {
		return checks.Errorf("k", "must be between 2 and %d (the largest modulus) for incidence", maxModulus)
	}
	if c.K != 0 && len(primesUpTo(c.K)) < c.Moduli {
		return checks.Errorf("k", "must leave at least moduli primes in 2..k")
	}
	return nil
}

// incidence is the t-incidence estimator of Dwork et al., Fig. 4, built from
// the modular incidence counters of Fig. 5.
//
// It draws `moduli` distinct random primes p_1..p_l from a range R (the
// primes up to k, or the smallest range holding 4 ln N / alpha primes,
// capped at maxModulus). Every user x of the sample M has, for each prime, a
// counter mod p started from noise i with probability proportional to
// exp(-eps' i/(p-1)), eps' = eps/l, and advanced at each appearance (moved
// back at each deletion, so it counts net appearances). Noise values differ
// in probability by at most a factor e^eps', so each counter is eps'-DP and
// the state eps-DP.
//
// A release computes, for each prime, the fractions s of counters at each
// value, adds Lap(1/(eps' m)) to each, and recovers the fractions f of users
// by net count mod p from s ~ N f (N_ij = P(noise = i - j mod p)) with a
// linear program (gonum's simplex): minimize ||N f - q||_1 subject to f >= 0,
// sum f = 1. Fig. 5 asks for any f with |N f - q| <= alpha/2 entrywise; the
// least-absolute-deviation fit is the smallest such band's L1 analogue,
// always feasible, and the maximum-likelihood fit under the Laplace noise.
// The estimate is the minimum over the primes of f[t mod p] (each an
// over-estimate: users whose count collides with t mod p add to it).
//
// An announced intrusion adds fresh noise to every counter, so the noise law
// becomes the (intrusions+1)-fold cyclic convolution of the initial one,
// which the linear program then uses; the ratio bound is preserved.
type incidence struct {
	*base
	primes   []int
	laws     []modNoise // per prime: the initial noise law
	counters [][]uint8  // counters[i][x] in [0, p_i)
}

// modNoise is the initial noise law of a modular incidence counter, with
// P(noise = j) = weights[j] / 2^53 exactly.
type modNoise struct {
	weights []uint64
	cum     []uint64 // cum[j] = weights[0] + ... + weights[j]
}

// newModNoise returns the law P(j) proportional to exp(-eps j/(p-1)) on
// 0..p-1, quantized to multiples of 2^-53 such that the largest and smallest
// probabilities differ by at most a factor e^eps (checked in float64).
func newModNoise(p int, eps float64) (modNoise, error) {
	w := make([]float64, p)
	var z float64
	for j := range w {
		w[j] = math.Exp(-eps * float64(j) / float64(p-1))
		z += w[j]
	}
	weights := make([]uint64, p)
	var rest uint64
	for j := 1; j < p; j++ {
		weights[j] = uint64(math.Round(w[j] / z * probUnit))
		rest += weights[j]
	}
	weights[0] = probUnit - rest
	for i := 0; float64(weights[0])/float64(weights[p-1]) > math.Exp(eps); i++ {
		if i > 1024 || weights[0] <= weights[p-1] {
			return modNoise{}, fmt.Errorf("panprivate: cannot build incidence noise for p=%d, epsilon %g", p, eps)
		}
		weights[0]--
		weights[p-1]++
	}
	return modNoiseFrom(weights), nil
}

func modNoiseFrom(weights []uint64) modNoise {
	cum := make([]uint64, len(weights))
	var s uint64
	for j, w := range weights {
		s += w
		cum[j] = s
	}
	return modNoise{weights: weights, cum: cum}
}

// draw samples a noise value.
func (l modNoise) draw(rng *rand.Rand) int {
	u := rng.Uint64() >> 11
	return sort.Search(len(l.cum), func(j int) bool { return u < l.cum[j] })
}

// probs returns the law as float64 probabilities.
func (l modNoise) probs() []float64 {
	out := make([]float64, len(l.weights))
	for j, w := range l.weights {
		out[j] = float64(w) / probUnit
	}
	return out
}

// convolvedProbs returns the law of the sum mod p of n+1 independent draws.
// The convolutions converge to the uniform law geometrically (every Fourier
// coefficient but the first has modulus below 1/2), so at most
// maxConvolutions are computed.
func (l modNoise) convolvedProbs(n int) []float64 {
	base := l.probs()
	out := slices.Clone(base)
	p := len(base)
	for k := 0; k < min(n, maxConvolutions); k++ {
		next := make([]float64, p)
		for i, a := range out {
			for j, b := range base {
				next[(i+j)%p] += a * b
			}
		}
		out = next
	}
	return out
}

const maxConvolutions = 128

// primesUpTo returns the primes <= n in increasing order.
func primesUpTo(n int) []int {
	if n < 2 {
		return nil
	}
	composite := make([]bool, n+1)
	var ps []int
	for i := 2; i <= n; i++ {
		if composite[i] {
			continue
		}
		ps = append(ps, i)
		for j := i * i; j <= n; j += i {
			composite[j] = true
		}
	}
	return ps
}

// incidencePrimeRange returns the primes the moduli are drawn from: those up
// to k if k is set, else the smallest range {1..r} holding at least
// 4 ln N / alpha primes (Fig. 4), capped at defaultMaxModulus: the error of
// the recovered fractions grows like sqrt(p)/eps, so small primes are far
// more accurate at practical sample sizes, and the minimum over several
// primes absorbs their collisions.
func incidencePrimeRange(c Config) []int {
	all := primesUpTo(defaultMaxModulus)
	if c.K != 0 {
		return primesUpTo(c.K)
	}
	need := int(math.Ceil(4 * math.Log(float64(c.MaxOccurrences)) / c.alpha()))
	need = max(need, c.Moduli)
	if need > len(all) {
		need = len(all)
	}
	return all[:need]
}

func newIncidence(b *base) (*incidence, error) {
	c := b.cfg
	cands := incidencePrimeRange(c)
	idx := b.rng.Perm(len(cands))[:c.Moduli]
	slices.Sort(idx)
	primes := make([]int, c.Moduli)
	for i, j := range idx {
		primes[i] = cands[j]
	}
	in := &incidence{base: b, primes: primes}
	if err := in.buildLaws(); err != nil {
		return nil, err
	}
	m := c.SampleSize
	in.counters = make([][]uint8, len(primes))
	for i := range primes {
		in.counters[i] = make([]uint8, m)
		for x := range in.counters[i] {
			in.counters[i][x] = uint8(in.laws[i].draw(b.rng))
		}
	}
	return in, nil
}

func (in *incidence) buildLaws() error {
	epsEach := in.cfg.Epsilon / float64(len(in.primes))
	in.laws = make([]modNoise, len(in.primes))
	for i, p := range in.primes {
		l, err := newModNoise(p, epsEach)
		if err != nil {
			return err
		}
		in.laws[i] = l
	}
	return nil
}

// Privacy: a release adds Lap(k/(eps m)) to every entry of each of the k
// moduli's histograms of counter fractions; one user's counter sits in one
// bucket per modulus, so changing it moves two entries by 1/m each: l1
// sensitivity 2k/m in all, and the release costs exactly 2 eps.
func (in *incidence) Privacy() Privacy {
	return in.privacy(in.cfg.Epsilon, 2*in.cfg.Epsilon)
}

func (in *incidence) Apply(events []Event) error {
	ids, err := in.resolve(events, true)
	if err != nil {
		return err
	}
	m := uint64(in.cfg.SampleSize)
	for k, u := range ids {
		x := in.perm.forward(u)
		if x >= m {
			continue
		}
		for i, p := range in.primes {
			c := int(in.counters[i][x])
			if events[k].Delete {
				c += p - 1
			} else {
				c++
			}
			if c >= p {
				c -= p
			}
			in.counters[i][x] = uint8(c)
		}
	}
	return nil
}

// histogram returns the fractions of users whose counter for prime i shows
// each value.
func (in *incidence) histogram(i int) []float64 {
	p := in.primes[i]
	h := make([]float64, p)
	for _, c := range in.counters[i] {
		h[c]++
	}
	for j := range h {
		h[j] /= float64(in.cfg.SampleSize)
	}
	return h
}

// residueFractions recovers the fractions of users by count mod p_i from
// the noisy histogram q.
func (in *incidence) residueFractions(i int, q []float64) ([]float64, error) {
	return solveIncidenceLP(in.laws[i].convolvedProbs(in.stats.Intrusions), q)
}

func (in *incidence) Release(noise dprand.Laplacer) (Release, error) {
	if err := in.beginRelease(noise); err != nil {
		return Release{}, err
	}
	scale, spent := in.releaseScale(float64(len(in.primes))/(in.cfg.Epsilon*float64(in.cfg.SampleSize)), 2*in.cfg.Epsilon)
	best := math.Inf(1)
	for i, p := range in.primes {
		q := in.histogram(i)
		for j := range q {
			x, err := laplace(noise, scale)
			if err != nil {
				return Release{}, err
			}
			q[j] += x
		}
		f, err := in.residueFractions(i, q)
		if err != nil {
			return Release{}, fmt.Errorf("panprivate: incidence release, modulus %d: %w", p, err)
		}
		best = min(best, f[in.cfg.T%p])
	}
	in.stats.Releases++
	r := Release{Estimate: best, EpsilonSpent: spent, Min: 0, Max: 1, Bound: true}
	r.StandardError = in.standardErrorBound(scale)
	return r, nil
}

// standardErrorBound bounds the standard error of a release with Laplace
// scale `scale` per histogram entry (docs/errorbars-streams.md, §incidence).
// No theorem states the variance of the linear program's fit (Theorem 5.1
// of Dwork et al. gives an (alpha, beta) guarantee with unstated constants),
// so pwsd bounds it by the fit it approximates away from the constraints,
// the linear inverse f = N^-1 q, taken in the worst case over the unknown
// histogram: for the target residue j with row a of N^-1, the multinomial
// histogram of the m sampled counters adds at most (max a - min a)^2/(4m),
// the release noise 2 scale^2 |a|^2, the sample's own fraction at most
// 1/(4m). The largest over the moduli is returned, capped at 1/2, the
// largest standard deviation of any estimate in [0, 1]. The constraints
// f >= 0, sum f = 1 of the actual fit make it conservative.
func (in *incidence) standardErrorBound(scale float64) float64 {
	m := float64(in.cfg.SampleSize)
	worst := 0.0
	for i, p := range in.primes {
		w := in.laws[i].convolvedProbs(in.stats.Intrusions)
		N := mat.NewDense(p, p, nil)
		for r := 0; r < p; r++ {
			for c := 0; c < p; c++ {
				N.Set(r, c, w[((r-c)%p+p)%p])
			}
		}
		var inv mat.Dense
		if err := inv.Inverse(N); err != nil {
			return 0.5
		}
		row := inv.RawRowView(in.cfg.T % p)
		lo, hi, sq := math.Inf(1), math.Inf(-1), 0.0
		for _, a := range row {
			lo, hi, sq = min(lo, a), max(hi, a), sq+a*a
		}
		v := (hi-lo)*(hi-lo)/(4*m) + 2*scale*scale*sq + 1/(4*m)
		worst = max(worst, v)
	}
	if se := math.Sqrt(worst); se < 0.5 { // false for NaN: an ill-conditioned inverse states the cap
		return se
	}
	return 0.5
}

// errLP reports a failure of the simplex method.
var errLP = errors.New("linear program failed")

// solveIncidenceLP solves min ||N f - q||_1 s.t. f >= 0, sum f = 1 with
// N_ij = noise[(i - j) mod p], using gonum's simplex in standard form over
// x = (f, s+, s-).
//
// N is nearly (1/p) J, so its columns are nearly parallel and gonum's dense
// simplex loses the basis to round-off. Since sum f = 1, N f = 1/p + D f with
// D = N - 1/p, so the same problem is posed on D scaled to unit maximum
// (sigma): D' f - s+ + s- = (q - 1/p)/sigma, 1'f = 1, minimize 1's+ + 1's-
// (the objective is the original one divided by sigma). The right-hand side
// is perturbed by at most 1e-9 to break the degeneracy of exactly fitting
// inputs, which otherwise stalls the simplex. It starts from the basis
// f = e_0 with the slacks that absorb the residual and falls back to gonum's
// phase I.
func solveIncidenceLP(noise, q []float64) (f []float64, err error) {
	p := len(noise)
	shift := 1 / float64(p)
	var sigma float64
	for _, v := range noise {
		sigma = max(sigma, math.Abs(v-shift))
	}
	if !(sigma > 0) {
		return nil, fmt.Errorf("%w: uniform noise law carries no information", errLP)
	}
	A := mat.NewDense(p+1, 3*p, nil)
	b := make([]float64, p+1)
	for i := 0; i < p; i++ {
		for j := 0; j < p; j++ {
			A.Set(i, j, (noise[((i-j)%p+p)%p]-shift)/sigma)
		}
		A.Set(i, p+i, -1)
		A.Set(i, 2*p+i, 1)
		A.Set(p, i, 1)
		b[i] = (q[i]-shift)/sigma + 1e-9*float64(i+1)/float64(p)
	}
	b[p] = 1
	c := make([]float64, 3*p)
	for j := p; j < 3*p; j++ {
		c[j] = 1
	}
	basic := make([]int, 0, p+1)
	basic = append(basic, 0)
	for i := 0; i < p; i++ {
		if A.At(i, 0)-b[i] >= 0 {
			basic = append(basic, p+i)
		} else {
			basic = append(basic, 2*p+i)
		}
	}
	_, x, err := simplexRecover(c, A, b, basic)
	if err != nil {
		_, x, err = simplexRecover(c, A, b, nil)
	}
	if err != nil {
		return nil, err
	}
	f = x[:p:p]
	var s float64
	for j := range f {
		f[j] = max(f[j], 0)
		s += f[j]
	}
	if !(s > 0) {
		return nil, fmt.Errorf("%w: degenerate solution", errLP)
	}
	for j := range f {
		f[j] /= s
	}
	return f, nil
}

// simplexRecover calls lp.Simplex, turning its panics on a numerically
// infeasible initial basis into errors.
func simplexRecover(c []float64, A mat.Matrix, b []float64, basic []int) (opt float64, x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			opt, x, err = 0, nil, fmt.Errorf("%w: %v", errLP, r)
		}
	}()
	opt, x, err = lp.Simplex(c, A, b, 1e-10, basic)
	if err != nil {
		err = fmt.Errorf("%w: %w", errLP, err)
	}
	return opt, x, err
}

func (in *incidence) state() State {
	s := in.stateHeader()
	s.Users = in.sampleUsers()
	for i, p := range in.primes {
		cs := make([]uint64, len(in.counters[i]))
		for x, v := range in.counters[i] {
			cs[x] = uint64(v)
		}
		s.Moduli = append(s.Moduli, ModulusState{P: p, Noise: in.laws[i].convolvedProbs(in.stats.Intrusions), Counters: cs})
	}
	return s
}

// Intrude returns the state, then adds fresh noise to every counter.
func (in *incidence) Intrude() State {
	s := in.state()
	for i, p := range in.primes {
		for x := range in.counters[i] {
			in.counters[i][x] = uint8((int(in.counters[i][x]) + in.laws[i].draw(in.rng)) % p)
		}
	}
	in.stats.Intrusions++
	return s
}

func (in *incidence) MarshalBinary() ([]byte, error) {
	w := in.encodeBase()
	for i, p := range in.primes {
		w.Uvarint(uint64(p))
		vals := make([]uint64, len(in.counters[i]))
		for x, v := range in.counters[i] {
			vals[x] = uint64(v)
		}
		w.Packed(vals, binenc.WidthFor(uint64(p)))
	}
	return w.Bytes(), nil
}

func decodeIncidence(b *base, r *binenc.Reader) (*incidence, error) {
	in := &incidence{base: b}
	cands := incidencePrimeRange(b.cfg)
	m := uint64(b.cfg.SampleSize)
	for i := 0; i < b.cfg.Moduli; i++ {
		p := int(r.Intn(maxModulus))
		if r.Err() == nil && (!slices.Contains(cands, p) || slices.Contains(in.primes, p)) {
			r.Fail("bad modulus")
		}
		if r.Err() != nil {
			return nil, fmt.Errorf("incidence moduli: %w", r.Err())
		}
		in.primes = append(in.primes, p)
		vals := r.Packed(m, binenc.WidthFor(uint64(p)), uint64(p))
		cs := make([]uint8, m)
		for x, v := range vals {
			cs[x] = uint8(v)
		}
		in.counters = append(in.counters, cs)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("incidence counters: %w", r.Err())
	}
	if err := in.buildLaws(); err != nil {
		return nil, err
	}
	return in, nil
}
