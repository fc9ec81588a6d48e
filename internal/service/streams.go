package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/checks"
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

// streamConfig is the stored JSON configuration of a stream.
type streamConfig struct {
	Dataset   string                             `json:"dataset,omitempty"`
	Continual bool                               `json:"continual"`
	Estimator *panprivate.Config                 `json:"estimator,omitempty"`
	Density   *panprivate.ContinualDensityConfig `json:"continual_density,omitempty"`
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
	// Output is the latest continual output (continual mode only).
	Output *float64
	// Privacy states the guarantee (not continual).
	Privacy *panprivate.Privacy
}

// CreateStream validates spec and stores a fresh pan-private state. A
// continual stream's whole output is charged to its dataset at creation.
func (s *Service) CreateStream(ctx context.Context, spec StreamSpec) (Stream, error) {
	rng := s.newRand()
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &store.StateRecord{Kind: kindStream, ID: newID(), Dataset: spec.Dataset, CreatedAt: now, UpdatedAt: now}
	cfg := streamConfig{Dataset: spec.Dataset, Continual: spec.Continual}
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
		if rec.State, err = cd.MarshalBinary(); err != nil {
			return Stream{}, fmt.Errorf("encoding stream state: %w", err)
		}
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
		if rec.State, err = est.MarshalBinary(); err != nil {
			return Stream{}, fmt.Errorf("encoding stream state: %w", err)
		}
	}
	var err error
	if rec.Config, err = json.Marshal(cfg); err != nil {
		return Stream{}, fmt.Errorf("encoding stream config: %w", err)
	}
	var charge *store.Charge
	if spec.Continual && spec.Dataset != "" {
		// The continual output is released at every step: its whole cost is
		// charged once, at creation.
		charge = &store.Charge{Dataset: spec.Dataset, Kind: kindStream, Ref: rec.ID, Epsilon: cfg.Density.Epsilon}
	}
	if err := s.store.CreateState(ctx, rec, charge); err != nil {
		if charge != nil {
			return Stream{}, notFoundAs(s.budgetError(ctx, err, "creating stream", charge.Dataset, charge.Epsilon, charge.Delta), "dataset", spec.Dataset)
		}
		return Stream{}, storeErr(err, "creating stream")
	}
	return s.streamView(rec)
}

// streamView decodes a record into the public view.
func (s *Service) streamView(rec *store.StateRecord) (Stream, error) {
	cfg, err := streamConfigOf(rec)
	if err != nil {
		return Stream{}, err
	}
	v := Stream{ID: rec.ID, CreatedAt: rec.CreatedAt, Dataset: rec.Dataset, Continual: cfg.Continual,
		Estimator: cfg.Estimator, Density: cfg.Density, Releases: rec.Releases}
	if cfg.Continual {
		cd, err := panprivate.UnmarshalContinualDensity(rec.State, s.noise, s.newRand())
		if err != nil {
			return Stream{}, fmt.Errorf("decoding stream state: %w", err)
		}
		out := cd.Output()
		v.Output = &out
		v.SampleSize = cfg.Density.SampleSize
		return v, nil
	}
	est, err := panprivate.Unmarshal(rec.State, s.newRand())
	if err != nil {
		return Stream{}, fmt.Errorf("decoding stream state: %w", err)
	}
	st := est.Stats()
	p := est.Privacy()
	v.Intrusions, v.Privacy, v.SampleSize = st.Intrusions, &p, est.Config().SampleSize
	return v, nil
}

// streamConfigOf decodes a stream record's stored configuration.
func streamConfigOf(rec *store.StateRecord) (streamConfig, error) {
	var cfg streamConfig
	if err := json.Unmarshal(rec.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("decoding stream config: %w", err)
	}
	return cfg, nil
}

// GetStream returns a stream's public view.
func (s *Service) GetStream(ctx context.Context, id string) (Stream, error) {
	rec, err := s.store.GetState(ctx, kindStream, id)
	if err != nil {
		return Stream{}, storeErr(err, "reading stream")
	}
	return s.streamView(rec)
}

// ApplyEvents applies a batch of events to a stream in one transaction with
// the state locked; it returns after the new state is durable. A batch with
// an invalid event changes nothing.
func (s *Service) ApplyEvents(ctx context.Context, id string, events []panprivate.Event) (Stream, error) {
	var view Stream
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		cfg, err := streamConfigOf(rec)
		if err != nil {
			return nil, err
		}
		rng := s.newRand()
		var state []byte
		if cfg.Continual {
			cd, err := panprivate.UnmarshalContinualDensity(rec.State, s.noise, rng)
			if err != nil {
				return nil, fmt.Errorf("decoding stream state: %w", err)
			}
			if err := applyContinual(cd, events); err != nil {
				return nil, err
			}
			if state, err = cd.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("encoding stream state: %w", err)
			}
		} else {
			est, err := panprivate.Unmarshal(rec.State, rng)
			if err != nil {
				return nil, fmt.Errorf("decoding stream state: %w", err)
			}
			if err := est.Apply(events); err != nil {
				return nil, err
			}
			if state, err = est.MarshalBinary(); err != nil {
				return nil, fmt.Errorf("encoding stream state: %w", err)
			}
		}
		rec.State = state
		view, err = s.streamView(rec)
		return nil, err
	})
	if err != nil {
		return Stream{}, storeErr(err, "applying events")
	}
	return view, nil
}

// applyContinual feeds events to the continual estimator one step each.
// The estimator's steps are validated up front so a batch is all or nothing:
// the caller discards the decoded state on error.
func applyContinual(cd *panprivate.ContinualDensity, events []panprivate.Event) error {
	for i, e := range events {
		var err error
		if id, name, named := e.User.Parts(); named {
			_, err = cd.ApplyName(name, e.Delete)
		} else {
			_, err = cd.Apply(id, e.Delete)
		}
		if err != nil {
			if _, ok := checks.Fields(err); ok {
				return checks.Prefix(fmt.Sprintf("events[%d]", i), err)
			}
			return fmt.Errorf("applying event %d: %w", i, err)
		}
	}
	return nil
}

// StreamRelease is one noisy estimate from a stream.
type StreamRelease struct {
	Estimate     float64
	EpsilonSpent float64
}

// ReleaseStream draws one noisy estimate (Laplace noise from the vetted
// source), charging its epsilon to the stream's dataset in the same
// transaction. Past the stream's max_releases it fails with ErrLimit.
func (s *Service) ReleaseStream(ctx context.Context, id string) (StreamRelease, error) {
	var out StreamRelease
	var charged *store.Charge
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		cfg, err := streamConfigOf(rec)
		if err != nil {
			return nil, err
		}
		if cfg.Continual {
			cd, err := panprivate.UnmarshalContinualDensity(rec.State, s.noise, s.newRand())
			if err != nil {
				return nil, fmt.Errorf("decoding stream state: %w", err)
			}
			// The continual output is already public after every step.
			out = StreamRelease{Estimate: cd.Output(), EpsilonSpent: 0}
			rec.Releases++
			return nil, nil
		}
		est, err := panprivate.Unmarshal(rec.State, s.newRand())
		if err != nil {
			return nil, fmt.Errorf("decoding stream state: %w", err)
		}
		r, err := est.Release(s.noise)
		if errors.Is(err, panprivate.ErrReleaseLimit) {
			return nil, fmt.Errorf("the stream's max_releases is reached: %w", ErrLimit)
		}
		if errors.Is(err, panprivate.ErrUninformative) {
			return nil, fmt.Errorf("announced intrusions left the state uninformative: %w", ErrLimit)
		}
		if err != nil {
			return nil, fmt.Errorf("releasing: %w", err)
		}
		if rec.State, err = est.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding stream state: %w", err)
		}
		rec.Releases++
		out = StreamRelease{Estimate: r.Estimate, EpsilonSpent: r.EpsilonSpent}
		if rec.Dataset == "" {
			return nil, nil
		}
		charged = &store.Charge{Dataset: rec.Dataset, Kind: kindStream, Ref: rec.ID, Epsilon: r.EpsilonSpent}
		return charged, nil
	})
	if err != nil && charged != nil {
		return StreamRelease{}, s.budgetError(ctx, err, "releasing", charged.Dataset, charged.Epsilon, charged.Delta)
	}
	if err != nil {
		return StreamRelease{}, storeErr(err, "releasing")
	}
	return out, nil
}

// IntrudeStream performs an announced intrusion: it returns the internal
// state as it was, then durably re-randomizes it.
func (s *Service) IntrudeStream(ctx context.Context, id string) (any, error) {
	var out any
	err := s.store.UpdateState(ctx, kindStream, id, func(rec *store.StateRecord) (*store.Charge, error) {
		cfg, err := streamConfigOf(rec)
		if err != nil {
			return nil, err
		}
		if cfg.Continual {
			return nil, fmt.Errorf("announced intrusions are not supported on continual streams: %w", ErrLimit)
		}
		est, err := panprivate.Unmarshal(rec.State, s.newRand())
		if err != nil {
			return nil, fmt.Errorf("decoding stream state: %w", err)
		}
		out = est.Intrude()
		if rec.State, err = est.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding stream state: %w", err)
		}
		return nil, nil
	})
	if err != nil {
		return nil, storeErr(err, "intrusion")
	}
	return out, nil
}
