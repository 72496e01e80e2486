// Package procs sets how many threads may run a crawl's Go code at once
// (GOMAXPROCS) from the CPU the crawl uses.
//
// A crawl of remote sites is rarely CPU-bound: it waits on the network and
// on politeness delays, and keeps less than a core busy. Go's runtime
// nevertheless runs one P per core, and each goroutine that becomes
// runnable while a P is idle wakes a thread to take it. Those hand-offs
// between threads cost CPU of their own, and on some virtual machines far
// more than on others (docs/BENCHMARKS.md measured 13-18 µs each on one).
// Where the crawl shares the machine with other busy processes, as when it
// crawls servers on the same machine, the threads also take cores those
// processes need.
//
// A Governor therefore starts the process with one P and doubles the count
// while the process keeps every P busy, up to a maximum; it takes one away
// when the process would keep the others busy without it. A CPU-bound crawl
// reaches the maximum within a few seconds; a crawl that needs less than a
// core stays on one.
package procs

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// Busy is the share of its Ps' capacity above which the process counts as
// CPU-bound, and below which, counted for one P fewer, it could do without
// one.
const Busy = 0.9

// ErrUnsupported is returned by Run where the process's CPU time cannot be
// read.
var ErrUnsupported = errors.New("procs: the process's CPU time cannot be read on this system")

// Governor adjusts GOMAXPROCS to a process's CPU use. The zero value is
// not ready: set Max.
type Governor struct {
	// Max is the most Ps it sets, at least 1; usually what GOMAXPROCS
	// was when the process started (the machine's cores, or its CPU quota).
	Max int
	// Interval is how often it reads the process's CPU time; 0 means one
	// second.
	Interval time.Duration
	// Set sets GOMAXPROCS and returns the previous setting; nil means
	// runtime.GOMAXPROCS.
	Set func(int) int
	// CPUTime returns the CPU time the process has used so far, user
	// and system; nil means the operating system's count (getrusage).
	CPUTime func() (time.Duration, error)
	// OnChange, when set, is called after each change, with the new
	// setting and the cores the process used in the interval that led to
	// it.
	OnChange func(procs int, used float64)

	procs int              // the current setting
	busy  bool             // the last interval counted as CPU-bound
	now   func() time.Time // time.Now, or a test's clock
}

// Run sets one P, then adjusts the setting every Interval until ctx ends,
// when it restores the setting it found. It returns ErrUnsupported, having
// changed nothing, where the CPU time cannot be read; otherwise nil.
func (g *Governor) Run(ctx context.Context) error {
	cpuTime := g.CPUTime
	if cpuTime == nil {
		cpuTime = CPUTime
	}
	set := g.Set
	if set == nil {
		set = runtime.GOMAXPROCS
	}
	interval := g.Interval
	if interval <= 0 {
		interval = time.Second
	}
	now := g.now
	if now == nil {
		now = time.Now
	}
	at := now()
	used, err := cpuTime()
	if err != nil {
		return err
	}
	g.procs, g.busy = 1, false
	before := set(g.procs)
	defer set(before)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		t1 := now()
		u, err := cpuTime()
		if err != nil {
			// The count was readable at the start: leave the setting
			// as it is and try again at the next tick.
			continue
		}
		cores := float64(u-used) / float64(t1.Sub(at))
		used, at = u, t1
		if p := g.step(cores); p != g.procs {
			g.procs = p
			set(p)
			if g.OnChange != nil {
				g.OnChange(p, cores)
			}
		}
	}
}

// step records the cores used in one interval and returns the setting for
// the next. The count doubles (up to Max) after two intervals in a row in
// which the process kept more than Busy of its Ps busy, so that a burst,
// as at start-up, does not raise it; it drops by one after an interval in
// which the process used less than Busy of one P fewer.
func (g *Governor) step(cores float64) int {
	p := g.procs
	busy := cores > Busy*float64(p)
	defer func() { g.busy = busy }()
	switch {
	case busy && g.busy && p < g.Max:
		return min(2*p, g.Max)
	case p > 1 && cores < Busy*float64(p-1):
		return p - 1
	}
	return p
}
