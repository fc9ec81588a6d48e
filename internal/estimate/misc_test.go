package estimate

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// TestParseG: the query syntax round-trips through String, evaluates the
// documented functions, and rejects malformed or invalid parameters.
func TestParseG(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		w    float64
		want float64
	}{
		{"identity", 7, 7},
		{"count", 7, 1},
		{"count", 1, 1},
		{"power:2", 3, 9},
		{"power:0.5", 16, 4},
		{"power:0", 5, 1},
		{"cap:10", 7, 7},
		{"cap:10", 70, 10},
		{" Cap : 2.5 ", 70, 2.5},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			g, err := ParseG(c.in)
			if err != nil {
				t.Fatalf("ParseG(%q): %v", c.in, err)
			}
			if got := g.Eval(c.w); got != c.want {
				t.Errorf("%q(%g) = %g, want %g", c.in, c.w, got, c.want)
			}
			if back, err := ParseG(g.String()); err != nil || back != g {
				t.Errorf("%q: String %q does not round-trip (%v)", c.in, g.String(), err)
			}
		})
	}
	for _, bad := range []string{"", "square", "identity:2", "power", "power:x", "power:NaN", "power:Inf", "cap:0", "cap:-1", "cap:Inf"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			if _, err := ParseG(bad); err == nil {
				t.Errorf("ParseG(%q) accepted", bad)
			}
		})
	}
	for _, bad := range []string{"", "MLE-ish", "median"} {
		if _, err := ParseEstimator(bad); err == nil {
			t.Errorf("ParseEstimator(%q) accepted", bad)
		}
	}
	for _, good := range []string{"mle", "biased_down", "UNBIASED"} {
		t.Run(good, func(t *testing.T) {
			if _, err := ParseEstimator(good); err != nil {
				t.Errorf("ParseEstimator(%q): %v", good, err)
			}
		})
	}
}

// TestNonPrivateBaseline: eq. 8 — g(w)/q_w, variance g^2 (1-q)/q, zero bias, and the
// sum statistics add up.
func TestNonPrivateBaseline(t *testing.T) {
	t.Parallel()
	s := mustSampling(sanitize.SchemePPSWOR, 0.1, nil)
	r, err := NewNonPrivateBaseline(mustG("power:2"), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int64{1, 5, 30} {
		q := 1 - math.Exp(-0.1*float64(i))
		a, err := r.estimate(i)
		if err != nil || !relClose(a, float64(i*i)/q, 1e-12) {
			t.Errorf("Estimate(%d) = %g, %v", i, a, err)
		}
		want := float64(i*i*i*i) * (1 - q) / q
		if v := r.Variance(i); !relClose(v, want, 1e-12) {
			t.Errorf("Variance(%d) = %g, want %g", i, v, want)
		}
	}
	st, err := r.SumStats([]FrequencyCount{{1, 10}, {5, 2}})
	if err != nil || st.Bias != 0 || !relClose(st.Variance, 10*r.Variance(1)+2*r.Variance(5), 1e-12) || st.Statistic != 60 {
		t.Errorf("SumStats = %+v, %v", st, err)
	}
	if _, err := r.estimate(0); err == nil {
		t.Error("Estimate(0) accepted")
	}
	if _, err := NewNonPrivateBaseline(G{}, s); err == nil {
		t.Error("invalid g accepted")
	}
}

// TestTableSerialises: JSON and MarshalBinary round-trip a table with a
// tail exactly (same fields, same estimates), and corrupted tables are
// never stored and read back: MarshalBinary refuses them or decoding
// rejects them.
func TestTableSerialises(t *testing.T) {
	t.Parallel()
	tab, err := Build(newLemma52(0.7, 3), Spec{MaxFrequency: 120, G: mustG("cap:9"), Estimator: BiasedDown})
	if err != nil || tab.Tail == nil {
		t.Fatalf("build: %v, tail %v", err, tab.Tail)
	}
	js, err := json.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON Table
	if err := json.Unmarshal(js, &fromJSON); err != nil || fromJSON.Validate() != nil {
		t.Fatalf("json: %v / %v", err, fromJSON.Validate())
	}
	bin, err := tab.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var fromBin Table
	if err := fromBin.UnmarshalBinary(bin); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*Table{"json": &fromJSON, "binary": &fromBin} {
		t.Run(name, func(t *testing.T) {
			if !reflect.DeepEqual(got, tab) {
				t.Errorf("%s round trip changed the table", name)
			}
			for _, v := range []float64{3.5, 120, 500.25} {
				a, err1 := got.Estimate(v)
				b, err2 := tab.Estimate(v)
				if a != b || err1 != nil || err2 != nil {
					t.Errorf("%s: Estimate(%g) = %g (%v), original %g (%v)", name, v, a, err1, b, err2)
				}
			}
		})
	}
	corrupt := []func(*Table){
		func(c *Table) { c.A = c.A[:len(c.A)-1] },
		func(c *Table) { c.Bounds[3], c.Bounds[4] = c.Bounds[4], c.Bounds[3] },
		func(c *Table) { c.A[5] = math.Inf(1) },
		func(c *Table) { c.Frequencies = c.Frequencies[1:] },
		func(c *Table) { c.Tail.UnitToken++ },
		func(c *Table) { c.G = G{Kind: "cube"} },
	}
	for k, mut := range corrupt {
		var c Table
		if err := c.UnmarshalBinary(bin); err != nil {
			t.Fatal(err)
		}
		mut(&c)
		// The encoding cannot express some corruptions (lengths are
		// implicit, codes are a closed list): then MarshalBinary refuses.
		enc, err := c.MarshalBinary()
		if err != nil {
			continue
		}
		var d Table
		if err := d.UnmarshalBinary(enc); err == nil {
			t.Errorf("corruption %d accepted", k)
		}
	}
}

// TestOrdinal: Order sorts by decreasing value and breaks ties uniformly at
// random (each of 4 tied keys comes first about 1/4 of the time over 4000
// seeded draws, within 6 standard errors); topK and rank agree with Order;
// Quantiles follow the documented inverse-CDF definition.
func TestOrdinal(t *testing.T) {
	t.Parallel()
	pairs := []Pair{{"a", 5}, {"b", 9}, {"c", 5}, {"d", 1}, {"e", 5}, {"f", 5}, {"g", 7}}
	rng := dprand.Seeded(1)
	o := Order(pairs, rng)
	for k := 1; k < len(o); k++ {
		if o[k].Value > o[k-1].Value {
			t.Fatalf("Order not descending: %v", o)
		}
	}
	if o[0].Key != "b" || o[1].Key != "g" || o[6].Key != "d" {
		t.Fatalf("Order = %v", o)
	}
	const trials = 4000
	first := map[string]int{}
	rankC := map[int]int{}
	for n := 0; n < trials; n++ {
		first[Order(pairs, rng)[2].Key]++
		r, err := rank(pairs, "c", rng)
		if err != nil {
			t.Fatal(err)
		}
		rankC[r]++
	}
	se := math.Sqrt(trials * 0.25 * 0.75)
	for _, k := range []string{"a", "c", "e", "f"} {
		if math.Abs(float64(first[k])-trials/4) > 6*se {
			t.Errorf("tie order not uniform: %s first %d of %d", k, first[k], trials)
		}
	}
	for r := 3; r <= 6; r++ {
		if math.Abs(float64(rankC[r])-trials/4) > 6*se {
			t.Errorf("rank of a tied key not uniform over 3..6: %v", rankC)
		}
	}
	if len(rankC) != 4 {
		t.Errorf("rank of c took values %v, want 3..6", rankC)
	}
	if r, _ := rank(pairs, "b", rng); r != 1 {
		t.Errorf("Rank(b) = %d, want 1", r)
	}
	if _, err := rank(pairs, "zz", rng); err == nil {
		t.Error("Rank of a missing key succeeded")
	}
	top, err := topK(pairs, 3, rng)
	if err != nil || len(top) != 3 || top[0].Key != "b" || top[1].Key != "g" || top[2].Value != 5 {
		t.Errorf("TopK(3) = %v, %v", top, err)
	}
	// The heap path (4k < n): the second of the top 2 is uniform over the
	// four keys tied at 5.
	many := []Pair{{"w", 5}, {"top", 9}, {"x", 5}, {"y", 5}, {"z", 5}}
	for k := 0; k < 8; k++ {
		many = append(many, Pair{fmt.Sprint("low", k), 1})
	}
	second := map[string]int{}
	for n := 0; n < trials; n++ {
		top, err := topK(many, 2, rng)
		if err != nil || top[0].Key != "top" || top[1].Value != 5 {
			t.Fatalf("TopK(many, 2) = %v, %v", top, err)
		}
		second[top[1].Key]++
	}
	for _, k := range []string{"w", "x", "y", "z"} {
		if math.Abs(float64(second[k])-trials/4) > 6*se {
			t.Errorf("TopK tie at the boundary not uniform: %v", second)
		}
	}
	if all, _ := topK(pairs, 100, rng); len(all) != len(pairs) {
		t.Errorf("TopK(100) returned %d pairs", len(all))
	}
	if _, err := topK(pairs, -1, rng); err == nil {
		t.Error("TopK(-1) accepted")
	}

	// Values 1..10 with weights 1..10 (total 55): the 0.5 quantile is the
	// first value whose cumulative weight reaches 27.5: 1+...+7 = 28 -> 7.
	var items []WeightedPair
	for v := 1; v <= 10; v++ {
		items = append(items, WeightedPair{Pair{string(rune('a' + v)), float64(v)}, float64(v)})
	}
	qs, err := Quantiles(items, []float64{0, 0.5, 1, 0.01, 28.0 / 55}, rng)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{1, 7, 10, 1, 7} {
		if qs[k].Value != want {
			t.Errorf("quantile %d = %v, want value %g", k, qs[k], want)
		}
	}
	items[0].Weight = 0 // a zero-weight first pair is never the 0-quantile
	if qs, _ := Quantiles(items, []float64{0}, rng); qs[0].Value != 2 {
		t.Errorf("0-quantile with zero first weight = %v", qs[0])
	}
	for _, bad := range [][]float64{{-0.1}, {1.1}, {math.NaN()}} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			if _, err := Quantiles(items, bad, rng); err == nil {
				t.Errorf("Quantiles(%v) accepted", bad)
			}
		})
	}
	if _, err := Quantiles(nil, []float64{0.5}, rng); err == nil {
		t.Error("Quantiles of nothing accepted")
	}
}
