package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: --version reports the module version, the commit and the Go
// version from the binary's build information.
func TestVersion(t *testing.T) {
	t.Parallel()
	v := version()
	for _, want := range []string{"pwsd ", " commit ", runtime.Version()} {
		if !strings.Contains(v, want) {
			t.Errorf("version %q lacks %q", v, want)
		}
	}
	if err := run([]string{"--version"}); err != nil {
		t.Errorf("pwsd --version: %v", err)
	}
}
