package hugepages

import (
	"runtime"
	"runtime/debug"
	"unsafe"
)

// DefaultHeapBytes is how much of the Go heap's address space pwsd advises
// for huge pages when it starts (PWSD_HUGEPAGE_HEAP_BYTES): 1 GiB, the
// default memory limit, so the whole heap a default pwsd grows to lies in
// the advised range.
const DefaultHeapBytes = 1 << 30

// AdviseHeap extends the Go heap by size bytes of address space and asks
// the kernel to back it with transparent huge pages when it is first
// written. It returns the bytes advised: 0 where the platform cannot ask
// (not Linux) or size is under MinBytes, in which case it does nothing.
//
// It allocates one pointer-free slice of size bytes, which the runtime maps
// fresh and does not write, advises the whole huge pages inside it, and lets
// it go: a forced collection and debug.FreeOSMemory return it to the
// runtime as released memory (no resident page, nothing against the memory
// limit). The runtime hands out heap pages from the lowest free address and
// never maps heap memory twice, so the heap the process grows to afterwards,
// up to about size, lies in the advised range and takes one page fault per
// 2 MB instead of one per 4 KB (docs/performance.md, "A fresh process's
// heap"). Call it once, first thing at start-up, before SetMemoryLimit.
func AdviseHeap(size int) int {
	if !supported || size < MinBytes {
		return 0
	}
	b := make([]byte, size)
	n := adviseInside(unsafe.Pointer(unsafe.SliceData(b)), uintptr(size))
	runtime.KeepAlive(b) // advised before the collection below may free it
	debug.FreeOSMemory()
	return n
}
