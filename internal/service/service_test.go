package service

import (
	"slices"
	"strconv"
	"testing"

	"github.com/pwsd/pwsd/internal/store"

	"github.com/pwsd/pwsd/internal/sanitize"
)

func mustTable(t *testing.T, eps, delta float64, scheme sanitize.Scheme, tau float64) *sanitize.Table {
	t.Helper()
	p, err := sanitize.NewPrivacy(eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sanitize.NewSampling(scheme, tau, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := sanitize.NewTable(p, s, sanitize.MethodDiscrete)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestFirstQOne: the binary search finds the first frequency with q_i = 1.
func TestFirstQOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme sanitize.Scheme
		tau    float64
		want   int64
	}{
		{sanitize.SchemeNone, 0, 1},
		{sanitize.SchemePriority, 0.01, 100},
		{sanitize.SchemePriority, 0.3, 4},
		{sanitize.SchemePriority, 1e-30, 0}, // q reaches 1 only at 1e30 > 2^62
	} {
		s, err := sanitize.NewSampling(tc.scheme, tc.tau, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := firstQOne(s); got != tc.want {
			t.Errorf("%s tau=%g: firstQOne = %d, want %d", tc.scheme, tc.tau, got, tc.want)
		}
	}
	// ppswor: q rounds to 1 in float64 once tau*i exceeds about 37.
	s, _ := sanitize.NewSampling(sanitize.SchemePPSWOR, 0.5, 1, nil)
	i := firstQOne(s)
	if s.Q(i) != 1 || s.Q(i-1) == 1 {
		t.Fatalf("ppswor: firstQOne = %d with q = %v, previous %v", i, s.Q(i), s.Q(i-1))
	}
}

// TestFrequencyLimit: unlimited (up to the sanitizer's range) wherever q
// settles: rows by restart serve every frequency.
func TestFrequencyLimit(t *testing.T) {
	t.Parallel()
	if got := frequencyLimit(mustTable(t, 0.5, 1e-6, sanitize.SchemeNone, 0)); got != sanitize.MaxFrequency {
		t.Errorf("none: %d", got)
	}
	if got := frequencyLimit(mustTable(t, 0.5, 1e-6, sanitize.SchemePriority, 1e-12)); got != sanitize.MaxFrequency {
		t.Errorf("priority with tiny tau: %d, want %d", got, sanitize.MaxFrequency)
	}
}

// TestKeySetFindsFirstRepeat: the smallest index whose key repeats an
// earlier key (oracle: a map of the keys seen), and nothing for distinct
// keys, including with 40 index bits, where only 24 bits of the first hash
// are compared and about 300 first-hash matches among 10^5 distinct keys
// must be told apart by the second hash.
func TestKeySetFindsFirstRepeat(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	oracle := func(keys []string) (int, bool) {
		seen := map[string]bool{}
		for i, k := range keys {
			if seen[k] {
				return i, true
			}
			seen[k] = true
		}
		return 0, false
	}
	distinct := make([]string, 100_000)
	for i := range distinct {
		distinct[i] = "key-" + strconv.Itoa(i)
	}
	withRepeat := func(at, of int) []string {
		k := slices.Clone(distinct)
		k[at] = k[of]
		return k
	}
	for _, tc := range []struct {
		name        string
		keys        []string
		maxElements int
	}{
		{"small", []string{"a", "b", "c", "b", "d", "a", "c"}, 2_000_000},
		{"distinct", distinct, 2_000_000},
		{"distinct, 40 index bits", distinct, 1 << 40},
		{"late repeat", withRepeat(99_999, 3), 2_000_000},
		{"two repeats, 40 index bits", func() []string { k := withRepeat(70_000, 5); k[80_000] = k[60_000]; return k }(), 1 << 40},
		{"repeat far apart", withRepeat(1<<16+17, 2), 2_000_000},
		{"key three times", func() []string { k := withRepeat(90_000, 7); k[50_000] = k[7]; return k }(), 2_000_000},
		{"many repeats, 40 index bits", func() []string {
			k := slices.Clone(distinct)
			for i := 1000; i < len(k); i += 997 {
				k[i] = k[(i*7919)%i]
			}
			return k
		}(), 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 2 { // the second round reuses pooled buffers
				k := s.Samples.newKeySet(tc.maxElements)
				for _, key := range tc.keys {
					k.add([]byte(key))
				}
				gi, gok := k.firstRepeat()
				wi, wok := oracle(tc.keys)
				s.Samples.releaseKeySet(k)
				if gi != wi || gok != wok {
					t.Fatalf("round %d: firstRepeat = %d, %v; want %d, %v", round, gi, gok, wi, wok)
				}
			}
		})
	}
}

// TestEstimatorSize: powers of two covering the values, capped near the
// stationary point when rows are stationary.
func TestEstimatorSize(t *testing.T) {
	t.Parallel()
	tb := mustTable(t, 0.5, 1e-3, sanitize.SchemePriority, 1e-9)
	if got := estimatorSize(tb, 1000.5); got != 1024 {
		t.Errorf("estimatorSize(1000.5) = %d, want 1024", got)
	}
	if got := estimatorSize(tb, 3); got != 64 {
		t.Errorf("estimatorSize(3) = %d, want 64", got)
	}
	st := mustTable(t, 0.5, 1e-3, sanitize.SchemeNone, 0)
	if _, err := st.Row(1e6); err != nil {
		t.Fatal(err)
	}
	from, ok := st.StationaryFrom()
	if !ok {
		t.Fatal("q = 1 rows must become stationary")
	}
	if got := estimatorSize(st, 1e9); got > 8*from+128 {
		t.Errorf("estimatorSize(1e9) = %d with rows stationary from %d", got, from)
	}
}
