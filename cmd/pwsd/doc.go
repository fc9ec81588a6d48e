// Command pwsd serves the pwsd HTTP API: differentially private weighted
// samples (Private Weighted Sampling), estimates of linear and ordinal
// statistics from them, pan-private streaming estimators and counters under
// continual observation, and the planner.
//
// Usage:
//
//	pwsd                    serve on PWSD_ADDR until SIGINT or SIGTERM
//	pwsd figures [--out D]  regenerate the paper's figures as SVG files in D
//	pwsd --version          print the build's version
//	pwsd --help             list every environment variable with its default
//
// The server is configured only by PWSD_* environment variables (listed by
// `pwsd --help` and in README.md): with PWSD_DATABASE_URL unset it keeps
// everything in memory, otherwise it applies the PostgreSQL migrations at
// start-up and persists there. On a signal it stops accepting connections,
// lets in-flight requests finish within PWSD_SHUTDOWN_TIMEOUT and closes the
// store.
package main
