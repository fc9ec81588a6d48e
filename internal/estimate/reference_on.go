//go:build pwsd_reference

package estimate

// referenceOnly: built with the tag pwsd_reference, every answer comes from
// the reference builders (see reference_off.go).
const referenceOnly = true

// ReferenceOnly: see reference_off.go.
const ReferenceOnly = referenceOnly
