package mlbf

import (
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

// adviseHugePages asks Linux to back the 2 MiB-aligned interior of a large
// bit array with transparent huge pages (MADV_HUGEPAGE; it matters where
// THP is in "madvise" mode). Random probes into a big filter otherwise
// miss the TLB on almost every access. It is only advice: failure is
// ignored and the bits are unaffected.
func adviseHugePages(w []uint64) {
	if len(w)*8 < 2*hugePage {
		return
	}
	p := uintptr(unsafe.Pointer(&w[0]))
	skip := ((hugePage - p%hugePage) % hugePage) / 8
	n := (uintptr(len(w)) - skip) * 8 / hugePage * hugePage
	if n == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[skip])), n)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
