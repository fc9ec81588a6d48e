// Package panprivate implements pan-private streaming estimators (Dwork,
// Naor, Pitassi, Rothblum and Yekhanin, "Pan-private streaming algorithms",
// 2010; Digalakis, Karystinos and Garofalakis, "Improved pan-private stream
// density estimation") and counters under continual observation.
//
// A stream estimator reads events (a user id, optionally a deletion), keeps
// only a small randomized state for a random sample M of users, and releases
// Laplace-noised estimates. Privacy is user-level and covers the state
// itself: the state at any single unannounced intrusion, together with the
// releases, is differentially private. Announced intrusions return the state
// and then re-randomize it. The raw stream is never stored.
//
// New builds an Estimator of a Kind (density, cropped mean, heavy hitters,
// incidence, ...) from a Config; the kinds are registered in kind.go
// (docs/estimator-kinds.md says how to add one). ContinualDensity releases
// the density at every step under continual observation; NewCounter builds
// a Counter of 0/1 inputs under continual observation (simple, tree or
// cascading, optionally made monotone). Every state encodes to bytes and decodes back
// (Unmarshal, UnmarshalContinualDensity, UnmarshalCounter) so the service can
// persist it between requests. The analyses behind the algorithms, the
// sample-size bounds and what a release costs are in docs/algorithms.md.
package panprivate
