//go:build unix

package fetch

import "syscall"

// processCPU returns the user+system CPU time of the process in
// nanoseconds, or -1 when unavailable: on the shared machine, CPU time per
// operation is steadier than wall time (as in storage's benchmarks).
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
