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
package panprivate
