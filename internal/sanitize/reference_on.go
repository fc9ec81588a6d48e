//go:build pwsd_reference

package sanitize

// referenceOnly: built with the tag pwsd_reference, the draws take their
// plain references (see reference_off.go).
const referenceOnly = true
