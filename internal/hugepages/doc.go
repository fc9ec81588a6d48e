// Package hugepages allocates large slices of plain data (numbers, structs
// of numbers) whose memory the kernel may back with transparent huge pages.
//
// The estimator tables are tens of megabytes written once, in order. On
// Linux each fresh 4 KB page costs a page fault when it is first written,
// and on virtual machines that fault is expensive (about 12 µs measured on
// the project's machine, so 0.25 s for 56 MB); asking for huge pages
// (madvise MADV_HUGEPAGE, honoured when
// /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise")
// makes it one fault per 2 MB. The hint changes nothing else: the slice is
// an ordinary Go slice, and where the kernel or the platform does not
// support the hint, Make is make (README, "Performance").
//
// AdviseHeap gives the same hint for the heap as a whole: called once when
// pwsd starts, it advises address space the Go heap then grows into, so a
// fresh process's first requests fault once per 2 MB too
// (docs/performance.md, "A fresh process's heap").
package hugepages
