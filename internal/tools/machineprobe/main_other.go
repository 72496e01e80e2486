//go:build !linux

// Command machineprobe measures system calls and page faults on Linux; on
// other systems it says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "machineprobe: Linux only")
	os.Exit(1)
}
