// Package service is pwsd's application layer: it validates requests as
// domain parameters, runs the sanitizers, estimators and pan-private
// mechanisms, caches data-independent tables and persists only what may be
// kept. It knows nothing about HTTP; package api translates for it.
//
// A Service is built from a Config: the store, the logger, the noise source,
// the generator factory and the limits. Samples are sanitized element by
// element as they stream in and only the sanitized output is stored;
// estimates are answered from cached estimator tables (package estimate);
// streams and counters load their pan-private state, apply a batch and store
// the new state. A release that names a dataset is charged to its privacy
// budget in the same store operation that keeps the release.
// Errors are typed (FieldError, ValidationError, LimitError, NotFoundError,
// BudgetError) so the HTTP layer can map each to its status. Raw samples,
// raw frequencies and raw user ids never reach storage, logs or errors.
package service
