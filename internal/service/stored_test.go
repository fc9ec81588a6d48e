package service

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"github.com/pwsd/pwsd/internal/hugepages"
	"math"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/pwsd/pwsd/internal/binenc"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/dprand/dprandtest"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/store/pgtest"
	"github.com/pwsd/pwsd/internal/store/storetest"
	"github.com/pwsd/pwsd/internal/storedformat"
)

// TestMain advises the heap for huge pages as cmd/pwsd does when it starts
// (PWSD_HUGEPAGE_HEAP_BYTES' default), so that the in-process benchmarks
// (BenchmarkReleaseAfterRestart and the others) measure the process pwsd
// runs; then it runs the tests over pgtest's PostgreSQL.
func TestMain(m *testing.M) {
	hugepages.AdviseHeap(hugepages.DefaultHeapBytes)
	os.Exit(pgtest.Main(m))
}

// The previous release's writers, frozen here (commit 231c23a): they are
// what filled the databases the rewrite must upgrade.

// oldSampleHeader is the previous release's stored sample header: sanitize's
// structs without JSON tags, so Go field names.
type oldSampleHeader struct {
	Dataset  string            `json:"dataset,omitempty"`
	Privacy  sanitize.Privacy  `json:"privacy"`
	Sampling sanitize.Sampling `json:"sampling"`
	Release  Release           `json:"release"`
	Method   sanitize.Method   `json:"method"`
}

// oldEncodeElements is the previous release's chunk encoder: no version byte.
func oldEncodeElements(es []store.Element) []byte {
	var dst []byte
	for _, e := range es {
		dst = binary.AppendUvarint(dst, uint64(len(e.Key)))
		dst = append(dst, e.Key...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Value))
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Estimate))
	}
	return dst
}

// oldStreamConfig is the previous release's stored stream configuration:
// panprivate's API structs, no format member.
type oldStreamConfig struct {
	Dataset   string                             `json:"dataset,omitempty"`
	Continual bool                               `json:"continual"`
	Estimator *panprivate.Config                 `json:"estimator,omitempty"`
	Density   *panprivate.ContinualDensityConfig `json:"continual_density,omitempty"`
}

// oldCounterRecord is the previous release's counter config: the public
// view at creation plus the post-processing.
type oldCounterRecord struct {
	panprivate.CounterState
	Postprocess panprivate.CounterPostprocess `json:"postprocess,omitempty"`
	Monotone    float64                       `json:"monotone,omitempty"`
}

// oldEstimatorState writes an estimator's state as the previous release did:
// format version 1 with the event-count slot after the key (holding events,
// as releases before the count was dropped wrote it). It re-lays the current
// encoding, whose fields before the slot are unchanged.
func oldEstimatorState(t *testing.T, cur []byte, events uint64) []byte {
	t.Helper()
	r := binenc.NewReader(cur, nil)
	if v := r.Header("PPS"); v != panprivate.StateFormat {
		t.Fatalf("current state has version %d", v)
	}
	r.Byte()
	r.Byte()
	r.Float()
	r.Uvarint()
	r.Uvarint()
	if r.Bool() {
		r.Float()
		r.Float()
	}
	r.Uvarint()
	r.Uvarint()
	r.Uvarint()
	r.Float()
	r.Uvarint()
	r.Uvarint()
	r.Byte()
	r.Take(panprivate.KeySize)
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	i := len(cur) - r.Len()
	old := append([]byte(nil), cur[:i]...)
	old[3] = 1
	old = binary.AppendUvarint(old, events)
	return append(old, cur[i:]...)
}

// TestRewriteStoredFormats fills a database at the previous release's schema
// (migration 4) with rows written by the previous release's encoders — a
// sample with a Go-field-name header and unversioned chunks, an estimator
// stream whose state holds the event-count slot and whose record holds an
// event count, a continual stream, a counter with the old config — then
// opens it as pwsd does (migrations to the head, RewriteStoredFormats). It
// checks that every row is now in the new shape, decodes strictly, and
// means exactly what it meant: the same release description and elements,
// byte-identical states to what the current encoders write for the same
// estimators and counter, and that a second rewrite finds nothing to do.
func TestRewriteStoredFormats(t *testing.T) {
	t.Parallel()
	url, conn := storetest.DatabaseAt(t, 4)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	exec(`INSERT INTO datasets (name, epsilon_budget, delta_budget, created_at) VALUES ('d', 10, 0.1, $1)`, now)

	// A sample.
	spec := SampleSpec{Dataset: "d", Privacy: sanitize.Privacy{Epsilon: 0.5, Delta: 1e-3},
		Sampling: sanitize.Sampling{Scheme: sanitize.SchemePPSWOR, Threshold: 0.25, Power: 1}, Release: ReleaseFrequencies, Method: sanitize.MethodDiscrete}
	header, _ := json.Marshal(oldSampleHeader{Dataset: spec.Dataset, Privacy: spec.Privacy, Sampling: spec.Sampling, Release: spec.Release, Method: spec.Method})
	if !bytes.Contains(header, []byte(`"Epsilon":0.5`)) {
		t.Fatalf("the frozen writer does not write the old shape: %s", header)
	}
	elements := []store.Element{{Key: "a", Value: 3, Estimate: 2.5}, {Key: "b", Value: 1, Estimate: 4}}
	exec(`INSERT INTO samples (id, created_at, dataset, header, reported) VALUES ('s1', $1, 'd', $2, 2)`, now, header)
	exec(`INSERT INTO sample_chunks (sample_id, seq, data) VALUES ('s1', 0, $1)`, oldEncodeElements(elements))
	keysOnly := []store.Element{{Key: "k", Value: math.NaN(), Estimate: math.NaN()}}
	ksHeader, _ := json.Marshal(oldSampleHeader{Privacy: spec.Privacy, Sampling: sanitize.Sampling{Scheme: sanitize.SchemeCustom, Probabilities: []float64{0.5, 1}}, Release: ReleaseKeys, Method: sanitize.MethodMaxSeparation})
	exec(`INSERT INTO samples (id, created_at, header, reported) VALUES ('s2', $1, $2, 1)`, now, ksHeader)
	exec(`INSERT INTO sample_chunks (sample_id, seq, data) VALUES ('s2', 0, $1)`, oldEncodeElements(keysOnly))

	// An estimator stream with 17 events applied.
	ecfg := panprivate.Config{Estimator: panprivate.KindCroppedMean, Epsilon: 0.5, UniverseSize: 1000, SampleSize: 64, T: 4}
	est, err := panprivate.New(ecfg, dprand.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	var events []panprivate.Event
	for i := range 17 {
		events = append(events, panprivate.Event{User: panprivate.UserID(uint64(i % 9))})
	}
	if err := est.Apply(events); err != nil {
		t.Fatal(err)
	}
	if _, err := est.Release(dprandtest.NewLaplace(dprand.Seeded(2))); err != nil {
		t.Fatal(err)
	}
	estState, _ := est.MarshalBinary()
	resolved := est.Config()
	conf, _ := json.Marshal(oldStreamConfig{Dataset: "d", Estimator: &resolved})
	exec(`INSERT INTO states (kind, id, dataset, config, state, events, releases, created_at, updated_at) VALUES ('stream', 'e1', 'd', $1, $2, 17, 1, $3, $3)`,
		conf, oldEstimatorState(t, estState, 17), now)

	// A continual stream.
	cd, err := panprivate.NewContinualDensity(panprivate.ContinualDensityConfig{Epsilon: 0.3, UniverseSize: 100, SampleSize: 20, Horizon: 64}, dprandtest.NewLaplace(dprand.Seeded(3)), dprand.Seeded(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cd.Apply(5, false); err != nil {
		t.Fatal(err)
	}
	cdState, _ := cd.MarshalBinary()
	dcfg := cd.Config()
	conf, _ = json.Marshal(oldStreamConfig{Continual: true, Density: &dcfg})
	exec(`INSERT INTO states (kind, id, config, state, created_at, updated_at) VALUES ('stream', 'c1', $1, $2, $3, $3)`, conf, cdState, now)

	// A counter with monotone post-processing after 5 steps.
	ctr, err := panprivate.NewCounter(panprivate.CounterConfig{Algorithm: panprivate.CounterTree, Epsilon: 1, Horizon: 32}, dprandtest.NewLaplace(dprand.Seeded(5)), dprand.Seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	atCreation := ctr.State()
	outs, err := panprivate.CounterSteps(ctr, []int{1, 0, 1, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	mono := panprivate.MonotoneOutputs(outs, 1, 0)
	ctrState, _ := ctr.MarshalBinary()
	conf, _ = json.Marshal(oldCounterRecord{CounterState: atCreation, Postprocess: panprivate.PostprocessMonotone, Monotone: mono[len(mono)-1]})
	exec(`INSERT INTO states (kind, id, config, state, events, created_at, updated_at) VALUES ('counter', 'k1', $1, $2, 5, $3, $3)`, conf, ctrState, now)

	// Open the database as pwsd does.
	pg, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	svc, err := New(Config{Store: pg})
	if err != nil {
		t.Fatal(err)
	}
	n, err := svc.RewriteStoredFormats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (RewriteCounts{Samples: 2, Streams: 2, Counters: 1}); n != want {
		t.Errorf("rewrote %+v, want %+v", n, want)
	}

	t.Run("samples", func(t *testing.T) {
		for _, tc := range []struct {
			id       string
			spec     SampleSpec
			elements []store.Element
		}{
			{"s1", spec, elements},
			{"s2", SampleSpec{Privacy: spec.Privacy, Sampling: sanitize.Sampling{Scheme: sanitize.SchemeCustom, Probabilities: []float64{0.5, 1}}, Release: ReleaseKeys, Method: sanitize.MethodMaxSeparation}, keysOnly},
		} {
			var raw []byte
			if err := conn.QueryRow(ctx, `SELECT header FROM samples WHERE id = $1`, tc.id).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if f, err := storedformat.Format(raw); err != nil || f != SampleHeaderFormat {
				t.Fatalf("%s header %s is not format %d: %v", tc.id, raw, SampleHeaderFormat, err)
			}
			if _, err := storedformat.DecodeSampleHeader(raw); err != nil {
				t.Fatalf("%s header %s is not strictly format %d: %v", tc.id, raw, SampleHeaderFormat, err)
			}
			got, err := svc.getSample(ctx, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Spec, tc.spec) {
				t.Errorf("%s spec %+v, want %+v", tc.id, got.Spec, tc.spec)
			}
			if len(got.Elements) != len(tc.elements) {
				t.Fatalf("%s has %d elements, want %d", tc.id, len(got.Elements), len(tc.elements))
			}
			for i, e := range tc.elements {
				g := got.Elements[i]
				if g.Key != e.Key || math.Float64bits(g.Value) != math.Float64bits(e.Value) || math.Float64bits(g.Estimate) != math.Float64bits(e.Estimate) {
					t.Errorf("%s element %d is %+v, want %+v", tc.id, i, g, e)
				}
			}
			var chunk []byte
			if err := conn.QueryRow(ctx, `SELECT data FROM sample_chunks WHERE sample_id = $1`, tc.id).Scan(&chunk); err != nil || chunk[0] != store.ChunkFormat {
				t.Errorf("%s chunk does not start with format %d: %v", tc.id, store.ChunkFormat, err)
			}
		}
	})

	rawState := func(t *testing.T, kind, id string) (config, state []byte, events int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT config, state, events FROM states WHERE kind = $1 AND id = $2`, kind, id).Scan(&config, &state, &events); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Run("estimator stream", func(t *testing.T) {
		config, state, events := rawState(t, "stream", "e1")
		if f, err := storedformat.Format(config); err != nil || f != StreamConfigFormat {
			t.Fatalf("config %s is not format %d: %v", config, StreamConfigFormat, err)
		}
		if _, err := decodeStreamConfig(config); err != nil {
			t.Fatalf("config %s is not strictly format %d: %v", config, StreamConfigFormat, err)
		}
		if events != 0 {
			t.Errorf("legacy event count %d kept", events)
		}
		if !bytes.Equal(state, estState) {
			t.Error("state is not the current encoding of the same estimator (legacy slot not dropped?)")
		}
		v, err := svc.Streams.Get(ctx, "e1")
		if err != nil {
			t.Fatal(err)
		}
		p := est.Privacy()
		if !reflect.DeepEqual(*v.Estimator, resolved) || v.SampleSize != 64 || v.Releases != 1 || !reflect.DeepEqual(*v.Privacy, p) || v.Dataset != "d" {
			t.Errorf("stream view %+v", v)
		}
	})
	t.Run("continual stream", func(t *testing.T) {
		config, state, _ := rawState(t, "stream", "c1")
		if f, err := storedformat.Format(config); err != nil || f != StreamConfigFormat {
			t.Fatalf("config %s is not format %d: %v", config, StreamConfigFormat, err)
		}
		if sc, err := decodeStreamConfig(config); err != nil || !sc.Continual {
			t.Fatalf("config %s is not strictly format %d: %v", config, StreamConfigFormat, err)
		}
		if !bytes.Equal(state, cdState) {
			t.Error("continual state changed meaning")
		}
		v, err := svc.Streams.Get(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*v.Density, dcfg) || *v.Output != cd.Output() {
			t.Errorf("continual view %+v", v)
		}
	})
	t.Run("counter", func(t *testing.T) {
		config, state, events := rawState(t, "counter", "k1")
		if f, err := storedformat.Format(config); err != nil || f != CounterConfigFormat {
			t.Fatalf("config %s is not format %d: %v", config, CounterConfigFormat, err)
		}
		if _, err := decodeCounterConfig(config); err != nil {
			t.Fatalf("config %s is not strictly format %d: %v", config, CounterConfigFormat, err)
		}
		if !bytes.Equal(state, ctrState) || events != 5 {
			t.Errorf("counter state or steps changed (events %d)", events)
		}
		c, err := svc.Counters.Get(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if c.State != ctr.State() || c.Postprocess != panprivate.PostprocessMonotone || c.Monotone != mono[len(mono)-1] {
			t.Errorf("counter view %+v, want state %+v monotone %v", c, ctr.State(), mono[len(mono)-1])
		}
	})
	if again, err := svc.RewriteStoredFormats(ctx); err != nil || again != (RewriteCounts{}) {
		t.Errorf("second rewrite: %+v, %v", again, err)
	}
}
