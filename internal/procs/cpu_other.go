//go:build !unix

package procs

import "time"

func processCPUTime() (time.Duration, error) { return 0, ErrUnsupported }
