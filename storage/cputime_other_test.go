//go:build !unix

package storage

// processCPU is unavailable on this platform.
func processCPU() int64 { return -1 }
