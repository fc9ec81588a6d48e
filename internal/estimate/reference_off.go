//go:build !pwsd_reference

package estimate

// referenceOnly is set by the build tag pwsd_reference (reference_on.go):
// Open then skips every fast row of its decision table, the dense MLE loop
// is denseMLERef (no copy shortcut) and rows are read in line, so that
// every answer is the reference builders' (docs/estimator-builders.md). Without the tag the fast builders
// run where the decision table picks them.
const referenceOnly = false

// ReferenceOnly reports whether the package was built with the tag
// pwsd_reference (referenceOnly): tests of other packages that check a fast
// builder's own traits (estimates-only chunks without statistics) read it.
const ReferenceOnly = referenceOnly
