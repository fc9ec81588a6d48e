package hugepages

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// childEnv marks the fresh process TestAdviseHeap checks in.
const childEnv = "PWSD_HUGEPAGES_HEAP_CHILD"

// TestAdviseHeap checks AdviseHeap's guarantee on Linux: memory the heap
// grows into afterwards, allocated by a plain make, is marked for huge pages
// (VmFlags "hg"), while the same make before it is not. It runs in a fresh
// process (this test binary again), whose heap no earlier test has grown.
func TestAdviseHeap(t *testing.T) {
	if got := AdviseHeap(MinBytes - 1); got != 0 {
		t.Errorf("AdviseHeap(MinBytes-1) = %d, want 0 (nothing advised)", got)
	}
	if runtime.GOOS != "linux" {
		if got := AdviseHeap(64 << 20); got != 0 {
			t.Errorf("AdviseHeap on %s = %d, want 0", runtime.GOOS, got)
		}
		return
	}
	if os.Getenv(childEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdviseHeap$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the fresh process failed: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "--- SKIP") {
			t.Skipf("the fresh process skipped:\n%s", out)
		}
		return
	}
	const size = 32 << 20
	before := make([]byte, size)
	flags, ok := vmFlags(t, uintptr(unsafe.Pointer(&before[size/2])))
	if !ok {
		t.Skip("this kernel does not report VmFlags")
	}
	if strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("a plain make before AdviseHeap is already advised (VmFlags %q): nothing to check", flags)
	}
	const reserve = 4 * size
	if got := AdviseHeap(reserve); got < reserve-hugePage {
		t.Fatalf("AdviseHeap(%d) advised %d bytes, want at least %d", reserve, got, reserve-hugePage)
	}
	after := make([]byte, size)
	flags, _ = vmFlags(t, uintptr(unsafe.Pointer(&after[size/2])))
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("VmFlags of a plain make after AdviseHeap = %q, want hg (MADV_HUGEPAGE)", flags)
	}
	runtime.KeepAlive(before)
	runtime.KeepAlive(after)
}
