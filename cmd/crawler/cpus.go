package main

import "fmt"

// cpusUsage is --cpus's help.
const cpusUsage = "most threads running the crawl's Go code at once (GOMAXPROCS). 0: Go's default (the machine's cores or the container's CPU limit, or the GOMAXPROCS environment variable when set). N: that many. -1: the same as 0, kept for older configuration files"

// checkCPUs rejects a --cpus value that means nothing.
func checkCPUs(n int) error {
	if n < -1 {
		return fmt.Errorf("%w: --cpus %d: want a count of threads, or 0 for Go's default", errUsage, n)
	}
	return nil
}

// startCPUs applies --cpus n through set (runtime.GOMAXPROCS in the
// binary; nil when tests run the command in the test's process, whose
// setting is left alone). It returns a function that restores the setting
// it found. With n of 0 or -1 it changes nothing: Go's runtime already
// follows the machine's cores and a container's CPU limit.
func startCPUs(n int, set func(int) int) (restore func()) {
	if set == nil || n <= 0 {
		return func() {}
	}
	before := set(n)
	return func() { set(before) }
}
