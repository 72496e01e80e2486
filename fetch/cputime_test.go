package fetch

import "github.com/layercrawl/layercrawl/internal/procs"

// processCPU returns the user+system CPU time of the process in
// nanoseconds, or -1 where it cannot be read: benchmarks report CPU per
// operation beside wall time, which the shared machine inflates.
func processCPU() int64 {
	d, err := procs.CPUTime()
	if err != nil {
		return -1
	}
	return int64(d)
}
