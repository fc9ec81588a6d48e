package sanitize

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
)

func newRand(seed uint64) *rand.Rand { return dprand.Seeded(seed) }

// chiSquare draws n outcomes with draw and returns Pearson's statistic
// against row r (sampling probability q): categories "not reported" and
// each piece, those expected below 5 pooled; it also checks the values.
// A drawn piece that is not in r makes the statistic +Inf.
func chiSquare(t *testing.T, r Row, q float64, m Method, n int, draw func() (Outcome, error)) (float64, int) {
	t.Helper()
	probs := []float64{1 - r.Pi/q}
	index := map[Piece]int{}
	for k, pc := range r.Pieces {
		probs = append(probs, pc.P/q)
		index[pc] = k + 1
	}
	counts := make([]float64, len(probs))
	posSum, posN, foreign := 0.0, 0, 0
	for range n {
		o, err := draw()
		if err != nil {
			t.Fatal(err)
		}
		if !o.Reported {
			counts[0]++
			continue
		}
		k, ok := index[o.Piece]
		if !ok {
			foreign++
			continue
		}
		counts[k]++
		if m == MethodDiscrete {
			if o.Value != o.Piece.Hi {
				t.Fatalf("discrete value %v is not the token %v", o.Value, o.Piece.Hi)
			}
			continue
		}
		if !(o.Value > o.Piece.Lo && o.Value <= o.Piece.Hi) {
			t.Fatalf("value %v outside (%v, %v]", o.Value, o.Piece.Lo, o.Piece.Hi)
		}
		posSum += (o.Value - o.Piece.Lo) / (o.Piece.Hi - o.Piece.Lo)
		posN++
	}
	if posN > 1000 {
		// Uniform inside the piece: the mean relative position is 1/2.
		if d := math.Abs(posSum/float64(posN) - 0.5); d > 6*math.Sqrt(1.0/12/float64(posN)) {
			t.Errorf("row %d: mean relative position in piece %.4f, want 0.5", r.Frequency, posSum/float64(posN))
		}
	}
	stat, df, poolE, poolO := 0.0, -1, 0.0, 0.0
	for k, p := range probs {
		e := p * float64(n)
		if e < 5 {
			poolE += e
			poolO += counts[k]
			continue
		}
		stat += (counts[k] - e) * (counts[k] - e) / e
		df++
	}
	if poolE >= 5 {
		stat += (poolO - poolE) * (poolO - poolE) / poolE
		df++
	}
	if foreign > 0 {
		stat = math.Inf(1)
	}
	return stat, df
}

// Draw realises the table: over many draws (fixed seed) the frequencies of
// "not reported" and of each piece match pi_i/q_i and P/q_i (Pearson
// chi-square below df + 6 sqrt(2 df), far in the tail), values are the
// token (discrete) or uniform inside the piece (max_separation), for rows
// before and after the stationary point.
func TestDrawMatchesTable(t *testing.T) {
	t.Parallel()
	n := 60000
	if testing.Short() {
		n = 20000
	}
	p := mustPrivacy(t, 0.5, 1e-4)
	rng := newRand(7)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			for _, s := range []Sampling{mustSampling(t, SchemePPSWOR, 0.02, 1, nil), {Scheme: SchemeNone}} {
				tb := mustTable(t, p, s, m)
				for _, i := range []int64{3, 17, 40, 5000} {
					r, err := tb.Row(i)
					if err != nil {
						t.Fatal(err)
					}
					stat, df := chiSquare(t, r, s.Q(i), m, n, func() (Outcome, error) { return tb.Draw(i, rng) })
					if limit := float64(df) + 6*math.Sqrt(2*float64(df)) + 6; stat > limit {
						t.Errorf("%s %s row %d: chi-square %.1f with %d df (limit %.1f)", m, s.Scheme, i, stat, df, limit)
					}
				}
			}
		})
	}
}

// The chi-square check can fail: draws from a table with a slightly
// different epsilon (0.6 instead of 0.5) are rejected.
func TestDrawChiSquareDetectsWrongTable(t *testing.T) {
	t.Parallel()
	s := Sampling{Scheme: SchemeNone}
	tb := mustTable(t, mustPrivacy(t, 0.5, 1e-3), s, MethodDiscrete)
	wrong := mustTable(t, mustPrivacy(t, 0.6, 1e-3), s, MethodDiscrete)
	rng := newRand(3)
	r, _ := tb.Row(40)
	stat, df := chiSquare(t, r, 1, MethodDiscrete, 20000, func() (Outcome, error) { return wrong.Draw(40, rng) })
	if limit := float64(df) + 6*math.Sqrt(2*float64(df)) + 6; stat <= limit {
		t.Errorf("wrong table not detected: chi-square %.1f with %d df", stat, df)
	}
}

// delta = 1 means no privacy: with no sampling every key is reported.
func TestDeltaOneReportsEverything(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.1, 1)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			tb := mustTable(t, p, Sampling{Scheme: SchemeNone}, m)
			rng := newRand(1)
			for i := int64(1); i <= 3000; i++ {
				o, err := tb.Draw(i%97+1+i/100*1000, rng)
				if err != nil || !o.Reported {
					t.Fatalf("%s: key not reported (%v)", m, err)
				}
			}
			pi := ReportingProbabilities(p, Sampling{Scheme: SchemeNone}, 50)
			for i, v := range pi {
				if v != 1 {
					t.Fatalf("pi_%d = %v with delta = 1", i+1, v)
				}
			}
		})
	}
}

// DrawAll gives exactly the outcomes of Draw calls made in ascending order
// of frequency (ties in input order), with outcome k for input k.
func TestDrawAllMatchesDraw(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.2, 1e-6)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			s := mustSampling(t, SchemePPSWOR, 0.02, 1, nil)
			freqs := make([]int64, 5000)
			zr := newRand(11)
			for k := range freqs {
				freqs[k] = int64(math.Floor(math.Pow(1-zr.Float64(), -1.3))) // Zipf-like, heavy tail
			}
			got, err := mustTable(t, p, s, m).DrawAll(freqs, newRand(5), nil)
			if err != nil {
				t.Fatal(err)
			}
			order := make([]int, len(freqs))
			for k := range order {
				order[k] = k
			}
			sortStable(order, func(a, b int) bool { return freqs[a] < freqs[b] })
			tb := mustTable(t, p, s, m)
			rng := newRand(5)
			for _, k := range order {
				want, _ := tb.Draw(freqs[k], rng)
				if got[k] != want {
					t.Fatalf("%s: outcome %d (frequency %d): DrawAll %+v, Draw %+v", m, k, freqs[k], got[k], want)
				}
			}
			if _, err := tb.DrawAll([]int64{3, 0}, rng, nil); err == nil {
				t.Error("DrawAll accepted frequency 0")
			}
		})
	}
}

func sortStable(v []int, less func(a, b int) bool) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && less(v[j], v[j-1]); j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// Drawer takes exactly Table.Draw's decisions from the same words: for a
// fixed seed and a mixed sequence of frequencies (repeats, dense and map
// entries, rows before and beyond the stationary point), every outcome is
// bit for bit the same and both generators end in the same state.
func TestDrawerMatchesDraw(t *testing.T) {
	t.Parallel()
	probs := []float64{0.05, 0.1, 0.3, 0.3, 0.8}
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		for _, tc := range []struct {
			name string
			p    Privacy
			s    Sampling
		}{
			{"ppswor", mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 0.01, 1, nil)},
			{"priority", mustPrivacy(t, 1, 1e-4), mustSampling(t, SchemePriority, 0.002, 1.5, nil)},
			{"none", mustPrivacy(t, 0.3, 1e-3), Sampling{Scheme: SchemeNone}},
			{"custom", mustPrivacy(t, 0.5, 1e-3), mustSampling(t, SchemeCustom, 0, 0, probs)},
			{"delta 1", mustPrivacy(t, 0.5, 1), mustSampling(t, SchemePPSWOR, 0.05, 1, nil)},
		} {
			t.Run(string(m)+"/"+tc.name, func(t *testing.T) {
				zr := newRand(13)
				freqs := make([]int64, 30000)
				for k := range freqs {
					freqs[k] = int64(math.Min(1e6, math.Floor(math.Pow(1-zr.Float64(), -1.1))))
				}
				freqs[100], freqs[200] = denseDraws-1, denseDraws // both sides of the dense index
				a, b := mustTable(t, tc.p, tc.s, m), mustTable(t, tc.p, tc.s, m)
				ra, rb := newRand(21), newRand(21)
				dr := b.NewDrawer(rb)
				reported := 0
				for k, f := range freqs {
					want, err := a.Draw(f, ra)
					if err != nil {
						t.Fatal(err)
					}
					got, err := dr.Draw(f)
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("draw %d (frequency %d): Drawer %+v, Table.Draw %+v", k, f, got, want)
					}
					if got.Reported {
						reported++
					}
				}
				if ra.Uint64() != rb.Uint64() {
					t.Fatal("the generators ended in different states")
				}
				if reported == 0 {
					t.Fatal("nothing reported: the comparison saw no piece draws")
				}
				if (tc.name == "ppswor" || tc.name == "none") && dr.cycle == nil && !referenceOnly { // the reference build has no cycle of its own
					t.Fatal("the stationary cycle was never used: the comparison missed that path")
				}
				for _, f := range []int64{0, -3, MaxFrequency + 1} {
					if _, err := dr.Draw(f); !errors.Is(err, ErrFrequency) {
						t.Errorf("frequency %d: err %v, want ErrFrequency", f, err)
					}
				}
			})
		}
	}
}

// keepThreshold turns the float64 test into an integer one without
// changing a single decision: u < K exactly when u/2^53 * q < pi, checked
// at K-1, K and random words for random (pi, q) and at the edges.
func TestKeepThreshold(t *testing.T) {
	t.Parallel()
	rng := newRand(17)
	report := func(u uint64, pi, q float64) bool { return float64(u)/(1<<53)*q < pi }
	cases := [][2]float64{{0, 1}, {0, 1e-300}, {math.Nextafter(1, 0), 1}, {1e-300, 1}, {0.5, 0.5000000000000001}, {3e-9, 7e-9}}
	for range 2000 {
		q := rng.Float64()
		if rng.IntN(4) == 0 {
			q = math.Ldexp(q, -rng.IntN(900))
		}
		cases = append(cases, [2]float64{q * rng.Float64(), q})
	}
	for _, c := range cases {
		pi, q := c[0], c[1]
		if !(pi < q) {
			continue
		}
		k := keepThreshold(pi, q)
		if k > 1<<53 {
			t.Fatalf("pi %g q %g: K = %d > 2^53", pi, q, k)
		}
		if k > 0 && !report(k-1, pi, q) {
			t.Fatalf("pi %g q %g: word K-1 = %d is dropped by the float test", pi, q, k-1)
		}
		if k < 1<<53 && report(k, pi, q) {
			t.Fatalf("pi %g q %g: word K = %d is reported by the float test", pi, q, k)
		}
		for range 20 {
			u := rng.Uint64() & (1<<53 - 1)
			if (u < k) != report(u, pi, q) {
				t.Fatalf("pi %g q %g: word %d decided differently", pi, q, u)
			}
		}
	}
}

// binomialOK reports whether k successes in n trials are within 5 standard
// deviations (plus one count) of n p: a false alarm has probability below
// 1e-6 per check.
func binomialOK(k, n int, p float64) bool {
	return math.Abs(float64(k)-float64(n)*p) <= 5*math.Sqrt(float64(n)*p*(1-p))+1
}

// Drawer realises the table: at a fixed seed, the share of reported keys
// is pi_i/q_i within the binomial tolerance of binomialOK, and the joint
// distribution of "not reported" and each piece j passes Pearson's
// chi-square (below df + 6 sqrt(2 df) + 6), for dense and map-indexed
// frequencies, before and after the stationary point, and across
// frequencies drawn in turn from one Drawer.
func TestDrawerMatchesTable(t *testing.T) {
	t.Parallel()
	n := 60000
	if testing.Short() {
		n = 20000
	}
	p := mustPrivacy(t, 0.5, 1e-4)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		for _, s := range []Sampling{mustSampling(t, SchemePPSWOR, 0.02, 1, nil), {Scheme: SchemeNone}} {
			tb := mustTable(t, p, s, m)
			dr := tb.NewDrawer(newRand(29))
			for _, i := range []int64{3, 17, 40, 5000} {
				t.Run(fmt.Sprintf("%s/%s/%d", m, s.Scheme, i), func(t *testing.T) {
					r, err := tb.Row(i)
					if err != nil {
						t.Fatal(err)
					}
					reported := 0
					stat, df := chiSquare(t, r, s.Q(i), m, n, func() (Outcome, error) {
						o, err := dr.Draw(i)
						if o.Reported {
							reported++
						}
						if _, err := dr.Draw(i + 1); err != nil { // another row in between
							return o, err
						}
						return o, err
					})
					if want := r.Pi / s.Q(i); !binomialOK(reported, n, want) {
						t.Errorf("reported %d of %d, want %.5f of them", reported, n, want)
					}
					if limit := float64(df) + 6*math.Sqrt(2*float64(df)) + 6; stat > limit {
						t.Errorf("chi-square %.1f with %d df (limit %.1f)", stat, df, limit)
					}
				})
			}
		}
	}
}

// The binomial check can fail: at frequency 5 (pi_5 < q_5) the reporting
// rate of a table with delta 1e-4 is not that of delta 3e-4's row.
func TestBinomialDetectsWrongTable(t *testing.T) {
	t.Parallel()
	s := mustSampling(t, SchemePPSWOR, 0.02, 1, nil)
	right := mustTable(t, mustPrivacy(t, 0.5, 3e-4), s, MethodDiscrete)
	wrong := mustTable(t, mustPrivacy(t, 0.5, 1e-4), s, MethodDiscrete)
	r, err := right.Row(5)
	if err != nil {
		t.Fatal(err)
	}
	dr, n, reported := wrong.NewDrawer(newRand(31)), 20000, 0
	for range n {
		if o, _ := dr.Draw(5); o.Reported {
			reported++
		}
	}
	if r.Pi >= s.Q(5) {
		t.Fatalf("pi_5 = %g is not below q_5 = %g: the control tests nothing", r.Pi, s.Q(5))
	}
	if binomialOK(reported, n, r.Pi/s.Q(5)) {
		t.Errorf("wrong table not detected: %d of %d reported, right rate %.5f", reported, n, r.Pi/s.Q(5))
	}
}

// restartFreqs returns 3,000 frequencies of keys on a table with restart
// plan pl: every tenth isolated far up, some on either side of a junction,
// the others a dense cluster low down with repeats (drawn from seed).
func restartFreqs(pl restartPlan, seed uint64) []int64 {
	zr := newRand(seed)
	freqs := make([]int64, 3000)
	for k := range freqs {
		switch k % 10 {
		case 0: // isolated keys far up, some on either side of a junction
			j := pl.from + int64(k/10)*3*pl.block
			freqs[k] = j + []int64{-1, 0, 1, pl.block / 2}[k/10%4]
		default: // a dense cluster low down
			freqs[k] = 1 + int64(zr.IntN(5000))
		}
	}
	return freqs
}

// TestDrawerPrepareMatchesDraw checks that Drawer.Prepare (rows computed
// ahead on two goroutines, in clusters) changes nothing a Drawer outputs:
// the outcomes and the generator's words are those of a Drawer without it,
// bit for bit, on a table with restarts (isolated keys far up, a dense
// cluster low down, repeats), and every valid frequency is then ready.
func TestDrawerPrepareMatchesDraw(t *testing.T) {
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		p, s := mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-6, 1, nil)
		a, b := mustTable(t, p, s, m), mustTable(t, p, s, m)
		if !b.plan.enabled() {
			t.Fatal("the table has no restarts")
		}
		freqs := restartFreqs(b.plan, 5)
		freqs[7], freqs[8] = 0, MaxFrequency+1 // invalid: left to Draw
		plain, ahead := a.NewDrawer(newRand(3)), b.NewDrawer(newRand(3))
		for lo := 0; lo < len(freqs); lo += 500 {
			batch := freqs[lo : lo+500]
			ahead.Prepare(batch, 2)
			for _, f := range batch {
				if f >= 1 && f <= MaxFrequency && !ahead.prepared(f) && !referenceOnly { // the reference Prepare prepares nothing
					t.Fatalf("%s: frequency %d not ready after Prepare", m, f)
				}
			}
			for k, f := range batch {
				want, werr := plain.Draw(f)
				got, gerr := ahead.Draw(f)
				if (werr == nil) != (gerr == nil) || got != want {
					t.Fatalf("%s: element %d (frequency %d): %+v, %v with Prepare, %+v, %v without", m, lo+k, f, got, gerr, want, werr)
				}
			}
		}
		if b.Junctions().Coalesced+b.Junctions().Audited == 0 {
			t.Fatalf("%s: no junction verified: the restarts are not exercised", m)
		}
	}
}

// TestDrawerStartPrepareMatchesDraw checks that StartPrepare, each batch's
// rows computed while the batch before it is drawn (as a release does),
// changes nothing a Drawer outputs: the outcomes and the generator's words
// are those of a Drawer without it, bit for bit, on a fresh table with
// restarts (isolated keys far up, a dense cluster low down, repeats across
// batches, invalid frequencies), and each batch's frequencies are ready
// once its Preparation is waited for. Run under -race (make test), it also
// checks that the rows under way touch nothing the draws use.
func TestDrawerStartPrepareMatchesDraw(t *testing.T) {
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		p, s := mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-6, 1, nil)
		a, b := mustTable(t, p, s, m), mustTable(t, p, s, m)
		freqs := restartFreqs(b.plan, 7)
		freqs[7], freqs[1208] = 0, MaxFrequency+1 // invalid: left to Draw
		const size = 500
		plain, ahead := a.NewDrawer(newRand(3)), b.NewDrawer(newRand(3))
		ahead.Prepare(freqs[:size], 2)
		for lo := 0; lo < len(freqs); lo += size {
			var next *Preparation
			if hi := lo + size; hi < len(freqs) {
				next = ahead.StartPrepare(freqs[hi:min(hi+size, len(freqs))], 2)
			}
			for k, f := range freqs[lo : lo+size] {
				want, werr := plain.Draw(f)
				got, gerr := ahead.Draw(f)
				if (werr == nil) != (gerr == nil) || got != want {
					t.Fatalf("%s: element %d (frequency %d): %+v, %v with StartPrepare, %+v, %v without", m, lo+k, f, got, gerr, want, werr)
				}
			}
			if next == nil {
				continue
			}
			next.Wait()
			next.Wait() // a second Wait does nothing
			for _, f := range freqs[lo+size : min(lo+2*size, len(freqs))] {
				if f >= 1 && f <= MaxFrequency && !ahead.prepared(f) && !referenceOnly {
					t.Fatalf("%s: frequency %d not ready after Wait", m, f)
				}
			}
		}
	}
}

// TestDrawerPrepareLeavesErrors checks that a row Prepare cannot compute (a
// junction that fails) is left to Draw, which returns its error in place,
// while the rows inside the block above it are prepared and drawn.
func TestDrawerPrepareLeavesErrors(t *testing.T) {
	tb := mustTable(t, mustPrivacy(t, 0.5, 1e-6), mustSampling(t, SchemePPSWOR, 2e-5, 1, nil), MethodDiscrete)
	tb.plan = makeRestartPlan(4096, 2, 512, tb.qConst) // junctions fail (TestRestartJunctionError)
	a := tb.plan.from + tb.plan.block
	dr := tb.NewDrawer(newRand(1))
	dr.Prepare([]int64{a + 3, a}, 2)
	if (!dr.prepared(a+3) || dr.prepared(a)) && !referenceOnly { // the reference Prepare prepares nothing
		t.Fatalf("prepared: row %d inside %v, junction row %d %v", a+3, dr.prepared(a+3), a, dr.prepared(a))
	}
	if _, err := dr.Draw(a + 3); err != nil {
		t.Fatalf("Draw(%d) inside the block: %v", a+3, err)
	}
	if _, err := dr.Draw(a); !errors.Is(err, ErrJunction) {
		t.Fatalf("Draw(%d): %v, want a junction error", a, err)
	}
}

// TestDrawAllPair: DrawAll and its plain reference drawAllRef, on fresh
// tables with restarts (keys from 1 to far past the first restart), give
// the same outcomes bit for bit from the same seed, and leave their
// generators in the same state.
func TestDrawAllPair(t *testing.T) {
	t.Parallel()
	p := mustPrivacy(t, 0.5, 1e-6)
	for _, m := range []Method{MethodDiscrete, MethodMaxSeparation} {
		t.Run(string(m), func(t *testing.T) {
			s := mustSampling(t, SchemePPSWOR, 1e-5, 1, nil)
			zr := newRand(21)
			freqs := make([]int64, 3000)
			for k := range freqs {
				freqs[k] = min(int64(math.Floor(math.Pow(1-zr.Float64(), -1.6))), 5_000_000)
			}
			fastRng, refRng := newRand(8), newRand(8)
			got, err := mustTable(t, p, s, m).DrawAll(freqs, fastRng, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := mustTable(t, p, s, m).drawAllRef(freqs, refRng, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k := range freqs {
				if got[k] != want[k] {
					t.Fatalf("key %d (frequency %d): DrawAll %+v, drawAllRef %+v", k, freqs[k], got[k], want[k])
				}
			}
			if fastRng.Uint64() != refRng.Uint64() {
				t.Fatal("the generators ended in different states")
			}
		})
	}
}

// TestSamplerOfMatchesPlain: samplerOf's cumulative masses (the
// compensated sum in registers, each prefix rounded as fl(s + c)) equal
// samplerOfPlain's (ddSum, dd().float()) bit for bit, on rows whose masses
// span 300 binades, on masses that cancel exactly in the compensation
// (1 and 2^-53 alternating, where the rounding of the prefix is a tie), and
// on the rows of a table.
func TestSamplerOfMatchesPlain(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	var rows [][]float64
	for n := range 300 {
		m := make([]float64, n)
		for k := range m {
			m[k] = rng.Float64() * math.Ldexp(1, -rng.IntN(300))
		}
		rows = append(rows, m)
	}
	ties := make([]float64, 64)
	for k := range ties {
		ties[k] = 1
		if k%2 == 1 {
			ties[k] = 0x1p-53
		}
	}
	rows = append(rows, ties)
	tb := mustTable(t, mustPrivacy(t, 0.1, 1e-6), mustSampling(t, SchemePPSWOR, 1e-4, 1, nil), MethodMaxSeparation)
	for _, f := range []int64{1, 2, 50, 500, 3000} {
		r, err := tb.Row(f)
		if err != nil {
			t.Fatal(err)
		}
		var m []float64
		for _, p := range r.Pieces {
			m = append(m, p.P)
		}
		rows = append(rows, m)
	}
	for n, m := range rows {
		x := make([]float64, len(m)+1)
		fast, plain := samplerOf(1, 1, x, m, make([]float64, len(m))), samplerOfPlain(1, 1, x, m)
		for k := range m {
			if math.Float64bits(fast.cum[k]) != math.Float64bits(plain.cum[k]) {
				t.Fatalf("row %d: cumulative mass %d is %v, the plain reference's %v", n, k, fast.cum[k], plain.cum[k])
			}
		}
	}
}
