//go:build unix

package procs

import (
	"fmt"
	"syscall"
	"time"
)

// CPUTime returns the user and system CPU time of every thread of the
// process so far (getrusage). Where it cannot be read it returns
// ErrUnsupported.
func CPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procs: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
