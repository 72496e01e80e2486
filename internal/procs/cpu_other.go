//go:build !unix

package procs

import "time"

// CPUTime returns ErrUnsupported: the process's CPU time is read with
// getrusage, on Unix systems only.
func CPUTime() (time.Duration, error) { return 0, ErrUnsupported }
