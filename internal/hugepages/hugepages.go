package hugepages

import "unsafe"

// MinBytes is the capacity, in bytes, from which Make asks for huge pages;
// smaller slices rarely span a whole 2 MB page.
const MinBytes = 4 << 20

// hugePage is the size of a transparent huge page on the platforms that
// advise (2 MB on amd64 and arm64 Linux).
const hugePage = 2 << 20

// Make returns make([]T, n, c) (c >= n) and, when the capacity is at least
// MinBytes, asks the kernel to back the whole huge pages inside it with
// huge pages. T must contain no pointers. The hint helps pages not yet
// written, which is what a large pointer-free allocation usually gets
// (memory the runtime reuses is already backed and stays as it is).
func Make[T any](n, c int) []T {
	s := make([]T, n, c)
	var zero T
	if size := uintptr(c) * unsafe.Sizeof(zero); size >= MinBytes {
		adviseInside(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}

// adviseInside asks for huge pages on the whole huge pages inside
// [p, p+size) and returns their bytes.
func adviseInside(p unsafe.Pointer, size uintptr) int {
	start := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + size) &^ (hugePage - 1)
	if end <= start {
		return 0
	}
	advise(unsafe.Add(p, start-uintptr(p)), end-start)
	return int(end - start)
}
