//go:build !linux

package hugepages

import "unsafe"

// supported: this platform cannot be asked for huge pages.
const supported = false

// advise does nothing where transparent huge pages cannot be requested.
func advise(unsafe.Pointer, uintptr) {}
