package buildinfo

import (
	"fmt"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want Info
		line string
	}{
		{"source build outside git", debug.BuildInfo{GoVersion: "go1.26.8"},
			Info{Version: "(devel)", Commit: "unknown", GoVersion: "go1.26.8"}, "pwsd (devel) commit unknown go1.26.8"},
		{"checkout with changes", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-11-27T12:00:00Z"}}},
			Info{Version: "v1.2.3", Commit: "abc123", Modified: true, Time: "2026-11-27T12:00:00Z", GoVersion: "go1.26.8"},
			"pwsd v1.2.3 commit abc123 (modified) 2026-11-27T12:00:00Z go1.26.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := fromBuildInfo(&tc.bi)
			if got != tc.want || got.String() != tc.line {
				t.Errorf("got %+v %q, want %+v %q", got, got.String(), tc.want, tc.line)
			}
		})
	}
}

// ExampleRead prints what every build knows: its Go version is set.
func ExampleRead() {
	fmt.Println(Read().GoVersion != "")
	// Output: true
}
