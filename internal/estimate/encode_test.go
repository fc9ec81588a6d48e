package estimate

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/pwsd/pwsd/internal/sanitize"
)

// codecTables builds estimator tables over real sanitizer tables of both
// methods, with a stationary tail (no sampling: q_i = 1, rows shifted
// copies beyond the stationary point) and without (ppswor, q_i < 1 up to
// n), for the MLE (which stores per-sub-token shifts) and biased-down.
func codecTables(t testing.TB) map[string]*Table {
	t.Helper()
	out := map[string]*Table{}
	for _, m := range []sanitize.Method{sanitize.MethodDiscrete, sanitize.MethodMaxSeparation} {
		for _, c := range []struct {
			name string
			smp  sanitize.Sampling
			n    int64
			tail bool
		}{
			{"tail", mustSampling(sanitize.SchemeNone, 0, nil), 200, true},
			{"no tail", mustSampling(sanitize.SchemePPSWOR, 0.01, nil), 60, false},
		} {
			st, err := sanitize.NewTable(mustPrivacy(1, 1e-3), c.smp, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, est := range []Estimator{MLE, BiasedDown} {
				tab, err := Build(st, Spec{MaxFrequency: c.n, G: mustG("cap:20"), Estimator: est})
				if err != nil {
					t.Fatal(err)
				}
				if (tab.Tail != nil) != c.tail {
					t.Fatalf("%s %s %s: tail %v, want present=%v", m, c.name, est, tab.Tail, c.tail)
				}
				out[fmt.Sprintf("%s/%s/%s", m, c.name, est)] = tab
			}
		}
	}
	return out
}

// TestTableCodecRoundTrip: every table decodes to an identical table
// (every field, bit for bit) whose re-encoding is the same bytes, and
// starts with the magic and TableFormat.
func TestTableCodecRoundTrip(t *testing.T) {
	t.Parallel()
	for name, tab := range codecTables(t) {
		t.Run(name, func(t *testing.T) {
			data, err := tab.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte{'P', 'E', 'T', TableFormat}) {
				t.Fatalf("encoding starts with %q", data[:min(len(data), 4)])
			}
			var got Table
			if err := got.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&got, tab) {
				t.Fatal("round trip changed the table")
			}
			again, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs (%v)", err)
			}
			for _, v := range []float64{0.5, 17.25, float64(tab.MaxFrequency), 3 * float64(tab.MaxFrequency)} {
				a, err1 := got.Estimate(v)
				b, err2 := tab.Estimate(v)
				if a != b || (err1 == nil) != (err2 == nil) {
					t.Errorf("Estimate(%g) = %g (%v), original %g (%v)", v, a, err1, b, err2)
				}
			}
		})
	}
}

// TestTableCodecStrict: truncations, trailing bytes, another magic or
// version, non-minimal integers, a bad flag or code and corrupted values
// are refused, and the refused decode leaves the table untouched.
func TestTableCodecStrict(t *testing.T) {
	t.Parallel()
	tabs := codecTables(t)
	tab := tabs["max_separation/tail/mle"]
	data, err := tab.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(data)) }
	// Offsets of the fixed header: magic (3), version, g code, g parameter
	// (8), estimator code, then MaxFrequency (a uvarint: 200 takes 2 bytes).
	const gCode, estCode, maxFreq = 4, 13, 14
	tokens := maxFreq + 2
	nTok, w := binary.Uvarint(data[tokens:])
	firstA := tokens + w + 8*(int(nTok)+1)
	cases := map[string][]byte{
		"empty":         nil,
		"trailing byte": append(bytes.Clone(data), 0),
		"bad magic":     edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"old version":   edit(func(b []byte) []byte { b[3] = 0; return b }),
		"next version":  edit(func(b []byte) []byte { b[3] = TableFormat + 1; return b }),
		"unknown g":     edit(func(b []byte) []byte { b[gCode] = byte(len(gKindCodes)); return b }),
		"unknown est":   edit(func(b []byte) []byte { b[estCode] = byte(len(estimatorCodes)); return b }),
		"non-minimal": edit(func(b []byte) []byte {
			// MaxFrequency re-encoded with a redundant continuation byte.
			mf := binary.AppendUvarint(nil, uint64(tab.MaxFrequency))
			mf[len(mf)-1] |= 0x80
			mf = append(mf, 0)
			return append(append(b[:maxFreq:maxFreq], mf...), b[maxFreq+2:]...)
		}),
		"bad tail flag": edit(func(b []byte) []byte {
			// The flag follows the statistics.
			flag := firstA + 8*int(nTok) + 8*statFloats*int(tab.MaxFrequency)
			if b[flag] != 1 {
				t.Fatalf("byte %d is %d, not the tail flag", flag, b[flag])
			}
			b[flag] = 2
			return b
		}),
		"estimate NaN": edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[firstA:], math.Float64bits(math.NaN()))
			return b
		}),
		"bounds out of order": edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[tokens+w+8:], math.Float64bits(1e9))
			return b
		}),
		"max frequency beyond the statistics": edit(func(b []byte) []byte {
			b[maxFreq] = 0xC9 // 201
			return b
		}),
	}
	var gobBuf bytes.Buffer
	type wire Table
	if err := gob.NewEncoder(&gobBuf).Encode((*wire)(tab)); err != nil {
		t.Fatal(err)
	}
	cases["previous gob encoding"] = gobBuf.Bytes()
	for _, n := range []int{1, 3, 4, 5, 15, tokens + 1, firstA + 3, len(data) / 2, len(data) - 9, len(data) - 1} {
		cases[fmt.Sprintf("truncated to %d of %d bytes", n, len(data))] = data[:n]
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			got := Table{MaxFrequency: -7}
			err := got.UnmarshalBinary(b)
			if err == nil {
				t.Fatal("accepted")
			}
			if got.MaxFrequency != -7 {
				t.Fatal("a refused decode changed the table")
			}
		})
	}
	// Encoding errors wrap ErrCorruptTable; inconsistent tables name the
	// broken invariant.
	var got Table
	if err := got.UnmarshalBinary(cases["trailing byte"]); !errors.Is(err, ErrCorruptTable) {
		t.Fatalf("trailing byte: %v does not wrap ErrCorruptTable", err)
	}
}

// FuzzUnmarshalTable checks that arbitrary bytes never panic the table
// decoder and that whatever it accepts is a canonical encoding: it
// re-encodes to exactly its own bytes (integers minimal, lengths implicit
// or exact, floats kept bit for bit), so decode-encode is the identity on
// accepted input.
func FuzzUnmarshalTable(f *testing.F) {
	for _, tab := range codecTables(f) {
		if tab.MaxFrequency > 60 {
			continue // keep the seeds small
		}
		data, err := tab.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	small, err := Build(newLemma52(0.7, 3), Spec{MaxFrequency: 20, G: mustG("identity"), Estimator: MLE})
	if err != nil || small.Tail == nil {
		f.Fatalf("small table: %v, tail %v", err, small.Tail)
	}
	data, err := small.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tab Table
		if err := tab.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := tab.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted table encoding re-encodes differently (%v)", err)
		}
	})
}
