// Command machineprobe prints what a few operations cost on this machine:
// a null system call, a page fault on fresh anonymous memory, a hand-off
// between two threads through pipes, and SHA-1 over memory. The crawl
// benchmarks (docs/bench-realsites.sh) print its line first, so that
// figures taken on different virtual machines can be told apart: the
// kernel's share of a crawl (sockets, page faults, thread wake-ups) varies
// with the kernel's mitigations and the hypervisor far more than Go code's.
//
// Each figure is the median of five rounds.
package main

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
)

const rounds = 5

func main() {
	sys, err1 := median(nullSyscall)
	fault, err2 := median(pageFault)
	handoff, err3 := median(threadHandoff)
	sha, err4 := median(sha1Pass)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintln(os.Stderr, "machineprobe:", err)
		os.Exit(1)
	}
	fmt.Printf("machine: null syscall %.2f us, page fault %.2f us, thread hand-off %.2f us, SHA-1 %.0f MB/s\n",
		us(sys), us(fault), us(handoff), float64(shaBytes)/sha.Seconds()/1e6)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// median runs f rounds times; f returns the time of one operation.
func median(f func() (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	for range rounds {
		d, err := f()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// nullSyscall times getppid, which does nothing but enter and leave the
// kernel.
func nullSyscall() (time.Duration, error) {
	const n = 200_000
	start := time.Now()
	for range n {
		syscall.Getppid()
	}
	return time.Since(start) / n, nil
}

// pageFault maps 32 MiB of anonymous memory and writes one byte in each
// 4 KiB page: one fault each, the kernel zeroing the page.
func pageFault() (time.Duration, error) {
	const size, page = 32 << 20, 4 << 10
	m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0, fmt.Errorf("mmap: %w", err)
	}
	// Transparent huge pages would fault 2 MiB at a time.
	_ = syscall.Madvise(m, syscall.MADV_NOHUGEPAGE)
	start := time.Now()
	for i := 0; i < size; i += page {
		m[i] = 1
	}
	d := time.Since(start)
	if err := syscall.Munmap(m); err != nil {
		return 0, fmt.Errorf("munmap: %w", err)
	}
	return d / (size / page), nil
}

// threadHandoff passes a byte back and forth between two OS threads over
// blocking pipes, and returns the time of one pass: a write, a wake-up of
// the blocked reader and its read.
func threadHandoff() (time.Duration, error) {
	var ab, ba [2]int
	if err := syscall.Pipe(ab[:]); err != nil {
		return 0, fmt.Errorf("pipe: %w", err)
	}
	if err := syscall.Pipe(ba[:]); err != nil {
		return 0, fmt.Errorf("pipe: %w", err)
	}
	defer func() {
		for _, fd := range []int{ab[0], ab[1], ba[0], ba[1]} {
			syscall.Close(fd)
		}
	}()
	const n = 20_000
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		b := make([]byte, 1)
		for range n {
			if _, err := syscall.Read(ab[0], b); err != nil {
				done <- err
				return
			}
			if _, err := syscall.Write(ba[1], b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := make([]byte, 1)
	start := time.Now()
	for range n {
		if _, err := syscall.Write(ab[1], b); err != nil {
			return 0, fmt.Errorf("write: %w", err)
		}
		if _, err := syscall.Read(ba[0], b); err != nil {
			return 0, fmt.Errorf("read: %w", err)
		}
	}
	d := time.Since(start)
	if err := <-done; err != nil {
		return 0, fmt.Errorf("echo: %w", err)
	}
	return d / (2 * n), nil
}

const shaBytes = 64 << 20

var shaBuf = make([]byte, 1<<20)

// sha1Pass hashes shaBytes of memory that stays in the cache, a pure
// computation, and returns the time of the whole pass.
func sha1Pass() (time.Duration, error) {
	h := sha1.New()
	start := time.Now()
	for range shaBytes / len(shaBuf) {
		h.Write(shaBuf)
	}
	h.Sum(nil)
	return time.Since(start), nil
}
