package service

import (
	"context"
	"math"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/store"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// MLE answers of frequencies releases come from estimate.Chunks: the MLE
// estimator table cut into stretches of ChunkSize frequencies, each built
// from the sanitizer rows near it (rows by restart make those cheap at any
// frequency) and kept in memory and in the store under its canonical
// parameters, so a parameter set released every day never computes a chunk
// twice. A release needs the chunks holding its values and, for error bars,
// those holding its keys' MLE frequencies (about L above the values).

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

// nextReleaseChunks returns the chunks that the next release of keys of
// MLE frequencies freq under p reads: those holding values anywhere in
// the support of each key's row, and its MLE frequency. A row's support
// spans about 2L below its frequency (at most 2.15 L on the test grid)
// and the key's true frequency lies near its MLE one, so the chunks from
// 2.4 L below the MLE frequency to 0.3 L above it (TestNextReleaseChunks:
// the next release of the same keys then builds at most one run).
// Public: sanitized output only.
func nextReleaseChunks(p sanitize.Privacy, freq []float64) []int64 {
	size := estimate.ChunkSize(p)
	l := sanitize.L(p)
	var ks []int64
	for _, f := range freq {
		i := float64(statsFrequency(f))
		for k := estimate.ChunkOf(max(1, i-2.4*l), size); k <= estimate.ChunkOf(i+0.3*l, size); k++ {
			ks = append(ks, k)
		}
	}
	return ks
}

// statsFrequency returns the frequency at which the statistics of an MLE
// frequency estimate f are read: f rounded and at least 1, as
// estimate.SumWithErrorAt reads them.
func statsFrequency(f float64) int64 { return max(int64(math.Round(f)), 1) }

// frequencyChunkSets returns the identity and count MLE chunk sets holding
// values: a value's MLE frequency is the ratio of the two
// (estimate.MLEFrequency), its contribution the identity one. Their chunks
// may hold estimates only (chunkSetsOf). With release, the chunks built
// for them also collect the statistics at the values' MLE frequencies
// (tablecache.Read.StatsAt), which the release's first estimate reads.
func (s *deps) frequencyChunkSets(ctx context.Context, t *sanitize.Table, values []float64, release bool) (identity, count *estimate.ChunkSet, err error) {
	r := tablecache.Read{EstimatesOnly: true}
	if release {
		r.StatsAt = values
	}
	sets, err := s.chunkSetsRead(ctx, t, []estimate.G{identityG, countG}, valueChunks(estimate.ChunkSize(t.Privacy()), values), r)
	if err != nil {
		return nil, nil, err
	}
	return sets[0], sets[1], nil
}

// mleKeys returns each value's MLE frequency (estimate.MLEFrequency) and
// MLE contribution under identity, from the chunks (frequencyChunkSets,
// release as there).
func (s *deps) mleKeys(ctx context.Context, t *sanitize.Table, values []float64, release bool) (freq, contrib []float64, err error) {
	id, ct, err := s.frequencyChunkSets(ctx, t, values, release)
	if err != nil {
		return nil, nil, err
	}
	freq, contrib = make([]float64, len(values)), make([]float64, len(values))
	for i, v := range values {
		if freq[i], err = estimate.MLEFrequency(id, ct, v); err != nil {
			return nil, nil, estimateErr(err)
		}
		if contrib[i], err = id.Estimate(v); err != nil {
			return nil, nil, estimateErr(err)
		}
	}
	return freq, contrib, nil
}

// elementValues returns the sanitized values of els.
func elementValues(els []store.Element) []float64 {
	values := make([]float64, len(els))
	for i, el := range els {
		values[i] = el.Value
	}
	return values
}

// Prebuild builds, ahead of a scheduled release under spec, the MLE
// chunks (identity and count, what every frequencies release reads) that
// cover the frequencies up to maxFrequency, and keeps them in memory and in
// the store, and stores the parameters' kept sanitizer rows (tablecache,
// kept.go): the release then reads them instead of computing them. Chunks
// already cached are not built again. The work is bounded like a table
// request's (checkWorkOf, 422 naming max_frequency).
func (s *Tables) Prebuild(ctx context.Context, spec SampleSpec, maxFrequency int64) (Prebuilt, error) {
	if maxFrequency < 1 || maxFrequency > sanitize.MaxFrequency {
		return Prebuilt{}, fieldErr("max_frequency", "must be between 1 and %d", sanitize.MaxFrequency)
	}
	t, err := s.sanitizer(spec)
	if err != nil {
		return Prebuilt{}, err
	}
	size := estimate.ChunkSize(spec.Privacy)
	n := estimate.ChunkOf(float64(maxFrequency), size) + 1
	work := func(_, top int64) (float64, float64) {
		w, window := releaseWork(spec.Privacy, true)
		runs := float64(top)/float64(size)/float64(estimate.MaxChunkRun(spec.Privacy, size)) + 1
		return w*runs + window*float64(top), window
	}
	if err := s.checkWorkOf(ctx, work, n*size, n*size, "privacy.epsilon", "max_frequency"); err != nil {
		return Prebuilt{}, err
	}
	built, err := s.cache.Prebuild(ctx, t, []estimate.G{identityG, countG}, maxFrequency)
	if err != nil {
		return Prebuilt{}, estimateErr(err)
	}
	return built, nil
}
