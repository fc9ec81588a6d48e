package sanitize

import (
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
