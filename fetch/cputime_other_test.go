//go:build !unix

package fetch

// processCPU is unavailable on this platform.
func processCPU() int64 { return -1 }
