package service

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
)

// MLE answers of frequencies releases come from estimate.Chunks: the MLE
// estimator table cut into stretches of ChunkSize frequencies, each built
// from the sanitizer rows near it (rows by restart make those cheap at any
// frequency) and kept in memory and in the store under its canonical
// parameters, so a parameter set released every day never computes a chunk
// twice. A release needs the chunks holding its values and, for error bars,
// those holding its keys' MLE frequencies (about L above the values).

// chunkKey is the cache key of chunk k of (g, MLE) over t.
func (s *Service) chunkKey(t *sanitize.Table, g estimate.G, size, k int64) string {
	return s.tableKey("chunk", t.Privacy(), t.Sampling(), t.Method(), intPart("format", estimate.ChunkFormat),
		strPart("g", g.String()), intPart("size", size), intPart("k", k))
}

// chunkSets returns, for each g, the MLE chunk set over t holding the
// chunks ks (deduplicated), from memory, else from the store, else built
// (the gs of one chunk in one pass over the rows) and kept.
func (s *Service) chunkSets(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64) ([]*estimate.ChunkSet, error) {
	size := estimate.ChunkSize(t.Privacy())
	from, err := s.supportedFrom(ctx, t)
	if err != nil {
		return nil, err
	}
	sets := make([]*estimate.ChunkSet, len(gs))
	for n, g := range gs {
		sets[n] = &estimate.ChunkSet{G: g, Size: size, Chunks: make(map[int64]*estimate.Chunk), Supported: from}
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	for _, k := range ks {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cs, err := s.chunks(ctx, t, gs, size, k)
		if err != nil {
			return nil, err
		}
		for n, c := range cs {
			sets[n].Chunks[k] = c
		}
	}
	return sets, nil
}

// chunks returns chunk k of each g.
func (s *Service) chunks(ctx context.Context, t *sanitize.Table, gs []estimate.G, size, k int64) ([]*estimate.Chunk, error) {
	out := make([]*estimate.Chunk, len(gs))
	var missing []estimate.G
	for n, g := range gs {
		if c, ok := s.chunkCache.Get(s.chunkKey(t, g, size, k)); ok {
			out[n] = c
		} else {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	flightKey := s.chunkKey(t, missing[0], size, k)
	for _, g := range missing[1:] {
		flightKey += "+" + g.String()
	}
	v, err := s.flight.do(ctx, flightKey, func(ctx context.Context) (any, error) {
		got := make([]*estimate.Chunk, len(missing))
		var build []estimate.G
		for n, g := range missing {
			key := s.chunkKey(t, g, size, k)
			if c, ok := s.chunkCache.Get(key); ok {
				got[n] = c
				continue
			}
			data, ok, err := s.store.GetTable(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("reading table cache: %w", err)
			}
			if ok {
				c := &estimate.Chunk{}
				if err := c.UnmarshalBinary(data); err == nil && c.Index == k && c.Size == size && c.G == g {
					got[n] = s.chunkCache.Add(key, c)
					continue
				}
				s.log.Warn("ignoring undecodable cached chunk", "key", key)
			}
			build = append(build, g)
		}
		if len(build) > 0 {
			s.computed.Add(1)
			built, err := estimate.BuildChunks(ctx, t, build, size, k)
			if err != nil {
				return nil, estimateErr(err)
			}
			for _, c := range built {
				data, err := c.MarshalBinary()
				if err != nil {
					return nil, fmt.Errorf("encoding chunk: %w", err)
				}
				key := s.chunkKey(t, c.G, size, k)
				if err := s.store.PutTable(ctx, key, data); err != nil {
					return nil, fmt.Errorf("caching chunk: %w", err)
				}
				for n, g := range missing {
					if g == c.G && got[n] == nil {
						got[n] = s.chunkCache.Add(key, c)
					}
				}
			}
		}
		return got, nil
	})
	if err != nil {
		return nil, err
	}
	got := v.([]*estimate.Chunk)
	for n, m := 0, 0; n < len(out); n++ {
		if out[n] == nil {
			out[n] = got[m]
			m++
		}
	}
	return out, nil
}

// supportedFrom returns the smallest frequency reported with probability
// at least 1/2 under t (estimate.Table.SupportedFrom's rule), or 0 when
// none up to sanitize.MaxFrequency is; it depends on public parameters only.
func (s *Service) supportedFrom(ctx context.Context, t *sanitize.Table) (int64, error) {
	key := s.tableKey("supported", t.Privacy(), t.Sampling(), t.Method())
	if v, ok := s.supported.Get(key); ok {
		return v, nil
	}
	f, err := t.ReportedFrom(ctx, 0.5)
	if err != nil {
		return 0, fmt.Errorf("reporting probabilities: %w", err)
	}
	s.supported.Add(key, f)
	return f, nil
}

// valueChunks returns the chunks holding values vs (sanitized values > 0).
func valueChunks(size int64, vs []float64) []int64 {
	ks := make([]int64, 0, len(vs))
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			ks = append(ks, estimate.ChunkOf(v, size))
		}
	}
	return ks
}

// mleKeys returns each value's MLE frequency (estimate.MLEFrequency) and
// MLE contribution under identity, from the chunks.
func (s *Service) mleKeys(ctx context.Context, t *sanitize.Table, values []float64) (freq, contrib []float64, err error) {
	sets, err := s.chunkSets(ctx, t, []estimate.G{identityG, countG}, valueChunks(estimate.ChunkSize(t.Privacy()), values))
	if err != nil {
		return nil, nil, err
	}
	freq, contrib = make([]float64, len(values)), make([]float64, len(values))
	for i, v := range values {
		if freq[i], err = estimate.MLEFrequency(sets[0], sets[1], v); err != nil {
			return nil, nil, estimateErr(err)
		}
		if contrib[i], err = sets[0].Estimate(v); err != nil {
			return nil, nil, estimateErr(err)
		}
	}
	return freq, contrib, nil
}
