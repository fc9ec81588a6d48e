package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestMake checks that Make is make: the length and capacity asked for and
// zeroed elements, below and above MinBytes.
func TestMake(t *testing.T) {
	type stats struct{ A, B float64 }
	for _, c := range []struct{ n, c int }{{0, 0}, {3, 10}, {MinBytes / 16, MinBytes / 16}, {5, 3 * MinBytes / 16}} {
		t.Run(fmt.Sprintf("n=%d,c=%d", c.n, c.c), func(t *testing.T) {
			s := Make[stats](c.n, c.c)
			if len(s) != c.n || cap(s) != c.c {
				t.Fatalf("len %d cap %d, want %d %d", len(s), cap(s), c.n, c.c)
			}
			s = s[:cap(s)]
			for i := range s {
				if s[i] != (stats{}) {
					t.Fatalf("element %d is %v, want zero", i, s[i])
				}
				s[i].A = float64(i)
			}
		})
	}
}

// TestMakeAdvisesHugePages checks, on Linux, that a large slice's memory is
// marked for huge pages (VmFlags "hg" in /proc/self/smaps) and a small
// one's is not asked for.
func TestMakeAdvisesHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are requested on Linux only")
	}
	big := Make[float64](0, 4*MinBytes/8)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(big))) + 2*hugePage // inside an aligned huge page
	flags, ok := vmFlags(t, addr)
	if !ok {
		t.Skip("this kernel does not report VmFlags")
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("VmFlags of a %d-byte slice = %q, want hg (MADV_HUGEPAGE)", 4*MinBytes, flags)
	}
	runtime.KeepAlive(big)
}

// vmFlags returns the VmFlags line of the mapping that holds addr.
func vmFlags(t *testing.T, addr uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(addr) >= a && uint64(addr) < b
				continue
			}
		}
		if in {
			if v, ok := strings.CutPrefix(line, "VmFlags:"); ok {
				return strings.TrimSpace(v), true
			}
		}
	}
	return "", false
}
