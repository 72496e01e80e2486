package crawl

import (
	"sync/atomic"
	"time"
)

// doneBuckets are the upper bounds of the buckets of Stats.Done: from a
// frontier update that finds every link seen to one that waited out a
// checkpoint or a slow disk. An array, so that the histogram's counters
// are sized from it when the package compiles.
var doneBuckets = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 10 * time.Second,
}

// DoneBuckets returns the upper bounds of the buckets of Stats.Done, in
// increasing order; the slice is the caller's own copy.
func DoneBuckets() []time.Duration {
	b := doneBuckets // a copy of the array
	return b[:]
}

// LatencyStats is a histogram of durations.
type LatencyStats struct {
	Count uint64
	Sum   time.Duration
	// Max is the longest duration observed.
	Max time.Duration
	// Buckets[i] counts the durations at most DoneBuckets()[i] (cumulative,
	// as in Prometheus); Count includes those above the last bound.
	Buckets []uint64
}

// latency is a lock-free histogram over doneBuckets: an observation costs
// a few atomic adds.
type latency struct {
	sum, max atomic.Uint64
	buckets  [len(doneBuckets) + 1]atomic.Uint64 // the last is +Inf
}

func (l *latency) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := 0
	for i < len(doneBuckets) && d > doneBuckets[i] {
		i++
	}
	l.buckets[i].Add(1)
	l.sum.Add(uint64(d))
	for {
		m := l.max.Load()
		if uint64(d) <= m || l.max.CompareAndSwap(m, uint64(d)) {
			return
		}
	}
}

func (l *latency) stats() LatencyStats {
	s := LatencyStats{Sum: time.Duration(l.sum.Load()), Max: time.Duration(l.max.Load()),
		Buckets: make([]uint64, len(doneBuckets))}
	var cum uint64
	for i := range s.Buckets {
		cum += l.buckets[i].Load()
		s.Buckets[i] = cum
	}
	// Counted from the buckets, so that a reader racing an observation
	// still sees Count >= every bucket.
	s.Count = cum + l.buckets[len(doneBuckets)].Load()
	return s
}
