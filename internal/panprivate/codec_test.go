package panprivate

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
)

// LegacyStateEncoding returns data (a current-format estimator state) in the
// previous release's layout: format version 1 with the event-count slot
// after the key holding events. It is the frozen previous encoder, shared by
// the tests that prove old rows still load and are rewritten.
func legacyStateEncoding(t testing.TB, data []byte, events uint64) []byte {
	t.Helper()
	r := binenc.NewReader(data, ErrCorruptState)
	if v := r.Header(stateMagic); v != StateFormat {
		t.Fatalf("not a current state encoding (version %d)", v)
	}
	b, err := decodeBase(r, StateFormat, dprand.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, b.key[:])
	if i < 0 {
		t.Fatal("key not found in the encoding")
	}
	i += KeySize
	old := append([]byte(nil), data[:i]...)
	old[len(stateMagic)] = legacyStateFormat
	old = binary.AppendUvarint(old, events)
	return append(old, data[i:]...)
}

// TestLegacyStateLoads checks that a state in the previous release's layout
// (version 1, event-count slot) loads with the same meaning and re-encodes
// to the current version without the slot: byte-identical to the state the
// current encoder writes for the same estimator.
func TestLegacyStateLoads(t *testing.T) {
	t.Parallel()
	for _, cfg := range allKindsConfigs() {
		t.Run(string(cfg.Estimator)+"/"+string(cfg.Algorithm), func(t *testing.T) {
			cfg.UniverseSize, cfg.SampleSize = 300, 40
			e := mustNew(t, cfg, dprand.Seeded(1))
			if err := e.Apply(insertRange(0, 30, false)); err != nil {
				t.Fatal(err)
			}
			cur, _ := e.MarshalBinary()
			if cur[len(stateMagic)] != StateFormat {
				t.Fatalf("MarshalBinary writes version %d, want %d", cur[len(stateMagic)], StateFormat)
			}
			old := legacyStateEncoding(t, cur, 30)
			got, err := Unmarshal(old, dprand.Seeded(2))
			if err != nil {
				t.Fatalf("legacy state refused: %v", err)
			}
			again, _ := got.MarshalBinary()
			if !bytes.Equal(again, cur) {
				t.Error("legacy state re-encodes differently from the current encoder's output")
			}
			if got.Stats() != e.Stats() || got.Config() != e.Config() {
				t.Errorf("legacy state decodes to %+v %+v, want %+v %+v", got.Stats(), got.Config(), e.Stats(), e.Config())
			}
		})
	}
}

// FuzzUnmarshalCounter checks that arbitrary bytes never panic the counter
// and continual-density decoders, and that whatever they accept is a
// canonical encoding: it re-encodes to exactly its own bytes (integers are
// minimally encoded, lengths exact, floats kept bit for bit), so
// decode-encode is the identity on accepted input.
func FuzzUnmarshalCounter(f *testing.F) {
	for _, cfg := range []CounterConfig{
		{Algorithm: CounterSimple, Epsilon: 0.5, Horizon: 16},
		{Algorithm: CounterRandomizedResponse, Epsilon: 0.5, Horizon: 16},
		{Algorithm: CounterTree, Epsilon: 0.5, Horizon: 16},
		{Algorithm: CounterCascading, Epsilon: 2, Horizon: 16, D: 2, L: 4, Kappa: 0.3},
	} {
		c := mustCounter(f, cfg, seededNoise(1), dprand.Seeded(2))
		if _, err := CounterSteps(c, []int{1, 0, 1}); err != nil {
			f.Fatal(err)
		}
		data, _ := c.MarshalBinary()
		f.Add(data)
	}
	cd, err := NewContinualDensity(ContinualDensityConfig{Epsilon: 0.3, UniverseSize: 50, SampleSize: 11, Horizon: 16}, seededNoise(3), dprand.Seeded(4))
	if err != nil {
		f.Fatal(err)
	}
	data, _ := cd.MarshalBinary()
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := UnmarshalCounter(data, seededNoise(1), dprand.Seeded(1)); err == nil {
			if again, err := c.MarshalBinary(); err != nil || !bytes.Equal(again, data) {
				t.Fatalf("accepted counter encoding re-encodes differently (%v)", err)
			}
		}
		if cd, err := UnmarshalContinualDensity(data, seededNoise(1), dprand.Seeded(1)); err == nil {
			if again, err := cd.MarshalBinary(); err != nil || !bytes.Equal(again, data) {
				t.Fatalf("accepted continual encoding re-encodes differently (%v)", err)
			}
		}
	})
}
