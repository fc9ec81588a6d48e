package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/accounting"
	"github.com/pwsd/pwsd/internal/checks"
	"github.com/pwsd/pwsd/internal/dprand"
	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// Record kinds in the store.
const (
	kindStream  = "stream"
	kindCounter = "counter"
)

// StreamSpec asks for a pan-private stream. In continual mode the stream is
// the continual-observation density estimator (Fig. 3 of "Differential
// privacy in new settings"); otherwise Estimator configures one of the
// estimators of package panprivate.
type StreamSpec struct {
	Dataset   string
	Continual bool
	Estimator panprivate.Config
	// Continual mode only.
	Horizon int64
	Counter panprivate.CounterAlgorithm
}

// Stream is the public view of a stream: configuration and counts, never
// the internal state.
type Stream struct {
	ID         string
	CreatedAt  time.Time
	Dataset    string
	Continual  bool
	Estimator  *panprivate.Config                 // resolved configuration (not continual)
	Density    *panprivate.ContinualDensityConfig // resolved configuration (continual)
	SampleSize int
	Releases   int
	Intrusions int
	// Output is the latest continual output (continual mode only) and
	// OutputError its standard error (Bound: an upper bound).
	Output      *float64
	OutputError *StandardError
	// Privacy states the guarantee (not continual).
	Privacy *panprivate.Privacy
}

// Create validates spec and stores a fresh pan-private state. A
// continual stream's whole output is charged to its dataset at creation.
func (s *Streams) Create(ctx context.Context, spec StreamSpec) (Stream, error) {
	if err := inScope(ctx, "dataset", spec.Dataset); err != nil {
		return Stream{}, err
	}
	rng := s.newRand()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: kindStream, ID: newID(), Dataset: spec.Dataset, CreatedAt: now, UpdatedAt: now}
	cfg := streamConfig{Dataset: spec.Dataset, Continual: spec.Continual}
	var st stream
	if spec.Continual {
		e := spec.Estimator
		if e.Estimator != "" && e.Estimator != panprivate.KindDensity {
			return Stream{}, fieldErr("estimator", "continual mode supports only density")
		}
		if e.Algorithm != "" || e.Accuracy != nil || e.T != 0 || e.K != 0 || e.MaxOccurrences != 0 || e.MaxReleases != 0 || e.ReleaseNoise != "" {
			return Stream{}, fieldErr("continual", "takes only epsilon, universe_size, sample_size, horizon and counter")
		}
		dc := panprivate.ContinualDensityConfig{Epsilon: e.Epsilon, UniverseSize: e.UniverseSize, SampleSize: e.SampleSize, Horizon: spec.Horizon, Counter: spec.Counter}
		cd, err := panprivate.NewContinualDensity(dc, s.noise, rng)
		if err != nil {
			return Stream{}, err
		}
		resolved := cd.Config()
		cfg.Density = &resolved
		st = continualStream{cd}
	} else {
		if spec.Horizon != 0 || spec.Counter != "" {
			return Stream{}, fieldErr("horizon", "applies only to continual streams")
		}
		est, err := panprivate.New(spec.Estimator, rng)
		if err != nil {
			return Stream{}, err
		}
		resolved := est.Config()
		cfg.Estimator = &resolved
		st = estimatorStream{est}
	}
	var err error
	if rec.State, err = st.MarshalBinary(); err != nil {
		return Stream{}, fmt.Errorf("encoding stream state: %w", err)
	}
	if rec.Config, err = encodeStreamConfig(cfg); err != nil {
		return Stream{}, fmt.Errorf("encoding stream config: %w", err)
	}
	var charge *store.Charge
	if spec.Continual && spec.Dataset != "" {
		// The continual output is released at every step: its whole cost is
		// charged once, at creation.
		charge = &store.Charge{Dataset: spec.Dataset, Kind: kindStream, Ref: rec.ID, Epsilon: cfg.Density.Epsilon, Mechanism: accounting.MechanismGeneric}
	}
	if err := s.store.CreateState(ctx, rec, charge); err != nil {
		if charge != nil {
			return Stream{}, notFoundAs(s.datasets.budgetError(ctx, err, "creating stream", charge.Dataset, charge.Epsilon, charge.Delta), "dataset", spec.Dataset)
		}
		return Stream{}, storeErr(err, "creating stream")
	}
	return s.streamView(rec)
}

// stream is a stream's decoded pan-private state, whatever its kind: one
// of the estimators of package panprivate or the continual density. It is
// decoded from its record for one operation and encoded back after it.
type stream interface {
	// Apply applies a batch of events, all or nothing: on error the caller
	// discards the stream.
	Apply(events []panprivate.Event) error
	// Release draws one noisy estimate.
	Release(noise dprand.Laplacer) (StreamRelease, error)
	// Intrude performs an announced intrusion.
	Intrude() (panprivate.State, error)
	// fill sets the public counts of v.
	fill(v *Stream)
	MarshalBinary() ([]byte, error)
}

// loadStream decodes a record's state as the stream its configuration says.
func (s *Streams) loadStream(cfg streamConfig, state []byte) (stream, error) {
	if cfg.Continual {
		cd, err := panprivate.UnmarshalContinualDensity(state, s.noise, s.newRand())
		if err != nil {
			return nil, fmt.Errorf("decoding stream state: %w", err)
		}
		return continualStream{cd}, nil
	}
	est, err := panprivate.Unmarshal(state, s.newRand())
	if err != nil {
		return nil, fmt.Errorf("decoding stream state: %w", err)
	}
	return estimatorStream{est}, nil
}

// estimatorStream is a stream of one of panprivate's estimators.
type estimatorStream struct{ est panprivate.Estimator }

func (e estimatorStream) Apply(events []panprivate.Event) error {
	return e.est.Apply(events)
}

func (e estimatorStream) Release(noise dprand.Laplacer) (StreamRelease, error) {
	r, err := e.est.Release(noise)
	if errors.Is(err, panprivate.ErrReleaseLimit) {
		return StreamRelease{}, fmt.Errorf("the stream's max_releases is reached: %w", ErrLimit)
	}
	if errors.Is(err, panprivate.ErrUninformative) {
		return StreamRelease{}, fmt.Errorf("announced intrusions left the state uninformative: %w", ErrLimit)
	}
	if err != nil {
		return StreamRelease{}, fmt.Errorf("releasing: %w", err)
	}
	return streamRelease(r), nil
}

// streamRelease converts a release (the interval is added by ReleaseStream,
// which knows the level).
func streamRelease(r panprivate.Release) StreamRelease {
	return StreamRelease{Estimate: r.Estimate, EpsilonSpent: r.EpsilonSpent, Clamped: r.Clamped(),
		StandardError: StandardError{Value: r.StandardError, Bound: r.Bound}, Min: r.Min, Max: r.Max, laplace: r.Laplace}
}

func (e estimatorStream) Intrude() (panprivate.State, error) { return e.est.Intrude(), nil }

func (e estimatorStream) fill(v *Stream) {
	p := e.est.Privacy()
	v.Intrusions, v.Privacy, v.SampleSize = e.est.Stats().Intrusions, &p, e.est.Config().SampleSize
}

func (e estimatorStream) MarshalBinary() ([]byte, error) { return e.est.MarshalBinary() }

// continualStream is the continual-observation density estimator (Fig. 3
// of "Differential privacy in new settings").
type continualStream struct{ cd *panprivate.ContinualDensity }

// Apply feeds events to the estimator one step each (ApplyEvent). Its steps
// are validated before any state changes, and the caller discards the
// decoded state on error, so a batch is all or nothing.
func (c continualStream) Apply(events []panprivate.Event) error {
	for i, e := range events {
		if _, err := c.cd.ApplyEvent(e); err != nil {
			if _, ok := checks.Fields(err); ok {
				return checks.Prefix(fmt.Sprintf("events[%d]", i), err)
			}
			return fmt.Errorf("applying event %d: %w", i, err)
		}
	}
	return nil
}

// Release returns the latest output: it is already public after every
// step, so it costs nothing more.
func (c continualStream) Release(dprand.Laplacer) (StreamRelease, error) {
	return streamRelease(c.cd.Latest()), nil
}

func (c continualStream) Intrude() (panprivate.State, error) {
	return panprivate.State{}, fmt.Errorf("announced intrusions are not supported on continual streams: %w", ErrLimit)
}

func (c continualStream) fill(v *Stream) {
	out := c.cd.Output()
	se, bound := c.cd.StandardError()
	v.Output, v.OutputError, v.SampleSize = &out, &StandardError{Value: se, Bound: bound}, c.cd.Config().SampleSize
}

func (c continualStream) MarshalBinary() ([]byte, error) { return c.cd.MarshalBinary() }

// streamView decodes a record into the public view.
func (s *Streams) streamView(rec *store.StateRecord) (Stream, error) {
	cfg, st, err := s.streamOf(rec)
	if err != nil {
		return Stream{}, err
	}
	return viewOf(rec, cfg, st), nil
}

func viewOf(rec *store.StateRecord, cfg streamConfig, st stream) Stream {
	v := Stream{ID: rec.ID, CreatedAt: rec.CreatedAt, Dataset: rec.Dataset, Continual: cfg.Continual,
		Estimator: cfg.Estimator, Density: cfg.Density, Releases: rec.Releases}
	st.fill(&v)
	return v
}

// streamOf decodes a stream record: configuration and state.
func (s *Streams) streamOf(rec *store.StateRecord) (streamConfig, stream, error) {
	cfg, err := decodeStreamConfig(rec.Config)
	if err != nil {
		return cfg, nil, err
	}
	st, err := s.loadStream(cfg, rec.State)
	return cfg, st, err
}

// Get returns a stream's public view.
func (s *Streams) Get(ctx context.Context, id string) (Stream, error) {
	rec, err := s.store.GetState(ctx, kindStream, id)
	if err != nil {
		return Stream{}, storeErr(err, "reading stream")
	}
	return s.streamView(rec)
}

// Apply applies a batch of events to a stream in one transaction with
// the state locked; it returns after the new state is durable. A batch with
// an invalid event changes nothing.
func (s *Streams) Apply(ctx context.Context, id string, events []panprivate.Event) (Stream, error) {
	var view Stream
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		if err := inScope(ctx, "id", rec.Dataset); err != nil {
			return nil, err
		}
		cfg, st, err := s.streamOf(rec)
		if err != nil {
			return nil, err
		}
		if err := st.Apply(events); err != nil {
			return nil, err
		}
		if rec.State, err = st.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding stream state: %w", err)
		}
		view = viewOf(rec, cfg, st)
		return nil, nil
	})
	if err != nil {
		return Stream{}, storeErr(err, "applying events")
	}
	return view, nil
}

// StandardError is a standard error; Bound says it is an upper bound (on
// the root mean squared error) rather than the exact value at the plug-in.
type StandardError struct {
	Value float64
	Bound bool
}

// StreamRelease is one noisy estimate from a stream with its error
// (panprivate.Release): the raw unbiased Estimate, its standard error, the
// normal Interval at the asked level clipped to the estimand's range
// [Min, Max], and Clamped, the estimate projected onto that range.
type StreamRelease struct {
	Estimate      float64
	EpsilonSpent  float64
	StandardError StandardError
	Interval      estimate.Interval
	Clamped       float64
	Min, Max      float64
	// laplace: the release is a Laplace mechanism (panprivate.Release.Laplace).
	laplace bool
}

// Release draws one noisy estimate (Laplace noise from the vetted
// source) with its standard error and an interval at level, charging its epsilon to the stream's dataset in the same
// transaction. Past the stream's max_releases it fails with ErrLimit. A
// continual stream's release is its latest output, already paid for.
func (s *Streams) Release(ctx context.Context, id string, level float64) (StreamRelease, error) {
	if !(level > 0 && level < 1) {
		return StreamRelease{}, fieldErr("level", "must be a number strictly between 0 and 1")
	}
	var out StreamRelease
	var charged *store.Charge
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		if err := inScope(ctx, "id", rec.Dataset); err != nil {
			return nil, err
		}
		cfg, st, err := s.streamOf(rec)
		if err != nil {
			return nil, err
		}
		if out, err = st.Release(s.noise); err != nil {
			return nil, err
		}
		rec.Releases++
		if cfg.Continual {
			return nil, nil
		}
		if rec.State, err = st.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding stream state: %w", err)
		}
		if rec.Dataset == "" {
			return nil, nil
		}
		charged = &store.Charge{Dataset: rec.Dataset, Kind: kindStream, Ref: rec.ID, Epsilon: out.EpsilonSpent, Mechanism: accounting.MechanismGeneric}
		if out.laplace {
			// Laplace noise on an estimate of bounded sensitivity: composed by
			// its exact PLD (docs/accounting.md).
			charged.Mechanism = accounting.MechanismLaplace
		}
		return charged, nil
	})
	if err != nil && charged != nil {
		return StreamRelease{}, s.datasets.budgetError(ctx, err, "releasing", charged.Dataset, charged.Epsilon, charged.Delta)
	}
	if err != nil {
		return StreamRelease{}, storeErr(err, "releasing")
	}
	out.Interval = estimate.NormalInterval(out.Estimate, out.StandardError.Value, level, out.Min, out.Max)
	return out, nil
}

// Intrude performs an announced intrusion: it returns the internal
// state as it was, then durably re-randomizes it.
func (s *Streams) Intrude(ctx context.Context, id string) (panprivate.State, error) {
	var out panprivate.State
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		if err := inScope(ctx, "id", rec.Dataset); err != nil {
			return nil, err
		}
		_, st, err := s.streamOf(rec)
		if err != nil {
			return nil, err
		}
		if out, err = st.Intrude(); err != nil {
			return nil, err
		}
		if rec.State, err = st.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding stream state: %w", err)
		}
		return nil, nil
	})
	if err != nil {
		return panprivate.State{}, storeErr(err, "intrusion")
	}
	return out, nil
}

func statePos(r *store.StateRecord) (time.Time, string) { return r.CreatedAt, r.ID }

// List lists streams (configuration and counts), oldest first.
func (s *Streams) List(ctx context.Context, p Page) ([]Stream, string, error) {
	rows, next, err := pageOf(p, cursorStreams, func(c store.Cursor, n int) ([]*store.StateRecord, error) {
		return s.store.ListStates(ctx, kindStream, c, n)
	}, statePos)
	if err != nil {
		return nil, "", storeErr(err, "listing streams")
	}
	out := make([]Stream, len(rows))
	for i, r := range rows {
		if out[i], err = s.streamView(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// Delete deletes a stream and its pan-private state; its dataset's
// ledger keeps every charge.
func (s *Streams) Delete(ctx context.Context, id string) error {
	if scoped(ctx) {
		rec, err := s.store.GetState(ctx, kindStream, id)
		if err != nil {
			return storeErr(err, "deleting stream")
		}
		if err := inScope(ctx, "id", rec.Dataset); err != nil {
			return err
		}
	}
	return storeErr(s.store.DeleteState(ctx, kindStream, id), "deleting stream")
}
