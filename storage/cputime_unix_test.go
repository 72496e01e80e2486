//go:build unix

package storage

import "syscall"

// processCPU returns the user+system CPU time of the process in
// nanoseconds, or -1 when unavailable. Benchmarks report CPU per operation
// next to wall time because the project's machine is shared, which inflates
// wall time but not the CPU a page costs.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
