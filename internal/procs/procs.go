// Package procs reads the CPU time the process has used, for benchmarks
// that report CPU per page or per record beside wall time.
package procs

import "errors"

// ErrUnsupported is returned by CPUTime where the process's CPU time
// cannot be read.
var ErrUnsupported = errors.New("procs: the process's CPU time cannot be read on this system")
