//go:build !linux

package hugepages

import "unsafe"

// advise does nothing where transparent huge pages cannot be requested.
func advise(unsafe.Pointer, uintptr) {}
