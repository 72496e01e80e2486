package main

import (
	"cmp"
	"slices"
	"time"
)

// Ideal is the least wall time of a crawl that makes the requests in
// stats with at most one request in flight per host and at most
// concurrency in flight in all: each host's answers back to back on one
// kept-alive connection (HostStats.Wire), hosts run in parallel on
// concurrency slots, longest first. With delay > 0, a host also waits
// delay between two of its requests, while its slot serves other hosts,
// and the bound is the longer of that schedule and the slowest host's
// requests with their delays.
//
// The longest-first schedule is within 4/3 of the optimal makespan
// (Graham 1969); with many more hosts than slots, as here, it is close to
// the load bound sum/concurrency, which Ideal never goes below.
func Ideal(stats map[string]HostStats, concurrency int, delay time.Duration) time.Duration {
	if concurrency < 1 {
		concurrency = 1
	}
	wires := make([]time.Duration, 0, len(stats))
	var slowest time.Duration
	for _, s := range stats {
		if s.Requests == 0 {
			continue
		}
		wires = append(wires, s.Wire)
		if delay > 0 {
			slowest = max(slowest, s.Wire+time.Duration(s.Requests-1)*delay)
		}
	}
	return max(makespan(wires, concurrency), slowest)
}

// makespan schedules jobs longest first, each on the slot that frees
// first, and returns when the last one ends.
func makespan(jobs []time.Duration, slots int) time.Duration {
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	ends := make([]time.Duration, min(slots, max(len(jobs), 1)))
	var end time.Duration
	for _, j := range jobs {
		i := slices.Index(ends, slices.Min(ends))
		ends[i] += j
		end = max(end, ends[i])
	}
	return end
}
