package hugepages

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// supported: Linux can be asked for transparent huge pages.
const supported = true

// advise asks for huge pages on [p, p+size), both aligned to hugePage. An
// error (an old kernel, huge pages disabled) leaves the memory as it is.
func advise(p unsafe.Pointer, size uintptr) {
	_ = unix.Madvise(unsafe.Slice((*byte)(p), size), unix.MADV_HUGEPAGE)
}
