//go:build unix

package procs

import (
	"fmt"
	"syscall"
	"time"
)

// processCPUTime is the user and system time of every thread of the
// process so far.
func processCPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procs: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
