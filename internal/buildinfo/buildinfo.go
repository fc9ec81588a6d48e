// Package buildinfo says which pwsd is running: its module version, the VCS
// commit it was built from and the Go version, read from the binary's own
// build information (Go stamps the commit when it builds inside a git
// checkout: the container image builds with the repository's .git in its
// context for that reason, see Dockerfile). GET /version, pwsd_build_info in
// /metrics and `pwsd --version` all show this one Info.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info describes a build. Unknown parts are "unknown" (the commit of a
// build outside a git checkout) or "(devel)" (the version of a source build).
type Info struct {
	Version   string `json:"version" example:"(devel)"`                                 // module version, "(devel)" for a source build
	Commit    string `json:"commit" example:"9ca3bec6c0f1e2d3a4b5c6d7e8f9a0b1c2d3e4f5"` // VCS revision, "unknown" outside a checkout
	Modified  bool   `json:"modified"`                                                  // built from a tree with uncommitted changes
	Time      string `json:"commit_time,omitempty" example:"2026-11-27T12:00:00Z"`      // the commit's time (RFC 3339), when known
	GoVersion string `json:"go_version" example:"go1.26.8"`                             // the Go toolchain
} //	@name	BuildInfo

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown", Commit: "unknown", GoVersion: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Commit: "unknown", GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "vcs.time":
			in.Time = s.Value
		}
	}
	return in
}

// String is the one-line form `pwsd --version` prints.
func (in Info) String() string {
	modified, when := "", ""
	if in.Modified {
		modified = " (modified)"
	}
	if in.Time != "" {
		when = " " + in.Time
	}
	return fmt.Sprintf("pwsd %s commit %s%s%s %s", in.Version, in.Commit, modified, when, in.GoVersion)
}
