//go:build !pwsd_reference

package sanitize

// referenceOnly is set by the build tag pwsd_reference (reference_on.go):
// the draws' fast paths are then replaced by their plain references:
// DrawAll by drawAllRef (Draw for each key in ascending order of
// frequency), Drawer.Draw by Table.Draw, and Drawer.Prepare computes
// nothing ahead, samplerOf by samplerOfPlain, scaleRun (the
// rows' runs of whole pieces) by scaleRunPlain, build5 by build5Plain and
// locateTail by locateTailPlain. Each pair is tested bit for bit
// (TestDrawAllMatchesDraw, TestDrawerMatchesDraw,
// TestDrawerPrepareMatchesDraw, TestSamplerOfMatchesPlain,
// TestScaleRunMatchesPlain, TestBuild5MatchesPlain,
// TestLocateTailMatchesPlain). Rows by restart
// are not a fast path of the chain from row 0 but rows of their own,
// verified at every junction (docs/algorithms.md): they stay.
const referenceOnly = false
