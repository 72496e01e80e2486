//go:build !linux

package mlbf

import "time"

var processStart = time.Now()

// threadCPU falls back to wall time where the thread CPU clock is not wired.
func threadCPU() time.Duration { return time.Since(processStart) }
