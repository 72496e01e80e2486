package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/layercrawl/layercrawl/internal/procs"
)

// cpusUsage is --cpus's help.
const cpusUsage = "most threads running the crawl's Go code at once (GOMAXPROCS). 0: one, doubled while the crawl keeps them all busy, up to the machine's cores, and lowered again when it does not (a crawl of remote sites seldom needs more than one core, and the threads' hand-offs cost CPU); unless the GOMAXPROCS environment variable is set, which then applies. N: that many. -1: the machine's cores throughout"

// checkCPUs rejects a --cpus value that means nothing.
func checkCPUs(n int) error {
	if n < -1 {
		return fmt.Errorf("%w: --cpus %d: want a count of threads, 0 (adapt to the crawl) or -1 (all cores)", errUsage, n)
	}
	return nil
}

// startCPUs applies --cpus n through set (runtime.GOMAXPROCS in the
// binary; nil when tests run the command in the test's process, whose
// setting is left alone). It returns a function that stops the adapting,
// if any, and restores the setting it found.
func startCPUs(ctx context.Context, n int, set func(int) int, log *slog.Logger) (stop func()) {
	switch {
	case set == nil || n == -1:
		return func() {}
	case n > 0:
		before := set(n)
		return func() { set(before) }
	case os.Getenv("GOMAXPROCS") != "":
		return func() {}
	}
	most := set(0) // reads the setting without changing it
	if most <= 1 {
		return func() {}
	}
	g := &procs.Governor{Max: most, Set: set, OnChange: func(p int, used float64) {
		log.Debug("threads running Go code changed", "gomaxprocs", p, "cores_used", used)
	}}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := g.Run(ctx); err != nil {
			log.Debug("--cpus 0: not adapting", "err", err)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
