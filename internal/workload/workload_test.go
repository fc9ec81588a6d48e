package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestZipfFrequency(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		z    Zipf
		rank int
		want int64
	}{
		{DefaultZipf(), 1, 10_000_000},
		{DefaultZipf(), 2, 5_000_000},
		{DefaultZipf(), 3, 3_333_333},
		{DefaultZipf(), 7, 1_428_571},
		{DefaultZipf(), 300_000, 33},
		{Zipf{Keys: 10, Top: 100, Exponent: 2}, 3, 11},
		{Zipf{Keys: 10, Top: 100, Exponent: 2}, 10, 1},
		{Zipf{Keys: 10, Top: 100, Exponent: 0}, 9, 100},
		{Zipf{Keys: 10, Top: 1000, Exponent: 0.5}, 4, 500},
	} {
		if got := c.z.Frequency(c.rank); got != c.want {
			t.Errorf("%+v rank %d: frequency %d, want %d", c.z, c.rank, got, c.want)
		}
	}
}

func TestZipfValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		z       Zipf
		wantErr string
	}{
		{DefaultZipf(), ""},
		{Zipf{Keys: 0, Top: 10, Exponent: 1}, "keys 0"},
		{Zipf{Keys: 5, Top: 0, Exponent: 1}, "top frequency 0"},
		{Zipf{Keys: 5, Top: 10, Exponent: -1}, "exponent -1"},
		{Zipf{Keys: 5, Top: 10, Exponent: math.NaN()}, "exponent NaN"},
		{Zipf{Keys: 11, Top: 10, Exponent: 1}, "rank 11 would have frequency 0"},
		{Zipf{Keys: 10, Top: 10, Exponent: 1}, ""},
	} {
		err := c.z.Validate()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%+v: error %v, want %q", c.z, err, c.wantErr)
		}
	}
}

func TestKeysUniqueAndShaped(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^q-([0-9]+)-[0-9a-f]{8}$`)
	seen := make(map[string]bool, DefaultKeys)
	for r := 1; r <= DefaultKeys; r++ {
		k := Key(r)
		m := shape.FindStringSubmatch(k)
		if m == nil || m[1] != strconv.Itoa(r) {
			t.Fatalf("rank %d: key %q is not q-<rank>-<hash>", r, k)
		}
		if seen[k] {
			t.Fatalf("rank %d: key %q repeated", r, k)
		}
		seen[k] = true
	}
	if Key(42) != Key(42) {
		t.Fatal("Key is not deterministic")
	}
}

func TestExpectedSampleSizeClosedForm(t *testing.T) {
	t.Parallel()
	// f = 2, 1 at tau ln 2: p = 3/4, 1/2.
	mean, variance := Zipf{Keys: 2, Top: 2, Exponent: 1}.ExpectedSampleSize(math.Ln2)
	if math.Abs(mean-1.25) > 1e-12 || math.Abs(variance-7.0/16) > 1e-12 {
		t.Fatalf("mean %v variance %v, want 1.25 and 7/16", mean, variance)
	}
}

// rankOf parses the rank back out of a key.
func rankOf(t *testing.T, key string) int {
	t.Helper()
	r, err := strconv.Atoi(strings.Split(key, "-")[1])
	if err != nil {
		t.Fatalf("key %q: %v", key, err)
	}
	return r
}

// TestSamplePPSWOR checks the client's sample against closed forms: its
// size is within 5 standard errors of sum_r (1 - exp(-tau f_r)), and the
// Horvitz-Thompson count sum over kept keys of 1/p_r is within 5 standard
// errors (sqrt(sum_r (1-p_r)/p_r)) of the number of keys, which checks the
// inclusion probability key by key, not only on average. Keys are unique,
// carry their rank's frequency, and the sample is a function of the seed.
func TestSamplePPSWOR(t *testing.T) {
	t.Parallel()
	z := DefaultZipf()
	for _, tau := range []float64{1e-4, 1e-5, 1e-6} {
		mean, variance := z.ExpectedSampleSize(tau)
		var htVar float64
		for r := 1; r <= z.Keys; r++ {
			p := InclusionProbability(tau, z.Frequency(r))
			htVar += (1 - p) / p
		}
		for seed := uint64(1); seed <= 3; seed++ {
			s, err := z.SamplePPSWOR(tau, seed)
			if err != nil {
				t.Fatal(err)
			}
			if d := math.Abs(float64(len(s)) - mean); d > 5*math.Sqrt(variance) {
				t.Errorf("tau %g seed %d: %d keys, expected %.1f ± %.1f", tau, seed, len(s), mean, math.Sqrt(variance))
			}
			seen := make(map[string]bool, len(s))
			var ht float64
			for _, e := range s {
				if seen[e.Key] {
					t.Fatalf("tau %g seed %d: key %q twice", tau, seed, e.Key)
				}
				seen[e.Key] = true
				r := rankOf(t, e.Key)
				if e.Frequency != z.Frequency(r) || e.Key != Key(r) {
					t.Fatalf("tau %g: element %+v, want rank %d's key and frequency %d", tau, e, r, z.Frequency(r))
				}
				ht += 1 / InclusionProbability(tau, e.Frequency)
			}
			if d := math.Abs(ht - float64(z.Keys)); d > 5*math.Sqrt(htVar) {
				t.Errorf("tau %g seed %d: Horvitz-Thompson count %.0f, want %d ± %.0f", tau, seed, ht, z.Keys, math.Sqrt(htVar))
			}
		}
		a, _ := z.SamplePPSWOR(tau, 7)
		b, _ := z.SamplePPSWOR(tau, 7)
		c, _ := z.SamplePPSWOR(tau, 8)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("tau %g: the same seed gave two samples", tau)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("tau %g: seeds 7 and 8 gave the same sample", tau)
		}
	}
}

func TestSamplePPSWORRejects(t *testing.T) {
	t.Parallel()
	for _, tau := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := DefaultZipf().SamplePPSWOR(tau, 1); err == nil {
			t.Errorf("tau %v: no error", tau)
		}
	}
	if _, err := (Zipf{Keys: 20, Top: 10, Exponent: 1}).SamplePPSWOR(0.1, 1); err == nil {
		t.Error("an invalid log gave no error")
	}
}

// wireElement and wireRequest decode a body the way a client reads it.
type wireElement struct {
	Key       string `json:"key"`
	Frequency int64  `json:"frequency"`
}

type wireRequest struct {
	Privacy  map[string]float64 `json:"privacy"`
	Sampling map[string]any     `json:"sampling"`
	Release  string             `json:"release"`
	Method   string             `json:"method"`
	Elements []wireElement      `json:"elements"`
}

func TestBodies(t *testing.T) {
	t.Parallel()
	elems := []Element{{Key: Key(1), Frequency: 10}, {Key: `a "quoted" key`, Frequency: 3}}
	h := Header{Epsilon: 0.5, Delta: 1e-6, Threshold: 1e-5, Method: "discrete"}
	wantHeader := wireRequest{
		Privacy:  map[string]float64{"epsilon": 0.5, "delta": 1e-6},
		Sampling: map[string]any{"scheme": "ppswor", "threshold": 1e-5},
		Release:  "frequencies", Method: "discrete",
	}
	want := wantHeader
	want.Elements = []wireElement{{Key(1), 10}, {`a "quoted" key`, 3}}

	var js bytes.Buffer
	if err := h.WriteJSON(&js, elems); err != nil {
		t.Fatal(err)
	}
	var got wireRequest
	dec := json.NewDecoder(&js)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("JSON body %s: %v", js.String(), err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON body decodes to %+v, want %+v", got, want)
	}

	for _, n := range []int{0, 2} {
		var nd bytes.Buffer
		if err := h.WriteNDJSON(&nd, elems[:n]); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&nd)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) != n+1 {
			t.Fatalf("%d elements: %d NDJSON lines, want %d", n, len(lines), n+1)
		}
		var head wireRequest
		if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || !reflect.DeepEqual(head, wantHeader) {
			t.Errorf("NDJSON header %s decodes to %+v (%v), want %+v", lines[0], head, err, wantHeader)
		}
		for i, l := range lines[1:] {
			var e wireElement
			if err := json.Unmarshal([]byte(l), &e); err != nil || e != want.Elements[i] {
				t.Errorf("NDJSON line %d: %s decodes to %+v (%v), want %+v", i+2, l, e, err, want.Elements[i])
			}
		}
	}
}
