package service

import (
	"context"
	"errors"

	"github.com/pwsd/pwsd/internal/estimate"
	"github.com/pwsd/pwsd/internal/sanitize"
	"github.com/pwsd/pwsd/internal/tablecache"
)

// tableCache is what the service needs of the table cache (package
// tablecache): the sanitizer, estimator and chunk tables derived from
// public parameters, kept in memory and in the store.
type tableCache interface {
	Key(kind string, p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method, parts ...tablecache.Part) string
	Sanitizer(p sanitize.Privacy, smp sanitize.Sampling, m sanitize.Method) (*sanitize.Table, error)
	JSON(ctx context.Context, key string, into func() any, compute func(context.Context) (any, error)) (any, error)
	Estimator(ctx context.Context, t *sanitize.Table, spec estimate.Spec) (*estimate.Table, error)
	ChunkSets(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64, r tablecache.Read) ([]*estimate.ChunkSet, error)
	Prefetch(t *sanitize.Table, gs []estimate.G, ks []int64)
	StoreAnchors(t *sanitize.Table, places []int64)
	Busy() (done func())
	StatsAt(t *sanitize.Table, g estimate.G, is []int64) map[int64]estimate.FrequencyStats
	Prebuild(ctx context.Context, t *sanitize.Table, gs []estimate.G, maxFrequency int64) (tablecache.Prebuilt, error)
	Computed() int64
	Wait()
	StopOptional()
}

// WarmingError says a request was not served because what it reads is being
// computed in the background (the API's 503 with Retry-After).
type WarmingError = tablecache.WarmingError

// Prebuilt says what Tables.Prebuild found and built.
type Prebuilt = tablecache.Prebuilt

// cached is cachedCtx for a computation that does not take a context.
func cached[T any](ctx context.Context, s *deps, key string, compute func() (T, error)) (T, error) {
	return cachedCtx(ctx, s, key, func(context.Context) (T, error) { return compute() })
}

// cachedCtx returns the JSON table stored under key (built by the cache's
// Key), or computes it, stores it and returns it (tableCache.JSON). Tables
// are pure functions of their canonical key (which carries the algorithm
// version), so identical parameters never recompute, across requests,
// restarts and replicas sharing a database (tablecache.JSONOf).
func cachedCtx[T any](ctx context.Context, s *deps, key string, compute func(context.Context) (T, error)) (T, error) {
	return tablecache.JSONOf(ctx, s.cache, key, compute)
}

// sanitizer returns the sanitizer table of spec's parameters.
func (s *deps) sanitizer(spec SampleSpec) (*sanitize.Table, error) {
	return s.cache.Sanitizer(spec.Privacy, spec.Sampling, spec.Method)
}

// estimatorTable returns the estimator table of spec over t
// (tableCache.Estimator), its errors mapped to field errors (gErr,
// estimateErr).
func (s *deps) estimatorTable(ctx context.Context, t *sanitize.Table, spec estimate.Spec) (*estimate.Table, error) {
	et, err := s.cache.Estimator(ctx, t, spec)
	if err != nil {
		return nil, gErr(estimateErr(err), spec.G, spec.MaxFrequency)
	}
	return et, nil
}

// chunkSets is chunkSetsOf for chunks with their statistics.
func (s *deps) chunkSets(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64) ([]*estimate.ChunkSet, error) {
	return s.chunkSetsOf(ctx, t, gs, ks, false)
}

// chunkSetsOf returns, for each g, the MLE chunk set over t holding the
// chunks ks (tableCache.ChunkSets; with estimatesOnly the chunks may hold
// their tokens and estimates alone). A request of its own work bound (a
// reader's, WithWorkLimit) builds at most that much: above it the chunks
// are built in the background and the request gets a *WarmingError (503
// with Retry-After). Requests without a bound of their own (writers) build
// what they need, as the release they made was admitted.
func (s *deps) chunkSetsOf(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64, estimatesOnly bool) ([]*estimate.ChunkSet, error) {
	return s.chunkSetsRead(ctx, t, gs, ks, tablecache.Read{EstimatesOnly: estimatesOnly})
}

// chunkSetsRead is chunkSetsOf for a read of more options than
// EstimatesOnly (its MaxWork and Setting are the request's own).
func (s *deps) chunkSetsRead(ctx context.Context, t *sanitize.Table, gs []estimate.G, ks []int64, r tablecache.Read) ([]*estimate.ChunkSet, error) {
	if own, ok := ctx.Value(workBoundKey{}).(workBound); ok {
		r.MaxWork, r.Setting = own.cells, own.setting
	}
	sets, err := s.cache.ChunkSets(ctx, t, gs, ks, r)
	if err != nil {
		if warming := (*WarmingError)(nil); errors.As(err, &warming) {
			return nil, err
		}
		return nil, estimateErr(err)
	}
	return sets, nil
}
