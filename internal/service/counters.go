package service

import (
	"context"
	"fmt"
	"time"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
)

// Counter is the public view of a counter under continual observation.
type Counter struct {
	ID        string
	CreatedAt time.Time
	State     panprivate.CounterState
	Level     string // the kind of guarantee, e.g. event-level pan-private
	// Postprocess is the post-processing published beside the raw outputs.
	Postprocess panprivate.CounterPostprocess
	// Monotone is the latest post-processed count (0 before any step);
	// meaningful only with Postprocess set.
	Monotone float64
	// CountError is the standard error of State.Count (0 before any step).
	CountError StandardError
}

// counterError returns the standard error of c's latest output.
func counterError(c panprivate.Counter) StandardError {
	se, bound := c.StandardError(c.Steps())
	return StandardError{Value: se, Bound: bound}
}

// counterConfigOf decodes a record's stored configuration.
func counterConfigOf(rec *store.StateRecord) (counterConfig, error) {
	return decodeCounterConfig(rec.Config)
}

// CounterOutputs are the outputs of a batch of steps: the raw ones and, with
// post-processing, the post-processed ones.
type CounterOutputs struct {
	Raw []float64
	// StandardErrors holds the standard error of each raw output
	// (panprivate.Counter.StandardError); Bound says they are upper bounds.
	StandardErrors []float64
	Bound          bool
	Postprocess    panprivate.CounterPostprocess
	Monotone       []float64
}

// Create validates cfg (an empty algorithm takes the lowest-error one
// for the horizon) and stores a fresh counter, noised from initialisation.
func (s *Counters) Create(ctx context.Context, cfg panprivate.CounterConfig) (Counter, error) {
	if err := inScope(ctx, "dataset", ""); err != nil { // counters belong to no dataset
		return Counter{}, err
	}
	c, err := panprivate.NewCounter(cfg, s.noise, s.newRand())
	if err != nil {
		return Counter{}, err
	}
	state, err := c.MarshalBinary()
	if err != nil {
		return Counter{}, fmt.Errorf("encoding counter: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	st := c.State()
	conf, err := encodeCounterConfig(counterConfig{Algorithm: st.Algorithm, Epsilon: st.Epsilon, Horizon: st.Horizon, Postprocess: cfg.Postprocess})
	if err != nil {
		return Counter{}, fmt.Errorf("encoding counter config: %w", err)
	}
	rec := &store.StateRecord{Kind: kindCounter, ID: newID(), Config: conf, State: state, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateState(ctx, rec, nil); err != nil {
		return Counter{}, storeErr(err, "creating counter")
	}
	_, level := c.Cost()
	return Counter{ID: rec.ID, CreatedAt: now, State: c.State(), Level: level, Postprocess: cfg.Postprocess, CountError: counterError(c)}, nil
}

// Get returns a counter's public view: steps and the latest output.
func (s *Counters) Get(ctx context.Context, id string) (Counter, error) {
	rec, err := s.store.GetState(ctx, kindCounter, id)
	if err != nil {
		return Counter{}, storeErr(err, "reading counter")
	}
	c, err := panprivate.UnmarshalCounter(rec.State, s.noise, s.newRand())
	if err != nil {
		return Counter{}, fmt.Errorf("decoding counter: %w", err)
	}
	cr, err := counterConfigOf(rec)
	if err != nil {
		return Counter{}, err
	}
	_, level := c.Cost()
	return Counter{ID: rec.ID, CreatedAt: rec.CreatedAt, State: c.State(), Level: level, Postprocess: cr.Postprocess, Monotone: cr.Monotone, CountError: counterError(c)}, nil
}

// Steps feeds bits to a counter in one transaction with the state
// locked and returns one output per step after the new state is durable. A
// batch that would pass the horizon, or holds a bit other than 0 or 1,
// changes nothing. With post-processing the post-processed outputs come
// beside the raw ones and the latest is kept with the counter.
func (s *Counters) Steps(ctx context.Context, id string, bits []int) (CounterOutputs, error) {
	if err := inScope(ctx, "id", ""); err != nil { // counters belong to no dataset
		return CounterOutputs{}, err
	}
	for i, b := range bits {
		if b != 0 && b != 1 {
			return CounterOutputs{}, fieldErr(fmt.Sprintf("bits[%d]", i), "must be 0 or 1")
		}
	}
	var outputs CounterOutputs
	err := s.store.UpdateState(ctx, kindCounter, id, func(rec *store.StateRecord) (*store.Charge, error) {
		c, err := panprivate.UnmarshalCounter(rec.State, s.noise, s.newRand())
		if err != nil {
			return nil, fmt.Errorf("decoding counter: %w", err)
		}
		st := c.State()
		if st.Steps+int64(len(bits)) > st.Horizon {
			return nil, fieldErr("bits", "would take the counter past its horizon of %d steps (%d taken)", st.Horizon, st.Steps)
		}
		if outputs.Raw, err = panprivate.CounterSteps(c, bits); err != nil {
			return nil, err
		}
		outputs.StandardErrors = make([]float64, len(bits))
		for i := range bits {
			outputs.StandardErrors[i], outputs.Bound = c.StandardError(st.Steps + int64(i) + 1)
		}
		cr, err := counterConfigOf(rec)
		if err != nil {
			return nil, err
		}
		if outputs.Postprocess = cr.Postprocess; cr.Postprocess == panprivate.PostprocessMonotone && len(bits) > 0 {
			outputs.Monotone = panprivate.MonotoneOutputs(outputs.Raw, st.Steps+1, cr.Monotone)
			cr.Monotone = outputs.Monotone[len(outputs.Monotone)-1]
			if rec.Config, err = encodeCounterConfig(cr); err != nil {
				return nil, fmt.Errorf("encoding counter config: %w", err)
			}
		}
		if rec.State, err = c.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("encoding counter: %w", err)
		}
		rec.Events += int64(len(bits))
		return nil, nil
	})
	if err != nil {
		return CounterOutputs{}, storeErr(err, "stepping counter")
	}
	return outputs, nil
}

// counterOf decodes a counter record into its public view.
func (s *Counters) counterOf(rec *store.StateRecord) (Counter, error) {
	c, err := panprivate.UnmarshalCounter(rec.State, s.noise, s.newRand())
	if err != nil {
		return Counter{}, fmt.Errorf("decoding counter: %w", err)
	}
	_, level := c.Cost()
	return Counter{ID: rec.ID, CreatedAt: rec.CreatedAt, State: c.State(), Level: level, CountError: counterError(c)}, nil
}

// List lists counters, oldest first.
func (s *Counters) List(ctx context.Context, p Page) ([]Counter, string, error) {
	rows, next, err := pageOf(p, cursorCounters, func(c store.Cursor, n int) ([]*store.StateRecord, error) {
		return s.store.ListStates(ctx, kindCounter, c, n)
	}, statePos)
	if err != nil {
		return nil, "", storeErr(err, "listing counters")
	}
	out := make([]Counter, len(rows))
	for i, r := range rows {
		if out[i], err = s.counterOf(r); err != nil {
			return nil, "", err
		}
	}
	return out, next, nil
}

// Delete deletes a counter and its state.
func (s *Counters) Delete(ctx context.Context, id string) error {
	if err := inScope(ctx, "id", ""); err != nil { // counters belong to no dataset
		return err
	}
	return storeErr(s.store.DeleteState(ctx, kindCounter, id), "deleting counter")
}
