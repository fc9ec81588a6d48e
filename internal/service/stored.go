package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/pwsd/pwsd/internal/panprivate"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/storedformat"
)

// The versions of the JSON the service stores (package storedformat).
const (
	SampleHeaderFormat  = storedformat.SampleHeaderFormat
	StreamConfigFormat  = storedformat.StreamConfigFormat
	CounterConfigFormat = storedformat.CounterConfigFormat
)

// streamConfig is a stream's stored configuration.
type streamConfig = storedformat.StreamConfig

// counterConfig is a counter's stored configuration.
type counterConfig = storedformat.CounterConfig

var (
	encodeStreamConfig  = storedformat.EncodeStreamConfig
	decodeStreamConfig  = storedformat.DecodeStreamConfig
	encodeCounterConfig = storedformat.EncodeCounterConfig
	decodeCounterConfig = storedformat.DecodeCounterConfig
)

// encodeSampleHeader encodes spec's stored header (storedformat).
func encodeSampleHeader(spec SampleSpec) ([]byte, error) {
	return storedformat.EncodeSampleHeader(storedformat.SampleHeader{Dataset: spec.Dataset, Privacy: spec.Privacy,
		Sampling: spec.Sampling, Release: string(spec.Release), Method: spec.Method})
}

// decodeSampleHeader decodes a stored header into the release it describes.
func decodeSampleHeader(data []byte) (SampleSpec, error) {
	h, err := storedformat.DecodeSampleHeader(data)
	if err != nil {
		return SampleSpec{}, err
	}
	return SampleSpec{Dataset: h.Dataset, Privacy: h.Privacy, Sampling: h.Sampling, Release: Release(h.Release), Method: h.Method}, nil
}

// RewriteCounts says how many stored rows RewriteStoredFormats rewrote.
type RewriteCounts struct {
	Samples, Streams, Counters int
}

// RewriteStoredFormats rewrites every row the previous release stored in an
// older shape to the current versioned one: sample headers (Go field names)
// to SampleHeaderFormat, stream configurations to StreamConfigFormat with
// the state re-encoded in panprivate.StateFormat (the legacy event-count
// slot dropped, the record's event count zeroed), counter configurations to
// CounterConfigFormat with the state re-encoded canonically. Each row is
// decoded strictly and rewritten with the same meaning in its own
// transaction; a row that does not decode stops the rewrite with an error
// naming it. pwsd runs it at start-up, after the schema migrations; running
// it again rewrites nothing.
func (s *Service) RewriteStoredFormats(ctx context.Context) (RewriteCounts, error) {
	var n RewriteCounts
	rw, ok := s.store.(store.FormatRewriter)
	if !ok {
		return n, nil
	}
	var err error
	if n.Samples, err = rw.RewriteSampleHeaders(ctx, SampleHeaderFormat, func(h []byte) ([]byte, error) {
		spec, err := decodeSampleHeader(h)
		if err != nil {
			return nil, err
		}
		return encodeSampleHeader(spec)
	}); err != nil {
		return n, err
	}
	if n.Streams, err = rw.RewriteStates(ctx, kindStream, StreamConfigFormat, func(rec *store.StateRecord) error {
		cfg, err := decodeStreamConfig(rec.Config)
		if err != nil {
			return err
		}
		st, err := s.Streams.loadStream(cfg, rec.State)
		if err != nil {
			return err
		}
		if rec.State, err = st.MarshalBinary(); err != nil {
			return fmt.Errorf("encoding stream state: %w", err)
		}
		rec.Events = 0
		rec.Config, err = encodeStreamConfig(cfg)
		return err
	}); err != nil {
		return n, err
	}
	n.Counters, err = rw.RewriteStates(ctx, kindCounter, CounterConfigFormat, func(rec *store.StateRecord) error {
		cfg, err := decodeCounterConfig(rec.Config)
		if err != nil {
			return err
		}
		c, err := panprivate.UnmarshalCounter(rec.State, s.noise, s.newRand())
		if err != nil {
			return fmt.Errorf("decoding counter: %w", err)
		}
		if st := c.State(); st.Algorithm != cfg.Algorithm || st.Epsilon != cfg.Epsilon || st.Horizon != cfg.Horizon {
			return errors.New("counter config does not match its state")
		}
		if rec.State, err = c.MarshalBinary(); err != nil {
			return fmt.Errorf("encoding counter: %w", err)
		}
		rec.Config, err = encodeCounterConfig(cfg)
		return err
	})
	return n, err
}
